package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// deps are the service's connections, built in order and closed in reverse.
type deps struct {
	rdb     redis.UniversalClient
	store   *booking.Store
	pub     *amqpx.Publisher
	kafka   *events.KafkaProducer
	admin   *service.Admin
	closers []func() error
}

func (d *deps) Close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		_ = d.closers[i]()
	}
}

// dial builds admin (for its registry), Redis and the booking store, the
// confirmed RabbitMQ publisher (which declares the topology) and the Kafka
// producer. On error everything built so far is closed.
func dial(ctx context.Context, c service.Common, delayedPlugin bool, log *zap.Logger) (d *deps, err error) {
	d = &deps{}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	d.admin = service.NewAdmin(c.AdminAddr, log, nil)
	if err := d.admin.Listen(); err != nil {
		return nil, err
	}
	d.rdb, err = service.NewRedis(c)
	if err != nil {
		return nil, err
	}
	d.closers = append(d.closers, d.rdb.Close)
	d.store = booking.New(d.rdb, booking.WithPrefix(c.RedisPrefix))
	if err := d.store.Load(ctx); err != nil {
		return nil, err
	}
	d.admin.AddCheck("redis", service.RedisCheck(d.rdb))

	am := amqpx.NewMetrics(d.admin.Registry())
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d.pub, err = amqpx.NewPublisher(cctx, c.AMQPURL, amqpx.WithLogger(log), amqpx.WithMetrics(am),
		amqpx.WithDelayedMessagePlugin(delayedPlugin), amqpx.WithPublishTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	d.closers = append(d.closers, d.pub.Close)
	d.admin.AddCheck("rabbitmq", tcpCheck(amqpHost(c.AMQPURL)))

	d.kafka, err = events.NewKafkaProducer(c.KafkaBrokers, events.WithClientID("boxoffice-"+name),
		events.WithRegisterer(d.admin.Registry()))
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	d.closers = append(d.closers, d.kafka.Close)
	d.admin.AddCheck("kafka", tcpCheck(c.KafkaBrokers...))
	return d, nil
}

func amqpHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5672")
	}
	return u.Host
}

// tcpCheck succeeds when any of addrs accepts a TCP connection.
func tcpCheck(addrs ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		var last error
		for _, a := range addrs {
			var dl net.Dialer
			conn, err := dl.DialContext(ctx, "tcp", a)
			if err == nil {
				return conn.Close()
			}
			last = err
		}
		return last
	}
}
