// Package platform dials what a boxoffice service needs, in dependency
// order, each with its readiness check and metrics on the service's admin
// server: the admin listener itself (so a taken port fails the start),
// Redis and the booking store (scripts loaded), the confirmed RabbitMQ
// publisher (which declares the topology) and a consumer, the Kafka
// producer (acks=all), the Announcer over them, and the ledger when asked
// for ([Ledger]). A service that only
// reads (the notifier, popularity) names the parts it needs with
// [ReadOnly] and gets nothing that publishes. It also turns the shared
// configuration (service.Common) into the options of amqpx and events, so
// that neither depends on pkg/service.
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
	"github.com/boxoffice/boxoffice/pkg/ledger"
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
	// KafkaClient is the Kafka TLS, SASL, compression and topic prefix
	// settings (KAFKA_*), for consumer groups.
	KafkaClient events.ClientConfig
	// PassKeys are the admission pass keys (PASS_KEYS), Pass signs with the
	// current one (nil without keys).
	PassKeys pass.Keys
	Pass     *pass.Signer
	// Ledger is the PostgreSQL system of record, with [Ledger] only.
	Ledger *ledger.Ledger
	// Now is the process's clock: time.Now, or in a test build a clock set
	// off the host's (processSkew), which the Store's and the Announcer's
	// clocks are too. The booking decisions are Redis's clock's
	// (docs/booking-engine.md "One clock").
	Now     func() time.Time
	closers []func() error
}

// Close closes everything Dial opened, in reverse order.
func (d *Deps) Close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		_ = d.closers[i]()
	}
}

// Part is a dependency a read-only service can ask [ReadOnly] for.
type Part int

const (
	// Store is the booking store over Redis, its scripts loaded.
	Store Part = iota
	// RabbitMQ is the Consumer and the rabbitmq readiness check.
	RabbitMQ
	// Kafka is the kafka readiness check (consumer groups dial by
	// themselves, with KafkaClient).
	Kafka
)

// Option changes what Dial builds.
type Option func(*plan)

type plan struct {
	readOnly  bool
	parts     map[Part]bool
	ledgerURL string
}

func (p plan) has(part Part) bool { return !p.readOnly || p.parts[part] }

// ReadOnly makes Dial build the admin listener, Redis and only the parts
// named, and nothing that publishes: no Publisher, Kafka producer, pass
// signer or Announcer.
func ReadOnly(parts ...Part) Option {
	return func(p *plan) {
		p.readOnly = true
		for _, part := range parts {
			p.parts[part] = true
		}
	}
}

// Ledger makes Dial open the ledger at url (DATABASE_URL) last, as
// Deps.Ledger, with a postgres readiness check.
func Ledger(url string) Option { return func(p *plan) { p.ledgerURL = url } }

