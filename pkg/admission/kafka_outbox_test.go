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
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// failCount wraps a handler and counts the errors it returned (each one a
// retry toward the dead-letter queue).
type failCount struct {
	mu   sync.Mutex
	errs []error
}

func (f *failCount) wrap(h amqpx.Handler) amqpx.Handler {
	return func(ctx context.Context, d amqpx.Delivery) error {
		err := h(ctx, d)
		if err != nil {
			f.mu.Lock()
			f.errs = append(f.errs, err)
			f.mu.Unlock()
		}
		return err
	}
}

func (f *failCount) get() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

// TestKafkaOutageAcksMessagesAndKeepsFactsInOutbox: while Kafka fails, a slot-released or timeout message whose
// RabbitMQ side and Redis step are done is acked (not retried toward its
// DLQ); the Kafka side stays in the outbox, including booking_expired
// (handle_timeout.lua writes the expiry's entry), and the safety net
// publishes it once Kafka is back, with the hold's deadline as its time.
func TestKafkaOutageAcksMessagesAndKeepsFactsInOutbox(t *testing.T) {
	e := newEnv(t)
	rec := &events.Recorder{}
	pub := &countingPub{Publisher: e.pub}
	ann := admission.New(e.store, pub, rec, e.log)
	hold := time.Second
	e.event("kq", 1, hold, 0, 4)
	users := e.enqueueWaiting("kq", 2)
	rec.FailWith(errors.New("kafka down"))

	var fails failCount
	p := admission.NewPromoter(e.store, ann, e.log)
	e.consume(amqpx.SlotReleasedQueue, fails.wrap(p.HandleSlotReleased), 1)
	h := admission.NewTimeoutHandler(e.store, ann, e.log)
	e.consume(amqpx.TimeoutQueue, fails.wrap(h.Handle), 1)
	e.slotReleased("kq")
	eventually(t, 30*time.Second, "both holds expired", func() bool {
		return e.state("kq", users[0]) == booking.StateExpired && e.state("kq", users[1]) == booking.StateExpired
	})
	// the last timeout's handler is done once its slot-released is handled
	eventually(t, 30*time.Second, "the expiries announced to RabbitMQ", func() bool {
		left, _ := e.store.Outbox(e.ctx, "kq", 0)
		rabbitDone := 0
		for _, x := range left {
			if x.Kind == booking.KindExpired && x.RabbitDone {
				rabbitDone++
			}
		}
		return rabbitDone == 2
	})
	if errs := fails.get(); len(errs) != 0 {
		t.Fatalf("handlers failed %d times with only Kafka down (retries toward the DLQ): %v", len(errs), errs)
	}
	if n, repeats := pub.total(); repeats != 0 {
		t.Fatalf("RabbitMQ publishes %d, repeats %d: %v", n, repeats, pub.sent)
	}

	rec.FailWith(nil)
	if err := admission.NewPromoter(e.store, ann, e.log, admission.WithSweepAge(0)).Tick(e.ctx); err != nil {
		t.Fatalf("safety net with Kafka back: %v", err)
	}
	if left, _ := e.store.Outbox(e.ctx, "kq", 0); len(left) != 0 {
		t.Fatalf("outbox left %+v", left)
	}
	if n := len(rec.Topic(events.TopicUserPromoted)); n != 2 {
		t.Fatalf("user_promoted %d, want 2", n)
	}
	expired := rec.Topic(events.TopicBookingExpired)
	if len(expired) != 2 {
		t.Fatalf("booking_expired %+v, want one per hold", expired)
	}
	for _, ev := range expired {
		if ev.RequestID != events.NoRequestID {
			t.Fatalf("booking_expired request id %q", ev.RequestID)
		}
	}
	if n, repeats := pub.total(); repeats != 0 {
		t.Fatalf("RabbitMQ publishes %d after Kafka came back, repeats %d", n, repeats)
	}
}

// slowKafka blocks every write until released, then fails it.
type slowKafka struct {
	release chan struct{}
}

func (s *slowKafka) Publish(ctx context.Context, _ ...events.Event) error {
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return errors.New("kafka timed out")
}

// TestSlowKafkaPublishesRabbitMQOnce: while one
// announcer waits on a slow Kafka write, a sweep by another announcer must
// not publish the same entries' RabbitMQ side again: the RabbitMQ side is
// recorded as soon as RabbitMQ confirms. A retried slot-released message
// sweeps only entries older than the sweep age.
func TestSlowKafkaPublishesRabbitMQOnce(t *testing.T) {
	e := newEnv(t)
	pub := &countingPub{Publisher: e.pub}
	slow := &slowKafka{release: make(chan struct{})}
	e.event("sk", 2, time.Minute, 0, 4)
	e.enqueueWaiting("sk", 3)

	first := admission.NewPromoter(e.store, admission.New(e.store, pub, slow, e.log), e.log)
	done := make(chan error, 1)
	go func() {
		_, err := first.PromoteEvent(e.ctx, "sk")
		done <- err
	}()
	eventually(t, 30*time.Second, "the RabbitMQ side recorded while Kafka is in flight", func() bool {
		left, _ := e.store.Outbox(e.ctx, "sk", 0)
		marked := 0
		for _, x := range left {
			if x.Kind == booking.KindPromoted && x.RabbitDone {
				marked++
			}
		}
		return marked == 2
	})
	rec := &events.Recorder{}
	rec.FailWith(errors.New("kafka down"))
	second := admission.New(e.store, pub, rec, e.log)
	if _, err := second.SweepOutbox(e.ctx, "sk", 0); !errors.Is(err, admission.ErrKafkaPending) {
		t.Fatalf("sweep with Kafka down: %v, want ErrKafkaPending", err)
	}
	// two admissions of one promotion: a your_turn each and one timeout
	// for both (one deadline), once
	if n, repeats := pub.total(); n != 3 || repeats != 0 {
		t.Fatalf("RabbitMQ publishes %d (repeats %d), want 3 once each: %v", n, repeats, pub.sent)
	}
	close(slow.release)
	if err := <-done; !errors.Is(err, admission.ErrKafkaPending) {
		t.Fatalf("promotion with Kafka failing: %v, want ErrKafkaPending", err)
	}

	// a retried slot-released leaves fresh entries to their writer (here
	// a cancellation and a promotion not announced yet)
	if _, err := e.store.Cancel(e.ctx, "sk", "u001"); err != nil {
		t.Fatal(err)
	}
	if r, err := e.store.Promote(e.ctx, "sk", 0); err != nil || len(r.Promoted) != 1 {
		t.Fatalf("promote: %+v %v", r, err)
	}
	before, _ := pub.total()
	retried := admission.NewPromoter(e.store, admission.New(e.store, pub, &events.Recorder{}, e.log), e.log)
	body := mustJSON(t, messages.NewSlotReleased("sk", messages.ReasonCancellation, time.Now()))
	if err := retried.HandleSlotReleased(e.ctx, amqpx.Delivery{Body: body, RetryCount: 1}); err != nil {
		t.Fatalf("retried slot-released: %v", err)
	}
	if n, _ := pub.total(); n != before {
		t.Fatalf("a retried slot-released published %d fresh outbox entries' RabbitMQ side: %v", n-before, pub.sent)
	}
}
