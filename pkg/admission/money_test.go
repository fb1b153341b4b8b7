package admission_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// countingPub publishes to the real RabbitMQ and counts what it published,
// by message id.
type countingPub struct {
	admission.Publisher
	mu   sync.Mutex
	sent map[string]int
	fail error
}

func (c *countingPub) count(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	if c.sent == nil {
		c.sent = map[string]int{}
	}
	c.sent[id]++
	return nil
}

func (c *countingPub) Publish(ctx context.Context, exchange, key string, msg amqpx.Message) error {
	if err := c.count(msg.ID); err != nil {
		return err
	}
	return c.Publisher.Publish(ctx, exchange, key, msg)
}

func (c *countingPub) PublishDelayed(ctx context.Context, exchange, key string, msg amqpx.Message, delay time.Duration) error {
	if err := c.count(msg.ID); err != nil {
		return err
	}
	return c.Publisher.PublishDelayed(ctx, exchange, key, msg, delay)
}

func (c *countingPub) total() (n int, repeats int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.sent {
		n += k
		if k > 1 {
			repeats += k - 1
		}
	}
	return n, repeats
}

// TestKafkaOutageDoesNotFloodRabbitMQ: while Kafka
// fails, every safety-net sweep retries the Kafka side only; the RabbitMQ
// side (timeout, your_turn, slot-released, cancelled) of each entry is published
// once. When Kafka is back each fact reaches it and the outbox empties. The
// reverse (RabbitMQ down, Kafka up) publishes each Kafka fact once.
func TestKafkaOutageDoesNotFloodRabbitMQ(t *testing.T) {
	e := newEnv(t)
	rec := &events.Recorder{}
	pub := &countingPub{Publisher: e.pub}
	ann := admission.New(e.store, pub, rec, e.log)
	e.event("ko", 3, time.Minute, time.Minute, 4)
	rec.FailWith(errors.New("kafka down"))
	for _, u := range []string{"u1", "u2"} {
		r, err := e.store.Enqueue(e.ctx, "ko", u)
		if err != nil || r.State != booking.StateActive {
			t.Fatalf("join %s: %+v %v", u, r, err)
		}
		if err := ann.Announce(e.ctx, "ko", r.Outbox); err == nil {
			t.Fatal("announce with Kafka down succeeded")
		}
	}
	c, err := e.store.Cancel(e.ctx, "ko", "u1")
	if err != nil {
		t.Fatal(err)
	}
	ann.Announce(e.ctx, "ko", c.Outbox)
	for range 5 {
		if _, err := ann.SweepOutbox(e.ctx, "ko", 0); err == nil {
			t.Fatal("sweep with Kafka down succeeded")
		}
	}
	// u1, u2: timeout + your_turn each; u1's cancel: slot-released and
	// the cancelled notification
	if n, repeats := pub.total(); n != 6 || repeats != 0 {
		t.Fatalf("RabbitMQ publishes %d (repeats %d), want 6 once each: %v", n, repeats, pub.sent)
	}
	rec.FailWith(nil)
	if _, err := ann.SweepOutbox(e.ctx, "ko", 0); err != nil {
		t.Fatal(err)
	}
	if left, _ := e.store.Outbox(e.ctx, "ko", 0); len(left) != 0 {
		t.Fatalf("outbox left %+v", left)
	}
	if n, _ := pub.total(); n != 6 {
		t.Fatalf("RabbitMQ publishes after Kafka came back: %d", n)
	}
	perType := map[string]int{}
	for _, ev := range rec.Events() {
		perType[ev.Type]++
	}
	want := map[string]int{events.TopicBookingRequest: 2, events.TopicUserPromoted: 2, events.TopicBookingCancelled: 1}
	for k, v := range want {
		if perType[k] != v {
			t.Fatalf("kafka %v, want %v", perType, want)
		}
	}

	// RabbitMQ down, Kafka up: Kafka facts once, RabbitMQ retried.
	rec.Reset()
	pub.fail = errors.New("rabbit down")
	r, _ := e.store.Enqueue(e.ctx, "ko", "u3")
	ann.Announce(e.ctx, "ko", r.Outbox)
	for range 3 {
		ann.SweepOutbox(e.ctx, "ko", 0)
	}
	pub.fail = nil
	if _, err := ann.SweepOutbox(e.ctx, "ko", 0); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Events()); n != 2 {
		t.Fatalf("kafka events %d, want booking_request and user_promoted once: %+v", n, rec.Events())
	}
	if n, repeats := pub.total(); n != 8 || repeats != 0 {
		t.Fatalf("RabbitMQ publishes %d (repeats %d)", n, repeats)
	}
}

// PublishBatch counts each message as Publish and PublishDelayed do, then
// publishes the batch through the real publisher.
func (c *countingPub) PublishBatch(ctx context.Context, out []amqpx.Outgoing) []error {
	for _, o := range out {
		if err := c.count(o.Msg.ID); err != nil {
			errs := make([]error, len(out))
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
	}
	return c.Publisher.PublishBatch(ctx, out)
}
