// Package platform dials what a boxoffice service that changes bookings
// needs, in dependency order, each with its readiness check and metrics on
// the service's admin server: the admin listener itself (so a taken port
// fails the start), Redis and the booking store (scripts loaded), the
// confirmed RabbitMQ publisher (which declares the topology) and a
// consumer, the Kafka producer (acks=all), and the Announcer over them.
// Services that only read (the notifier, popularity) dial what they need
// themselves.
package platform

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// Deps are a service's connections, built in order and closed in reverse.
type Deps struct {
	Admin     *service.Admin
	Redis     redis.UniversalClient
	Store     *booking.Store
	Publisher *amqpx.Publisher
	// Consumer dials on Consume; services that consume nothing ignore it.
	Consumer  *amqpx.Consumer
	Kafka     *events.KafkaProducer
	Announcer *admission.Announcer
	// PassKeys are the admission pass keys (PASS_KEYS), Pass signs with the
	// current one (nil without keys).
	PassKeys pass.Keys
	Pass     *pass.Signer
	closers  []func() error
}

// Close closes everything Dial opened, in reverse order.
func (d *Deps) Close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		_ = d.closers[i]()
	}
}

// Dial builds a service's dependencies. name labels the Kafka client. On
// error everything built so far is closed.
func Dial(ctx context.Context, name string, c service.Common, log *zap.Logger) (*Deps, error) {
	d, err := dial(ctx, name, c, log)
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// dial builds into d and always returns it, so that Dial can close what
// was opened before an error.
func dial(ctx context.Context, name string, c service.Common, log *zap.Logger) (d *Deps, err error) {
	d = &Deps{}
	d.Admin = service.NewAdminFor(c, log, nil)
	if err := d.Admin.Listen(); err != nil {
		return d, err
	}
	d.closers = append(d.closers, d.Admin.Close)
	reg := d.Admin.Registry()

	d.Redis, err = service.NewRedis(c)
	if err != nil {
		return d, err
	}
	d.closers = append(d.closers, d.Redis.Close)
	d.Store = booking.New(d.Redis, booking.WithPrefix(c.RedisPrefix))
	d.closers = append(d.closers, func() error { d.Store.Close(); return nil })
	if err := d.Store.Load(ctx); err != nil {
		return d, err
	}
	d.Admin.AddCheck("redis", service.RedisCheck(d.Redis))

	opts := append([]amqpx.Option{amqpx.WithLogger(log), amqpx.WithMetrics(amqpx.NewMetrics(reg)),
		amqpx.WithPublishTimeout(10 * time.Second)}, amqpx.ConfigOptions(c)...)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d.Publisher, err = amqpx.NewPublisher(cctx, c.AMQPURL, opts...)
	if err != nil {
		return d, fmt.Errorf("rabbitmq: %w", err)
	}
	d.closers = append(d.closers, d.Publisher.Close)
	d.Consumer = amqpx.NewConsumer(c.AMQPURL, opts...)
	d.Admin.AddCheck("rabbitmq", service.TCPCheck(service.AMQPAddrs(c.AMQPURL)...))

	d.Kafka, err = events.NewKafkaProducer(c.KafkaBrokers, events.WithClientID("boxoffice-"+name),
		events.WithRegisterer(reg), events.WithClientConfig(events.ClientConfigFrom(c)),
		events.WithSource(events.SourceFor(c.Deployment())))
	if err != nil {
		return d, fmt.Errorf("kafka: %w", err)
	}
	d.closers = append(d.closers, d.Kafka.Close)
	d.Admin.AddCheck("kafka", service.TCPCheck(c.KafkaBrokers...))

	if d.PassKeys, err = pass.ParseKeys(c.PassKeys); err != nil {
		return d, fmt.Errorf("config: PASS_KEYS: %w", err)
	}
	d.Pass = pass.NewSigner(d.PassKeys, c.PassIssuer)
	d.Announcer = admission.New(d.Store, d.Publisher, d.Kafka, log,
		admission.WithMetrics(admission.NewMetrics(reg)), admission.WithPass(d.Pass))
	return d, nil
}
