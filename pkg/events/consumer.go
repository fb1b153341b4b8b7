package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/requestid"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Handler handles one event, with the contract of an amqpx.Handler: return
// nil to commit the message's offset; an error to retry the same message
// with backoff (the offset is not committed, so a crash redelivers it, and
// later messages of the partition wait); a permanent error
// (retry.Permanent, the same marker as amqpx.Permanent) to dead-letter the
// message at once (see [WithDeadLetter]) and go on. A panic counts as an
// error. Handlers must be idempotent: delivery is at-least-once, and e.ID is
// the same for a redelivered message or a republished fact.
type Handler func(ctx context.Context, e Event, m kafka.Message) error

// Values of the reason given to a [DeadLetterFunc], as amqpx's
// x-dead-reason.
const (
	// DeadReasonInvalid: the message does not decode as a valid Event (a
	// poison message: retrying cannot fix it).
	DeadReasonInvalid = "invalid"
	// DeadReasonPermanent: the handler returned a permanent error.
	DeadReasonPermanent = "permanent"
)

// DeadLetterFunc receives a message the consumer gives up on, with the
// reason (DeadReasonInvalid or DeadReasonPermanent) and the error.
// Returning nil commits the message and goes on; an error stops Consume
// without committing.
type DeadLetterFunc func(ctx context.Context, m kafka.Message, reason string, err error) error

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
	deadLetter     DeadLetterFunc
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

// WithRetryBackoff sets the backoff between handler attempts and between
// failed fetches (default 100ms doubling to 10s, with retry.Jitter).
func WithRetryBackoff(min, max time.Duration) ConsumerOption {
	return func(c *consumerConfig) { c.backoffMin, c.backoffMax = min, max }
}

// WithMaxRetries makes Consume give up and return an error (without
// committing) after n failed attempts of one message; the message is
// redelivered when the consumer restarts. Default 0: retry until ctx ends.
func WithMaxRetries(n int) ConsumerOption {
	return func(c *consumerConfig) { c.maxRetries = n }
}

// WithDeadLetter decides what happens to a message that does not decode as
// a valid Event or whose handler returned a permanent error. The default
// logs the message's topic, partition, offset, reason and error at error
// level and commits it: the message stays in the topic, at that offset,
// for as long as the topic retains it.
func WithDeadLetter(fn DeadLetterFunc) ConsumerOption {
	return func(c *consumerConfig) { c.deadLetter = fn }
}

type messageIDKey struct{}

// MessageID returns the envelope id of the event being handled, for logs.
func MessageID(ctx context.Context) string {
	id, _ := ctx.Value(messageIDKey{}).(string)
	return id
}

// Consume reads topic as a member of consumer group groupID and calls
// handler for each message, in partition order, one at a time. It commits an
// offset only after handler returned nil or the message was dead-lettered
// (at-least-once), and retries a failing handler with backoff, never
// skipping the message unless the error is permanent. A failed fetch (the
// broker unreachable) is retried with the same backoff: a Kafka outage
// pauses the consumer, never ends it. It returns nil when ctx is
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
	if cfg.deadLetter == nil {
		cfg.deadLetter = func(_ context.Context, m kafka.Message, reason string, err error) error {
			log.Error("kafka message dead-lettered; skipped", zap.String("reason", reason),
				zap.Int("partition", m.Partition), zap.Int64("offset", m.Offset), zap.Error(err))
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

	for {
		// The broker is unreachable (an outage, a restart): the reader
		// reconnects by itself; wait and fetch again rather than end the
		// service.
		m, err := backoff.Retry(ctx, func() (kafka.Message, error) { return r.FetchMessage(ctx) },
			backoff.WithBackOff(retry.Exponential(cfg.backoffMin, cfg.backoffMax)), backoff.WithMaxElapsedTime(0),
			backoff.WithNotify(func(err error, d time.Duration) {
				log.Warn("fetch failed; retrying", zap.Duration("backoff", d), zap.Error(err))
			}))
		if err != nil {
			return nil // only ctx ends the retries
		}
		reason := DeadReasonPermanent
		e, err := Decode(m.Value)
		if err != nil {
			reason = DeadReasonInvalid
		} else if err = handleWithRetry(ctx, cfg, log, handler, e, m); err != nil && ctx.Err() != nil {
			return nil
		}
		switch {
		case reason == DeadReasonInvalid || retry.IsPermanent(err):
			if derr := cfg.deadLetter(ctx, m, reason, err); derr != nil {
				return fmt.Errorf("dead-letter %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, derr)
			}
		case err != nil:
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

// handleWithRetry runs h until it returns nil, a permanent error (returned
// as it is, still marked), cfg.maxRetries attempts failed, or ctx ends.
func handleWithRetry(ctx context.Context, cfg consumerConfig, log *zap.Logger, h Handler, e Event, m kafka.Message) error {
	attempt := 0
	var last error
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		attempt++
		last = callHandler(ctx, cfg.handlerTimeout, h, e, m)
		return struct{}{}, last
	}, backoff.WithBackOff(retry.Exponential(cfg.backoffMin, cfg.backoffMax)), backoff.WithMaxElapsedTime(0),
		backoff.WithMaxTries(uint(max(cfg.maxRetries, 0))),
		backoff.WithNotify(func(err error, d time.Duration) {
			log.Warn("handler failed, retrying", zap.String("id", e.ID), zap.Int("partition", m.Partition),
				zap.Int64("offset", m.Offset), zap.Int("attempt", attempt), zap.Duration("backoff", d), zap.Error(err))
		}))
	switch {
	case err == nil:
		return nil
	case retry.IsPermanent(last):
		return last // backoff.Retry unwrapped it; the caller dead-letters it
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("handle %s %s after %d attempts: %w", e.Type, e.ID, attempt, err)
}

func callHandler(ctx context.Context, timeout time.Duration, h Handler, e Event, m kafka.Message) (err error) {
	ctx = context.WithValue(ctx, messageIDKey{}, e.ID)
	for _, h := range m.Headers {
		if h.Key == HeaderRequestID && requestid.Valid(string(h.Value)) {
			ctx = requestid.With(ctx, string(h.Value))
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
