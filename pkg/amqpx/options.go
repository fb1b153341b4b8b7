package amqpx

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Option configures a Publisher or Consumer.
type Option func(*options)

type options struct {
	logger        *zap.Logger
	metrics       *Metrics
	delayedPlugin bool
	queueType     QueueType
	deliveryLimit int
	// cursor picks the RabbitMQ node to dial first (see dialAny); shared
	// by all sessions of one Publisher or Consumer.
	cursor         *atomic.Uint64
	reconnectMin   time.Duration
	reconnectMax   time.Duration
	publishTimeout time.Duration
	probeEvery     time.Duration
}

func newOptions(opts []Option) options {
	o := options{
		logger:         zap.NewNop(),
		reconnectMin:   100 * time.Millisecond,
		reconnectMax:   10 * time.Second,
		publishTimeout: 30 * time.Second,
		cursor:         new(atomic.Uint64),
	}
	o.cursor.Store(rand.Uint64N(1 << 16))
	for _, f := range opts {
		f(&o)
	}
	if o.metrics == nil {
		o.metrics = NewMetrics(nil)
	}
	return o
}

// WithLogger sets the logger (default: no logging).
func WithLogger(l *zap.Logger) Option { return func(o *options) { o.logger = l } }

// WithMetrics sets the metrics (default: unregistered metrics). Create one
// Metrics per registry and share it between Publishers and Consumers.
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }

// WithDelayedMessagePlugin declares TimeoutExchange as an x-delayed-message
// exchange and makes PublishDelayed use the x-delay header instead of TTL wait
// queues. Only when the rabbitmq_delayed_message_exchange plugin is enabled
// on every node; all services must agree (see Declare).
func WithDelayedMessagePlugin(enabled bool) Option {
	return func(o *options) { o.delayedPlugin = enabled }
}

// WithReconnectBackoff sets the reconnect backoff bounds (default 100 ms
// doubling to 10 s, with retry.Jitter).
func WithReconnectBackoff(minDelay, maxDelay time.Duration) Option {
	return func(o *options) { o.reconnectMin, o.reconnectMax = minDelay, maxDelay }
}

// WithPublishTimeout bounds a Publish whose context has no deadline
// (default 30 s), including time spent waiting for a reconnect.
func WithPublishTimeout(d time.Duration) Option { return func(o *options) { o.publishTimeout = d } }

// WithQueueType sets the type of the durable queues (default QueueQuorum).
// All services of a deployment must agree (see Topology).
func WithQueueType(t QueueType) Option { return func(o *options) { o.queueType = t } }

// WithDeliveryLimit sets the x-delivery-limit of quorum work queues
// (default DefaultDeliveryLimit; negative: none). All services of a
// deployment must agree (see Topology).
func WithDeliveryLimit(n int) Option { return func(o *options) { o.deliveryLimit = n } }

// WithDelayProbes makes a Publisher send a probe (ProbeType) through each
// TTL wait queue it publishes into, every interval while the queue may
// hold a message of its own, and measure when each comes back from the
// consumer of the target queue: boxoffice_amqp_delay_overdue_seconds says
// how far past due the oldest missing probe of each wait queue is, i.e.
// that delayed messages through it neither expire nor move (see
// docs/runbook.md, "Delayed messages overdue"). Default 0: no probes. The
// consumers of the target queues must know probes (this package's
// Consumer does). Consumers ignore the option.
func WithDelayProbes(interval time.Duration) Option {
	return func(o *options) { o.probeEvery = interval }
}

func (o options) topology() Topology {
	return Topology{DelayedPlugin: o.delayedPlugin, QueueType: o.queueType, DeliveryLimit: o.deliveryLimit}
}
