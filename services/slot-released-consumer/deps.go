package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// dial builds the dependencies in order: admin (for its registry), Redis
// and the booking store, the RabbitMQ publisher (which declares the
// topology), the consumer, the Kafka producer. On error everything built so
// far is closed.
func dial(ctx context.Context, c service.Common, delayedPlugin bool, log *zap.Logger) (d *deps, err error) {
	d = &deps{}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	d.admin = service.NewAdmin(c.AdminAddr, log, nil)
	// Listen now so a taken port fails the start, not a later goroutine.
	if err := d.admin.Listen(); err != nil {
		return nil, err
	}

	rdb, err := service.NewRedis(c)
	if err != nil {
		return nil, err
	}
	d.closers = append(d.closers, rdb.Close)
	d.store = booking.New(rdb, booking.WithPrefix(c.RedisPrefix))
	if err := d.store.Load(ctx); err != nil {
		return nil, err
	}
	d.admin.AddCheck("redis", service.RedisCheck(rdb))

	am := amqpx.NewMetrics(d.admin.Registry())
	opts := []amqpx.Option{amqpx.WithLogger(log), amqpx.WithMetrics(am), amqpx.WithDelayedMessagePlugin(delayedPlugin)}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d.pub, err = amqpx.NewPublisher(cctx, c.AMQPURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	d.closers = append(d.closers, d.pub.Close)
	d.consumer = amqpx.NewConsumer(c.AMQPURL, opts...)
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

// amqpHost returns host:port of an AMQP URL (default port 5672).
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

// tcpCheck is a readiness check that succeeds when any of addrs accepts a
// TCP connection: cheap enough for every probe, and what matters for a
// broker the clients reconnect to by themselves.
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
