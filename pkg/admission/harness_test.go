package admission_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// env is one test's world: its own Redis prefix, RabbitMQ vhost and
// embedded Kafka, with the Announcer wired to all three.
type env struct {
	t       *testing.T
	ctx     context.Context
	log     *zap.Logger
	rdb     redis.UniversalClient
	store   *booking.Store
	url     string
	pub     *amqpx.Publisher
	brokers []string
	kafka   *events.KafkaProducer
	reg     *prometheus.Registry
	metrics *admission.Metrics
	ann     *admission.Announcer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))}
	e.url = amqptest.Vhost(t)
	e.rdb = redistest.Client(t)
	prefix := redistest.Prefix(t)
	e.store = booking.New(e.rdb, booking.WithPrefix(prefix))
	var err error
	e.pub, err = amqpx.NewPublisher(ctx, e.url, amqpx.WithLogger(e.log), amqpx.WithReconnectBackoff(50*time.Millisecond, time.Second))
	if err != nil {
		t.Fatalf("publisher: %v", err)
	}
	t.Cleanup(func() { e.pub.Close() })
	e.brokers = kafkatest.Start(t)
	e.kafka, err = events.NewKafkaProducer(e.brokers)
	if err != nil {
		t.Fatalf("kafka producer: %v", err)
	}
	t.Cleanup(func() { e.kafka.Close() })
	e.reg = prometheus.NewRegistry()
	e.metrics = admission.NewMetrics(e.reg)
	e.ann = admission.New(e.store, e.pub, e.kafka, e.log, admission.WithMetrics(e.metrics))
	return e
}

// event creates an event with seats and the given room; paused events get
// their users enqueued without immediate admission.
func (e *env) event(id string, capacity int, hold, grace time.Duration, seats int) {
	e.t.Helper()
	if _, err := e.store.CreateEvent(e.ctx, booking.EventConfig{ID: id, Name: id, Rows: 1, SeatsPerRow: seats,
		Capacity: capacity, Hold: hold, Grace: grace}); err != nil {
		e.t.Fatalf("create event: %v", err)
	}
}

func (e *env) pause(id string, paused bool) {
	e.t.Helper()
	if _, err := e.store.UpdateEvent(e.ctx, id, booking.EventUpdate{Paused: &paused}); err != nil {
		e.t.Fatalf("pause: %v", err)
	}
}

// enqueueWaiting joins n users (u001…) while the event is paused, so they
// all wait, then resumes it.
func (e *env) enqueueWaiting(id string, n int) []string {
	e.t.Helper()
	e.pause(id, true)
	users := make([]string, n)
	for i := range n {
		users[i] = fmt.Sprintf("u%03d", i+1)
		r, err := e.store.Enqueue(e.ctx, id, users[i])
		if err != nil || r.State != booking.StateWaiting {
			e.t.Fatalf("enqueue %s: %v %+v", users[i], err, r)
		}
		// booking_request, as the gateway's relay announces it
		if err := e.ann.Announce(e.ctx, id, r.Outbox); err != nil {
			e.t.Fatalf("announce join of %s: %v", users[i], err)
		}
	}
	e.pause(id, false)
	return users
}

