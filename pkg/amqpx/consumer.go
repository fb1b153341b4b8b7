package amqpx

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/requestid"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Handler processes one delivery. Return nil to ack it, an error to retry
// it later, Permanent(err) to dead-letter it at once. A panic counts as an
// error. Handlers must be idempotent: delivery is at-least-once.
type Handler func(ctx context.Context, d Delivery) error

// Defaults of ConsumeOptions.
const (
	DefaultMaxRetries      = 5
	DefaultRetryMinBackoff = time.Second
	DefaultRetryMaxBackoff = time.Minute
	DefaultDrainTimeout    = 30 * time.Second
)

// ConsumeOptions tune one Consume call. Zero values mean the defaults.
type ConsumeOptions struct {
	// Workers is the number of concurrent handler goroutines (default 1).
	// With more than one worker, deliveries of one queue are handled out of
	// order.
	Workers int
	// Prefetch is the Qos prefetch count: unacked deliveries the broker
	// pushes ahead (default 2×Workers).
	Prefetch int
	// MaxRetries is how many times a failing delivery is retried before it
	// is dead-lettered (default DefaultMaxRetries; negative: never retry).
	MaxRetries int
	// RetryMinBackoff and RetryMaxBackoff bound the retry delay, which
	// doubles per retry (defaults 1 s and 1 min). Each distinct delay is
	// one retry wait queue, so the set stays small.
	RetryMinBackoff, RetryMaxBackoff time.Duration
	// DrainTimeout bounds how long Consume waits for in-flight handlers
	// after ctx is cancelled; then their context is cancelled
	// (default DefaultDrainTimeout).
	DrainTimeout time.Duration
	// BindFanout, when set, makes Consume declare its own exclusive,
	// auto-delete, server-named queue bound to this fanout exchange on
	// every (re)connect (the notifier's per-instance queue); the queue
	// argument of Consume must then be "". Such a queue has no dead-letter
	// queue: exhausted messages are logged and dropped.
	BindFanout string
}

func (co ConsumeOptions) withDefaults() ConsumeOptions {
	if co.Workers <= 0 {
		co.Workers = 1
	}
	if co.Prefetch <= 0 {
		co.Prefetch = 2 * co.Workers
	}
	if co.MaxRetries == 0 {
		co.MaxRetries = DefaultMaxRetries
	}
	if co.RetryMinBackoff <= 0 {
		co.RetryMinBackoff = DefaultRetryMinBackoff
	}
	if co.RetryMaxBackoff <= 0 {
		co.RetryMaxBackoff = DefaultRetryMaxBackoff
	}
	if co.DrainTimeout <= 0 {
		co.DrainTimeout = DefaultDrainTimeout
	}
	return co
}

// ErrDrainTimeout is returned by Consume when in-flight handlers did not
// finish within DrainTimeout after cancellation.
var ErrDrainTimeout = errors.New("amqpx: drain timeout")

// Consumer consumes queues with manual acks. Each Consume call owns its own
// connection (consuming and publishing connections are kept apart so that
// broker flow control on publishers never stalls acks).
//
// Retry design: a failed delivery with retry count n < MaxRetries is copied
// (same MessageId and body, HeaderRetryCount = n+1, HeaderLastError) into
// the retry wait queue "<queue>.retry-delay.<ms>" — a TTL queue that dead-letters
// through the default exchange with routing key <queue>, i.e. back into
// exactly this queue, not to every queue bound to the original exchange.
// The copy is publisher-confirmed before the original is acked, so a crash
// between the two duplicates rather than loses. The delay doubles per retry
// (RetryMinBackoff..RetryMaxBackoff) and never hot-loops; the ordering cost
// is that a retried message goes behind newer ones, and other messages are
// not blocked behind it. After MaxRetries, or at once for Permanent errors,
// the message is published to DeadLetterExchange with routing key <queue>
// (→ "<queue>.dlq") carrying HeaderDeadReason, HeaderLastError,
// HeaderRetryCount and HeaderOriginalQueue, then acked. If that publish
// fails the original is requeued, never dropped.
type Consumer struct {
	url string
	o   options
	log *zap.Logger
	seq atomic.Uint64
}

// NewConsumer returns a Consumer for url (one URL, or several separated by
// commas, as for NewPublisher); it connects in Consume.
func NewConsumer(url string, opts ...Option) *Consumer {
	o := newOptions(opts)
	return &Consumer{url: url, o: o, log: o.logger.With(zap.String("component", "amqp_consumer"))}
}

