package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/service"
)

// Handler handles one event. Returning nil commits the message's offset;
// returning an error retries the same message with backoff (the offset is
// not committed, so a crash redelivers it). Handlers must be idempotent:
// delivery is at-least-once, and e.ID is the same for a redelivered message
// or a republished fact.
type Handler func(ctx context.Context, e Event, m kafka.Message) error

type consumerConfig struct {
	logger         *zap.Logger
	startOffset    int64
	maxWait        time.Duration
	sessionTimeout time.Duration
	heartbeat      time.Duration
	handlerTimeout time.Duration
	backoffMin     time.Duration
	backoffMax     time.Duration
	maxRetries     int
	onInvalid      func(ctx context.Context, m kafka.Message, err error) error
	client         ClientConfig
}

// ConsumerOption configures Consume.
type ConsumerOption func(*consumerConfig)

// WithLogger sets the consumer's logger (default: none).
func WithLogger(l *zap.Logger) ConsumerOption {
	return func(c *consumerConfig) { c.logger = l }
}

// WithStartOffset sets where a group without a committed offset starts:
// kafka.FirstOffset (the default: a new consumer sees the whole retained
// history) or kafka.LastOffset.
func WithStartOffset(o int64) ConsumerOption {
	return func(c *consumerConfig) { c.startOffset = o }
}

// WithMaxWait sets how long a fetch waits for new messages (default 250ms).
func WithMaxWait(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.maxWait = d }
}

// WithHandlerTimeout bounds one handler attempt (default 30s).
func WithHandlerTimeout(d time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.handlerTimeout = d }
}

// WithRetryBackoff sets the backoff between handler attempts (default 100ms
// doubling to 10s).
func WithRetryBackoff(min, max time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.backoffMin, c.backoffMax = min, max }
}

// WithMaxRetries makes Consume give up and return an error (without
// committing) after n failed attempts of one message; the message is
// redelivered when the consumer restarts. Default 0: retry until ctx ends.
func WithMaxRetries(n int) ConsumerOption {
	return func(c *consumerConfig) { c.maxRetries = n }
}

// WithInvalidHandler decides what happens to a message that does not decode
// as a valid Event (a poison message: retrying cannot fix it). fn returning
// nil commits the message; an error stops Consume. The default logs the
// message's coordinates at error level and commits it.
func WithInvalidHandler(fn func(ctx context.Context, m kafka.Message, err error) error) ConsumerOption {
	return func(c *consumerConfig) { c.onInvalid = fn }
}

type messageIDKey struct{}

// MessageID returns the envelope id of the event being handled, for logs.
func MessageID(ctx context.Context) string {
	id, _ := ctx.Value(messageIDKey{}).(string)
	return id
}

// Consume reads topic as a member of consumer group groupID and calls
// handler for each message, in partition order, one at a time. It commits an
// offset only after handler returned nil (at-least-once), and retries a
// failing handler with backoff, never skipping the message. A failed fetch
// (the broker unreachable) is retried with the same backoff: a Kafka
// outage pauses the consumer, never ends it. It returns nil when ctx is
// cancelled, or the first error that stops it.
func Consume(ctx context.Context, brokers []string, groupID, topic string, handler Handler, opts ...ConsumerOption) error {
	if len(brokers) == 0 || groupID == "" || topic == "" {
		return errors.New("events: consume needs brokers, a group id and a topic")
	}
	cfg := consumerConfig{
		logger:         zap.NewNop(),
		startOffset:    kafka.FirstOffset,
		maxWait:        250 * time.Millisecond,
		sessionTimeout: 10 * time.Second,
		heartbeat:      time.Second,
		handlerTimeout: 30 * time.Second,
		backoffMin:     100 * time.Millisecond,
		backoffMax:     10 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	topic = cfg.client.Topic(topic)
	dialer, err := cfg.client.Dialer("boxoffice-" + groupID)
	if err != nil {
		return err
	}
	log := cfg.logger.With(zap.String("topic", topic), zap.String("group", groupID))
	if cfg.onInvalid == nil {
		cfg.onInvalid = func(_ context.Context, m kafka.Message, err error) error {
			log.Error("skipping invalid event", zap.Int("partition", m.Partition),
				zap.Int64("offset", m.Offset), zap.Error(err))
			return nil
		}
	}

	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           brokers,
		GroupID:           groupID,
		Topic:             topic,
		MinBytes:          1,
		MaxBytes:          10 << 20,
		MaxWait:           cfg.maxWait,
		ReadBatchTimeout:  cfg.maxWait + time.Second,
		StartOffset:       cfg.startOffset,
		CommitInterval:    0, // synchronous commits: CommitMessages returns once stored
		HeartbeatInterval: cfg.heartbeat,
		SessionTimeout:    cfg.sessionTimeout,
		RebalanceTimeout:  cfg.sessionTimeout,
		JoinGroupBackoff:  500 * time.Millisecond,
		ReadBackoffMin:    50 * time.Millisecond,
		ReadBackoffMax:    time.Second,
		Dialer:            dialer,
	})
	defer r.Close()

	fetchBackoff := cfg.backoffMin
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// The broker is unreachable (an outage, a restart): the
			// reader reconnects by itself; wait and fetch again rather
			// than end the service.
			log.Warn("fetch failed; retrying", zap.Duration("backoff", fetchBackoff), zap.Error(err))
			t := time.NewTimer(fetchBackoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			fetchBackoff = min(2*fetchBackoff, cfg.backoffMax)
			continue
		}
		fetchBackoff = cfg.backoffMin
		e, err := Decode(m.Value)
		if err != nil {
			if err := cfg.onInvalid(ctx, m, err); err != nil {
				return fmt.Errorf("invalid message %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
			}
		} else if err := handleWithRetry(ctx, cfg, log, handler, e, m); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		// The handler's effects are done: commit even if ctx was cancelled
		// meanwhile (shutdown), so a clean stop redelivers nothing.
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err = r.CommitMessages(cctx, m)
		ccancel()
		if ctx.Err() != nil {
			if err != nil {
				log.Warn("commit at shutdown failed", zap.Int("partition", m.Partition),
					zap.Int64("offset", m.Offset), zap.Error(err))
			}
			return nil
		}
		if err != nil {
			// Not fatal for correctness: the message is redelivered and
			// deduped. Typically a rebalance ended our generation.
			log.Warn("commit failed", zap.Int("partition", m.Partition),
				zap.Int64("offset", m.Offset), zap.Error(err))
		}
	}
}

func handleWithRetry(ctx context.Context, cfg consumerConfig, log *zap.Logger, h Handler, e Event, m kafka.Message) error {
	backoff := cfg.backoffMin
	for attempt := 1; ; attempt++ {
		err := callHandler(ctx, cfg.handlerTimeout, h, e, m)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("handler failed, retrying", zap.String("id", e.ID), zap.Int("partition", m.Partition),
			zap.Int64("offset", m.Offset), zap.Int("attempt", attempt), zap.Duration("backoff", backoff), zap.Error(err))
		if cfg.maxRetries > 0 && attempt >= cfg.maxRetries {
			return fmt.Errorf("handle %s %s after %d attempts: %w", e.Type, e.ID, attempt, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, cfg.backoffMax)
	}
}

func callHandler(ctx context.Context, timeout time.Duration, h Handler, e Event, m kafka.Message) (err error) {
	ctx = context.WithValue(ctx, messageIDKey{}, e.ID)
	for _, h := range m.Headers {
		if h.Key == HeaderRequestID && service.ValidRequestID(string(h.Value)) {
			ctx = service.WithRequestID(ctx, string(h.Value))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return h(ctx, e, m)
}