// consume runs handler on queue in the background until the test ends.
func (e *env) consume(queue string, h amqpx.Handler, workers int) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	c := amqpx.NewConsumer(e.url, amqpx.WithLogger(e.log), amqpx.WithReconnectBackoff(50*time.Millisecond, time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Consume(ctx, queue, h, amqpx.ConsumeOptions{Workers: workers,
			RetryMinBackoff: 100 * time.Millisecond, RetryMaxBackoff: time.Second, DrainTimeout: 5 * time.Second}); err != nil {
			e.t.Errorf("consume %s: %v", queue, err)
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
}

// promoter starts a slot-released consumer with its own Announcer (sharing
// the env's brokers, store and metrics), as another service instance would.
func (e *env) promoter(workers int, opts ...admission.PromoterOption) *admission.Promoter {
	p := admission.NewPromoter(e.store, e.ann, e.log, opts...)
	e.consume(amqpx.SlotReleasedQueue, p.HandleSlotReleased, workers)
	return p
}

// idlePromoter is a Promoter that consumes nothing, for tests that drive it
// directly; its outbox sweep has no minimum age.
func (e *env) idlePromoter() *admission.Promoter {
	return admission.NewPromoter(e.store, e.ann, e.log, admission.WithSweepAge(0))
}

func (e *env) timeouts(workers int) *admission.TimeoutHandler {
	h := admission.NewTimeoutHandler(e.store, e.ann, e.log)
	e.consume(amqpx.TimeoutQueue, h.Handle, workers)
	return h
}

func (e *env) slotReleased(id string) {
	e.t.Helper()
	if err := e.ann.ReleaseSlot(e.ctx, id, messages.ReasonCancellation, ""); err != nil {
		e.t.Fatalf("publish slot-released: %v", err)
	}
}

// counter returns the value of a counter of the env's registry with the
// given labels (name=value pairs).
func (e *env) counter(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func (e *env) counts(id string) booking.Counts {
	e.t.Helper()
	c, err := e.store.Counts(e.ctx, id)
	if err != nil {
		e.t.Fatalf("counts: %v", err)
	}
	return c
}

func (e *env) state(id, user string) booking.State {
	e.t.Helper()
	s, err := e.store.Position(e.ctx, id, user)
	if err != nil {
		e.t.Fatalf("position %s: %v", user, err)
	}
	return s.State
}

// queueDepth returns the number of ready messages in queue.
func (e *env) queueDepth(queue string) int {
	e.t.Helper()
	conn, err := amqp.Dial(e.url)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		e.t.Fatalf("channel: %v", err)
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		e.t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}

// eventually polls cond every 20 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// collector reads Kafka topics through a consumer group from the start and
// keeps every event in arrival order (per partition order; one concert is
// one partition).
type collector struct {
	mu  sync.Mutex
	evs []events.Event
}

func (e *env) collect(topics ...string) *collector {
	c := &collector{}
	group := "test-" + strings.ToLower(rand.Text()[:8])
	for _, topic := range topics {
		ctx, cancel := context.WithCancel(e.ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			err := events.Consume(ctx, e.brokers, group, topic, func(_ context.Context, ev events.Event, _ kafka.Message) error {
				c.mu.Lock()
				c.evs = append(c.evs, ev)
				c.mu.Unlock()
				return nil
			}, events.WithMaxWait(50*time.Millisecond))
			if err != nil {
				e.t.Errorf("collect %s: %v", topic, err)
			}
		}()
		e.t.Cleanup(func() { cancel(); <-done })
	}
	return c
}

// of returns the events of a type, in arrival order.
func (c *collector) of(typ string) []events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []events.Event
	for _, ev := range c.evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// unique returns the events of a type with duplicate ids dropped (first
// occurrence kept), as an analytics consumer would see them.
func (c *collector) unique(typ string) []events.Event {
	seen := map[string]bool{}
	var out []events.Event
	for _, ev := range c.of(typ) {
		if !seen[ev.ID] {
			seen[ev.ID] = true
			out = append(out, ev)
		}
	}
	return out
}

func publishRaw(t *testing.T, e *env, exchange, key string, body []byte) {
	t.Helper()
	if err := e.pub.Publish(e.ctx, exchange, key, amqpx.Message{Body: body}); err != nil {
		t.Fatalf("publish raw: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oneByOne is PublishBatch for the test publishers that count or fail
// single publishes: each message through their Publish or PublishDelayed.
func oneByOne(ctx context.Context, p interface {
	Publish(context.Context, string, string, amqpx.Message) error
	PublishDelayed(context.Context, string, string, amqpx.Message, time.Duration) error
}, out []amqpx.Outgoing) []error {
	errs := make([]error, len(out))
	for i, o := range out {
		if o.Delay > 0 {
			errs[i] = p.PublishDelayed(ctx, o.Exchange, o.Key, o.Msg, o.Delay)
		} else {
			errs[i] = p.Publish(ctx, o.Exchange, o.Key, o.Msg)
		}
	}
	return errs
}