// Consume declares the topology, consumes queue and runs h on each delivery
// with co.Workers goroutines until ctx is cancelled. A lost connection or
// broker restart is survived: Consume reconnects with backoff, redeclares
// and resumes; deliveries unacked at the loss are redelivered by the broker.
// On cancellation Consume stops taking deliveries, waits for in-flight
// handlers (at most co.DrainTimeout), and returns nil (ErrDrainTimeout if
// handlers were still running). Unhandled prefetched deliveries go back to
// the queue when the channel closes.
func (c *Consumer) Consume(ctx context.Context, queue string, h Handler, co ConsumeOptions) error {
	co = co.withDefaults()
	if (queue == "") == (co.BindFanout == "") {
		return errors.New("amqpx: consume needs exactly one of queue and BindFanout")
	}
	log := c.log.With(zap.String("queue", queue), zap.String("fanout", co.BindFanout))
	name := "boxoffice-consumer-" + queue + co.BindFanout
	// The pause between sessions grows while sessions end at once (a
	// channel or queue the broker refuses), and starts again from the
	// minimum after a session that lasted.
	pause := retry.Exponential(c.o.reconnectMin, c.o.reconnectMax)
	for connects := 0; ; connects++ {
		s, err := connectWithBackoff(ctx, nil, c.url, name, c.o, log)
		if err != nil {
			return nil // ctx cancelled before a connection was made
		}
		if connects > 0 {
			c.o.metrics.Reconnects.WithLabelValues("consumer").Inc()
			log.Info("amqp consumer reconnected")
		}
		began := time.Now()
		err = c.runSession(ctx, s, queue, h, co, log)
		s.close()
		if ctx.Err() != nil {
			// a session cut short by the cancellation (or failing as it
			// came) is not an error of Consume's; unfinished handlers are
			if errors.Is(err, ErrDrainTimeout) {
				return err
			}
			return nil
		}
		if time.Since(began) > c.o.reconnectMax {
			pause.Reset()
		}
		d := pause.NextBackOff()
		log.Warn("amqp consumer session ended; reconnecting", zap.Error(err), zap.Duration("retry_in", d))
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
	}
}

// runSession consumes on s until the connection is lost (returns an error)
// or ctx is cancelled (drains, returns nil or ErrDrainTimeout).
func (c *Consumer) runSession(ctx context.Context, s *session, queue string, h Handler, co ConsumeOptions, log *zap.Logger) error {
	ch, err := s.conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Qos(co.Prefetch, 0, false); err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	if co.BindFanout != "" {
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			return fmt.Errorf("declare fanout queue: %w", err)
		}
		if err := ch.QueueBind(q.Name, "", co.BindFanout, false, nil); err != nil {
			return fmt.Errorf("bind fanout queue: %w", err)
		}
		queue = q.Name
		log = log.With(zap.String("queue", queue))
	}
	tag := fmt.Sprintf("%s-%d", name(queue), c.seq.Add(1))
	deliveries, err := ch.ConsumeWithContext(context.Background(), queue, tag, false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume %s: %w", queue, err)
	}
	log.Info("amqp consuming", zap.Int("workers", co.Workers), zap.Int("prefetch", co.Prefetch))

	// Handlers get a context that survives ctx's cancellation until the
	// drain timeout, so that in-flight work can finish and be acked.
	hctx, cancelHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHandlers()
	var wg sync.WaitGroup
	for range co.Workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case d, ok := <-deliveries:
					if !ok {
						return
					}
					if ctx.Err() != nil {
						return // not started: requeued when the channel closes
					}
					c.handle(hctx, s, queue, d, h, co, log)
				}
			}
		})
	}
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()

	select {
	case <-workersDone:
		if ctx.Err() == nil {
			return errConnectionLost // deliveries closed: channel or connection gone
		}
		return nil
	case <-ctx.Done():
	}
	_ = ch.Cancel(tag, false)
	t := time.NewTimer(co.DrainTimeout)
	defer t.Stop()
	select {
	case <-workersDone:
		log.Info("amqp consumer drained")
		return nil
	case <-t.C:
	}
	cancelHandlers()
	log.Error("amqp consumer drain timeout; cancelling handlers", zap.Duration("drain_timeout", co.DrainTimeout))
	select {
	case <-workersDone:
	case <-time.After(time.Second):
	}
	return ErrDrainTimeout
}

func name(queue string) string { return "boxoffice-" + queue }

func (c *Consumer) handle(ctx context.Context, s *session, queue string, d amqp.Delivery, h Handler, co ConsumeOptions, log *zap.Logger) {
	if d.Type == ProbeType {
		c.bounceProbe(ctx, s, d, log)
		return
	}
	m := c.o.metrics
	m.Consumed.WithLabelValues(queue).Inc()
	dv := Delivery{
		MessageID:   d.MessageId,
		Type:        d.Type,
		Body:        d.Body,
		Headers:     d.Headers,
		Timestamp:   d.Timestamp,
		Exchange:    d.Exchange,
		RoutingKey:  d.RoutingKey,
		Redelivered: d.Redelivered,
		RetryCount:  headerInt(d.Headers, HeaderRetryCount),
	}
	log = log.With(zap.String("message_id", d.MessageId), zap.Int("retry_count", dv.RetryCount))
	hctx := context.WithValue(ctx, messageIDKey{}, d.MessageId)
	if rid, _ := d.Headers[HeaderRequestID].(string); requestid.Valid(rid) {
		// the request that caused this message, for the handler's logs
		hctx = requestid.With(hctx, rid)
		log = log.With(zap.String("request_id", rid))
	}
	err := callSafely(hctx, h, dv, log)
	if err == nil {
		if aerr := d.Ack(false); aerr != nil {
			log.Warn("amqp ack failed; message will be redelivered", zap.Error(aerr))
			return
		}
		m.Acked.WithLabelValues(queue).Inc()
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	switch {
	case IsPermanent(err):
		c.deadLetter(pctx, s, queue, d, dv.RetryCount, DeadReasonPermanent, err, log)
	case co.MaxRetries < 0 || dv.RetryCount >= co.MaxRetries:
		c.deadLetter(pctx, s, queue, d, dv.RetryCount, DeadReasonMaxRetries, err, log)
	default:
		c.retry(pctx, s, queue, d, dv.RetryCount, err, co, log)
	}
}

func callSafely(ctx context.Context, h Handler, d Delivery, log *zap.Logger) (err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("amqp handler panic", zap.Any("panic", v), zap.ByteString("stack", debug.Stack()))
			err = &panicError{v: v}
		}
	}()
	return h(ctx, d)
}