// Dial builds a service's dependencies: without options, everything a
// service that changes bookings needs. name labels the Kafka client. On
// error everything built so far is closed.
func Dial(ctx context.Context, name string, c service.Common, log *zap.Logger, opts ...Option) (*Deps, error) {
	p := plan{parts: map[Part]bool{}}
	for _, o := range opts {
		o(&p)
	}
	d, err := dial(ctx, name, c, log, p)
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// dial builds into d and always returns it, so that Dial can close what
// was opened before an error.
func dial(ctx context.Context, name string, c service.Common, log *zap.Logger, p plan) (d *Deps, err error) {
	d = &Deps{KafkaClient: KafkaClient(c), Now: time.Now}
	if skew := processSkew(); skew != 0 {
		d.Now = func() time.Time { return time.Now().Add(skew) }
		log.Warn("test build: this process's clock is set off the host's", zap.Duration("skew", skew))
	}
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
	if p.has(Store) {
		d.Store = booking.New(d.Redis, booking.WithPrefix(c.RedisPrefix), booking.WithProcessClock(d.Now))
		d.closers = append(d.closers, func() error { d.Store.Close(); return nil })
		if err := d.Store.Load(ctx); err != nil {
			return d, err
		}
	}
	d.Admin.AddCheck("redis", service.RedisCheck(d.Redis))

	if p.has(RabbitMQ) {
		opts := append([]amqpx.Option{amqpx.WithLogger(log), amqpx.WithMetrics(amqpx.NewMetrics(reg)),
			amqpx.WithPublishTimeout(10 * time.Second)}, AMQPOptions(c)...)
		if !p.readOnly {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			d.Publisher, err = amqpx.NewPublisher(cctx, c.AMQPURL, opts...)
			if err != nil {
				return d, fmt.Errorf("rabbitmq: %w", err)
			}
			d.closers = append(d.closers, d.Publisher.Close)
		}
		d.Consumer = amqpx.NewConsumer(c.AMQPURL, opts...)
		d.Admin.AddCheck("rabbitmq", service.TCPCheck(amqpx.NodeAddrs(c.AMQPURL)...))
	}

	if p.has(Kafka) {
		if !p.readOnly {
			d.Kafka, err = events.NewKafkaProducer(c.KafkaBrokers, events.WithClientID("boxoffice-"+name),
				events.WithRegisterer(reg), events.WithClientConfig(d.KafkaClient),
				events.WithSource(events.SourceFor(c.Deployment())))
			if err != nil {
				return d, fmt.Errorf("kafka: %w", err)
			}
			d.closers = append(d.closers, d.Kafka.Close)
		}
		d.Admin.AddCheck("kafka", service.TCPCheck(c.KafkaBrokers...))
	}

	if p.ledgerURL != "" {
		if d.Ledger, err = ledger.Open(ctx, p.ledgerURL, ledger.WithRegisterer(reg)); err != nil {
			return d, err
		}
		d.closers = append(d.closers, func() error { d.Ledger.Close(); return nil })
		d.Admin.AddCheck("postgres", d.Ledger.Ping)
	}

	if !p.readOnly {
		if d.PassKeys, err = pass.ParseKeys(c.PassKeys); err != nil {
			return d, fmt.Errorf("config: PASS_KEYS: %w", err)
		}
		d.Pass = pass.NewSigner(d.PassKeys, c.PassIssuer)
		opts := []admission.Option{admission.WithMetrics(admission.NewMetrics(reg)), admission.WithPass(d.Pass),
			admission.WithClock(d.Now), admission.WithOfferHook(offerWebhook(c.WaitlistWebhookURL))}
		if d.Ledger != nil {
			// a join's access-code use is recorded before its facts are
			// published, by whichever announcer takes its outbox entry
			opts = append(opts, admission.WithRedemptions(d.Ledger.RecordRedemptions))
		}
		d.Announcer = admission.New(d.Store, d.Publisher, d.Kafka, log, opts...)
	}
	return d, nil
}

// AMQPOptions are the amqpx options of the shared configuration
// (AMQP_DELAYED_PLUGIN, AMQP_QUEUE_TYPE, AMQP_DELIVERY_LIMIT: the topology
// all services of a deployment must agree on; AMQP_DELAY_PROBE_INTERVAL).
// An AMQP_DELIVERY_LIMIT of 0 or less means no limit.
func AMQPOptions(c service.Common) []amqpx.Option {
	qt, err := amqpx.ParseQueueType(c.AMQPQueueType)
	if err != nil {
		qt = amqpx.QueueType(c.AMQPQueueType) // Common.Validate refuses it at start
	}
	limit := c.AMQPDeliveryLimit
	if limit <= 0 {
		limit = -1
	}
	return []amqpx.Option{amqpx.WithDelayedMessagePlugin(c.AMQPDelayedPlugin), amqpx.WithQueueType(qt),
		amqpx.WithDeliveryLimit(limit), amqpx.WithDelayProbes(c.AMQPDelayProbeInterval)}
}

// KafkaClient returns the Kafka settings of the shared configuration
// (KAFKA_TLS, KAFKA_TLS_CA, KAFKA_TLS_CERT, KAFKA_TLS_KEY,
// KAFKA_SASL_MECHANISM, KAFKA_SASL_USER, KAFKA_SASL_PASSWORD,
// KAFKA_COMPRESSION, KAFKA_TOPIC_PREFIX).
func KafkaClient(c service.Common) events.ClientConfig {
	return events.ClientConfig{
		TLS: c.KafkaTLS, TLSCA: c.KafkaTLSCA, TLSCert: c.KafkaTLSCert, TLSKey: c.KafkaTLSKey,
		SASLMechanism: c.KafkaSASLMechanism, SASLUser: c.KafkaSASLUser, SASLPassword: c.KafkaSASLPassword,
		Compression: c.KafkaCompression, TopicPrefix: c.KafkaTopicPrefix,
	}
}