// copyPublishing rebuilds a publishing from a delivery, keeping its id,
// timestamp, type and body, with extra headers.
func copyPublishing(d amqp.Delivery, extra amqp.Table) amqp.Publishing {
	h := make(amqp.Table, len(d.Headers)+len(extra))
	for k, v := range d.Headers {
		h[k] = v
	}
	for k, v := range extra {
		h[k] = v
	}
	ct := d.ContentType
	if ct == "" {
		ct = "application/json"
	}
	return amqp.Publishing{
		Headers:      h,
		ContentType:  ct,
		DeliveryMode: amqp.Persistent,
		MessageId:    d.MessageId,
		Timestamp:    d.Timestamp,
		Type:         d.Type,
		Body:         d.Body,
	}
}

func errorText(err error) string {
	s := err.Error()
	if len(s) > 1024 {
		s = s[:1024]
	}
	return s
}

func (c *Consumer) retry(ctx context.Context, s *session, queue string, d amqp.Delivery, n int, herr error, co ConsumeOptions, log *zap.Logger) {
	// No jitter: the delay names the wait queue, so the set of queues
	// stays small; RoundDelay makes it a round number.
	delay := RoundDelay(retry.Delay(n, co.RetryMinBackoff, co.RetryMaxBackoff))
	wq := retryQueueName(queue, delay)
	pub := copyPublishing(d, amqp.Table{
		HeaderRetryCount: int32(n + 1),
		HeaderLastError:  errorText(herr),
	})
	err := s.ensureWaitQueue(wq, delay, "", queue)
	if err == nil {
		err = s.pub.publish(ctx, "", wq, true, pub)
	}
	if err != nil {
		log.Error("amqp retry publish failed; requeueing", zap.Error(err), zap.NamedError("handler_error", herr))
		_ = d.Nack(false, true)
		return
	}
	if aerr := d.Ack(false); aerr != nil {
		log.Warn("amqp ack after retry publish failed; message will be redelivered", zap.Error(aerr))
	}
	c.o.metrics.Retried.WithLabelValues(queue).Inc()
	log.Warn("amqp handler failed; retry scheduled", zap.Error(herr), zap.Duration("delay", delay))
}

func (c *Consumer) deadLetter(ctx context.Context, s *session, queue string, d amqp.Delivery, n int, reason string, herr error, log *zap.Logger) {
	pub := copyPublishing(d, amqp.Table{
		HeaderDeadReason:    reason,
		HeaderLastError:     errorText(herr),
		HeaderRetryCount:    int32(n),
		HeaderOriginalQueue: queue,
	})
	err := s.pub.publish(ctx, DeadLetterExchange, queue, true, pub)
	switch {
	case errors.Is(err, ErrUnroutable):
		log.Error("amqp no dead-letter queue; message dropped", zap.String("reason", reason), zap.Error(herr))
	case err != nil:
		log.Error("amqp dead-letter publish failed; requeueing", zap.Error(err), zap.NamedError("handler_error", herr))
		_ = d.Nack(false, true)
		return
	default:
		c.o.metrics.DeadLettered.WithLabelValues(queue, reason).Inc()
		log.Error("amqp message dead-lettered", zap.String("reason", reason), zap.Error(herr))
	}
	if aerr := d.Ack(false); aerr != nil {
		log.Warn("amqp ack after dead-letter failed; message will be redelivered", zap.Error(aerr))
	}
}

// retryQueueName is the retry wait queue of a consumed queue for one delay
// (earlier versions, which dead-lettered at-least-once, used
// "<queue>.retry.<ms>"; see WaitQueueName). Names starting with "amq." are
// reserved by the broker, hence the prefix for server-named queues.
func retryQueueName(queue string, delay time.Duration) string {
	if strings.HasPrefix(queue, "amq.") {
		queue = "boxoffice." + queue
	}
	return fmt.Sprintf("%s.retry-delay.%d", queue, delay.Milliseconds())
}

type messageIDKey struct{}

// MessageIDFromContext returns the MessageId of the delivery whose handler
// received ctx, for logging and for deriving ids of follow-up messages.
func MessageIDFromContext(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(messageIDKey{}).(string)
	return id, ok
}
