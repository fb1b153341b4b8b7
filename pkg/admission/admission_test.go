package admission_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// watchCapacity samples the event's room every few milliseconds until the
// test ends and fails it if the room ever holds more than capacity users.
func watchCapacity(t *testing.T, e *env, id string, capacity int64) {
	stop := make(chan struct{})
	done := make(chan struct{})
	var max atomic.Int64
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := e.store.Counts(context.Background(), id)
			if err == nil && c.Active > max.Load() {
				max.Store(c.Active)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		if m := max.Load(); m > capacity {
			t.Errorf("room held %d users at once, capacity %d", m, capacity)
		}
	})
}

func sequences(evs []events.Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Sequence
	}
	return out
}

func oneTo(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// drain runs the whole loop by messages only (no safety net): one
// slot-released message admits the first users; their timeouts release
// them and promote the next, until the queue is empty. disturb runs
// meanwhile (e.g. cutting connections).
func drain(t *testing.T, n, capacity int, disturb func(e *env)) {
	e := newEnv(t)
	const id = "evt-drain"
	e.event(id, capacity, time.Second, time.Second, n)
	users := e.enqueueWaiting(id, n)
	col := e.collect(events.TopicUserPromoted, events.TopicBookingExpired)
	e.promoter(1)
	e.timeouts(4)
	watchCapacity(t, e, id, int64(capacity))

	e.slotReleased(id)
	if disturb != nil {
		disturb(e)
	}
	rounds := (n + capacity - 1) / capacity
	eventually(t, time.Duration(rounds)*2*time.Second+10*time.Second, "the queue to drain", func() bool {
		c := e.counts(id)
		return c.Waiting == 0 && c.Active == 0 && len(col.unique(events.TopicBookingExpired)) == n &&
			len(col.unique(events.TopicUserPromoted)) == n
	})
	for _, u := range users {
		if s := e.state(id, u); s != booking.StateExpired {
			t.Errorf("%s: state %s, want expired", u, s)
		}
	}
	if diff := cmp.Diff(oneTo(n), sequences(col.unique(events.TopicUserPromoted))); diff != "" {
		t.Errorf("admission order (user_promoted sequences) differs from join order (-want +got):\n%s", diff)
	}
	if got := e.counter("boxoffice_admission_promotions_total"); got != float64(n) {
		t.Errorf("promotions = %v, want %d", got, n)
	}
}

func TestQueueDrainsByMessagesInFIFOOrder(t *testing.T) {
	t.Parallel()
	drain(t, 12, 3, nil)
}

func TestConsumersSurviveClosedConnections(t *testing.T) {
	t.Parallel()
	drain(t, 20, 4, func(e *env) {
		// Cut every connection (publisher, both consumers) at moments
		// when promotions, delayed timeouts and releases are in flight.
		vhost := amqptest.VhostOf(e.url)
		start := time.Now()
		for _, at := range []time.Duration{300 * time.Millisecond, 1100 * time.Millisecond, 1500 * time.Millisecond, 2700 * time.Millisecond} {
			time.Sleep(time.Until(start.Add(at)))
			t.Logf("closed %d connections at %v", amqptest.CloseConnections(t, vhost), at)
		}
	})
}

func TestDuplicateSlotReleasedNeverAdmitsPastCapacity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id, capacity, waiting = "evt-dup", 5, 100
	e.event(id, capacity, time.Minute, 0, 200)
	e.enqueueWaiting(id, waiting)
	watchCapacity(t, e, id, capacity)
	e.promoter(4)
	e.promoter(4) // a second instance

	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { e.slotReleased(id) })
	}
	wg.Wait()
	eventually(t, 20*time.Second, "50 slot-released messages handled", func() bool {
		return e.counter("boxoffice_admission_slot_released_total", "reason", messages.ReasonCancellation) == 50
	})
	c := e.counts(id)
	if c.Active != capacity || c.Waiting != waiting-capacity {
		t.Errorf("active %d waiting %d, want %d and %d", c.Active, c.Waiting, capacity, waiting-capacity)
	}
	if got := e.counter("boxoffice_admission_promotions_total"); got != capacity {
		t.Errorf("promotions = %v, want %d", got, capacity)
	}
	if got := e.queueDepth(amqpx.DeadLetterQueue(amqpx.SlotReleasedQueue)); got != 0 {
		t.Errorf("%d messages dead-lettered", got)
	}
}

func TestDuplicateTimeoutsReleaseOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "evt-dupto"
	e.event(id, 1, time.Second, 0, 10)
	e.enqueueWaiting(id, 3) // u001 u002 u003
	col := e.collect(events.TopicBookingExpired)
	e.promoter(1)
	e.timeouts(4)
	watchCapacity(t, e, id, 1)

	e.slotReleased(id)
	eventually(t, 5*time.Second, "u001 admitted", func() bool { return e.state(id, "u001") == booking.StateActive })
	// Later admissions get a long hold, so only u001's timeout is in play.
	hold := time.Minute
	if _, err := e.store.UpdateEvent(e.ctx, id, booking.EventUpdate{Hold: &hold}); err != nil {
		t.Fatal(err)
	}
	st, _ := e.store.Position(e.ctx, id, "u001")
	dup := messages.NewTimeout(id, "u001", st.Sequence, st.ExpireAt, time.Now())
	// Four copies besides the scheduled one, some before and some after the
	// deadline, all in flight at once.
	for i := range 4 {
		delay := time.Until(st.ExpireAt) + time.Duration(i-1)*50*time.Millisecond
		if err := e.pub.PublishDelayed(e.ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey,
			amqpx.Message{Body: mustJSON(t, dup)}, delay); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "u002 admitted and every timeout handled", func() bool {
		return e.state(id, "u002") == booking.StateActive &&
			e.counter("boxoffice_admission_timeouts_total", "outcome", "released")+
				e.counter("boxoffice_admission_timeouts_total", "outcome", "no_hold") >= 5
	})
	time.Sleep(300 * time.Millisecond) // any extra promotion would show now
	if got := e.counter("boxoffice_admission_timeouts_total", "outcome", "released"); got != 1 {
		t.Errorf("released %v times, want once", got)
	}
	if s := e.state(id, "u003"); s != booking.StateWaiting {
		t.Errorf("u003 is %s: the slot was freed more than once", s)
	}
	if c := e.counts(id); c.Active != 1 || c.Waiting != 1 {
		t.Errorf("active %d waiting %d, want 1 and 1", c.Active, c.Waiting)
	}
	eventually(t, 5*time.Second, "booking_expired", func() bool { return len(col.of(events.TopicBookingExpired)) > 0 })
	if u := col.unique(events.TopicBookingExpired); len(u) != 1 || u[0].UserID != "u001" {
		t.Errorf("booking_expired unique ids: %+v, want one for u001", u)
	}
}

func TestPaymentPendingGetsGraceThenLatePaymentFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "evt-grace"
	e.event(id, 1, time.Second, time.Second, 5)
	e.promoter(1)
	e.timeouts(2)

	// The gateway's path: an immediate admission is announced by the caller.
	j, err := e.store.Enqueue(e.ctx, id, "payer")
	if err != nil || j.State != booking.StateActive {
		t.Fatalf("enqueue: %v %+v", err, j)
	}
	if err := e.ann.Announce(e.ctx, id, j.Outbox); err != nil {
		t.Fatalf("announce: %v", err)
	}
	if _, err := e.store.LockSeat(e.ctx, id, "payer", "A1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.InitiatePayment(e.ctx, id, "payer", "pay-1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the grace period", func() bool {
		return e.counter("boxoffice_admission_timeouts_total", "outcome", "extended") == 1
	})
	if s := e.state(id, "payer"); s != booking.StatePaymentPending {
		t.Fatalf("after the first timeout: %s, want payment_pending", s)
	}
	eventually(t, 5*time.Second, "the release after the grace period", func() bool {
		return e.state(id, "payer") == booking.StateExpired
	})
	if since := time.Since(j.ExpireAt); since < time.Second {
		t.Errorf("released %v after the deadline, before the 1s grace ended", since)
	}
	if _, err := e.store.PaymentSuccess(e.ctx, id, "payer", "pay-1"); !errors.Is(err, booking.ErrLatePayment) {
		t.Errorf("late payment: %v, want ErrLatePayment", err)
	}
	seats, err := e.store.Seats(e.ctx, id)
	if err != nil || seats[0].Status != booking.SeatAvailable {
		t.Errorf("seat A1 after release: %+v %v", seats, err)
	}
}

func TestSafetyNetAnnouncesACrashedPromotion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "evt-crash"
	e.event(id, 3, time.Second, 0, 10)
	e.enqueueWaiting(id, 5)
	col := e.collect(events.TopicUserPromoted)
	var mu sync.Mutex
	timeouts := map[string]time.Time{}
	e.consume(amqpx.TimeoutQueue, func(_ context.Context, d amqpx.Delivery) error {
		m, err := messages.DecodeTimeout(d.Body)
		if err != nil {
			return amqpx.Permanent(err)
		}
		mu.Lock()
		for _, h := range m.Holds() {
			if _, ok := timeouts[h.UserID]; !ok {
				timeouts[h.UserID] = time.Now()
			}
		}
		mu.Unlock()
		return nil
	}, 1)

	// Promote and "crash" before announcing.
	res, err := e.store.Promote(e.ctx, id, 0)
	if err != nil || len(res.Promoted) != 3 {
		t.Fatalf("promote: %v %+v", err, res)
	}
	p := e.idlePromoter()
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.RunSafetyNet(ctx, 200*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })

	eventually(t, 3*time.Second, "user_promoted for the crashed promotion", func() bool {
		return len(col.unique(events.TopicUserPromoted)) >= 3
	})
	if diff := cmp.Diff([]int64{1, 2, 3}, sequences(col.unique(events.TopicUserPromoted)[:3])); diff != "" {
		t.Errorf("user_promoted (-want +got):\n%s", diff)
	}
	eventually(t, 5*time.Second, "the timeouts of the crashed promotion", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(timeouts) >= 3
	})
	for _, a := range res.Promoted {
		mu.Lock()
		at, ok := timeouts[a.UserID]
		mu.Unlock()
		if !ok {
			t.Errorf("no timeout for %s", a.UserID)
		} else if at.Before(a.ExpireAt) {
			t.Errorf("timeout of %s delivered %v before its deadline", a.UserID, a.ExpireAt.Sub(at))
		}
	}
}

func TestMalformedMessagesAreDeadLettered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.promoter(1)
	e.timeouts(1)
	publishRaw(t, e, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, []byte("not json"))
	publishRaw(t, e, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, []byte(`{"event_id":"bad{id}"}`))
	publishRaw(t, e, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, []byte(`{"event_id":"e1"}`))
	eventually(t, 10*time.Second, "three dead-lettered messages", func() bool {
		return e.queueDepth(amqpx.DeadLetterQueue(amqpx.SlotReleasedQueue)) == 2 &&
			e.queueDepth(amqpx.DeadLetterQueue(amqpx.TimeoutQueue)) == 1
	})
	if n := e.queueDepth(amqpx.SlotReleasedQueue) + e.queueDepth(amqpx.TimeoutQueue); n != 0 {
		t.Errorf("%d messages left in the work queues", n)
	}
}

func TestUnknownEventIsAcked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.promoter(1)
	e.timeouts(1)
	e.slotReleased("no-such-event")
	publishRaw(t, e, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey,
		mustJSON(t, messages.NewTimeout("no-such-event", "u1", 1, time.Now(), time.Now())))
	time.Sleep(500 * time.Millisecond)
	for _, q := range []string{amqpx.SlotReleasedQueue, amqpx.TimeoutQueue,
		amqpx.DeadLetterQueue(amqpx.SlotReleasedQueue), amqpx.DeadLetterQueue(amqpx.TimeoutQueue)} {
		if n := e.queueDepth(q); n != 0 {
			t.Errorf("%s holds %d messages", q, n)
		}
	}
}

func TestSoldOutIsBroadcastOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "evt-soldout"
	e.event(id, 2, time.Minute, 0, 1)
	e.enqueueWaiting(id, 3)
	p := e.idlePromoter()
	if _, err := p.PromoteEvent(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.LockSeat(e.ctx, id, "u001", "A1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.InitiatePayment(e.ctx, id, "u001", "pay-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PaymentSuccess(e.ctx, id, "u001", "pay-1"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.PromoteEvent(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.counter("boxoffice_admission_sold_out_broadcasts_total"); got != 1 {
		t.Errorf("sold_out broadcast %v times, want 1", got)
	}
}

// A cancellation whose caller died before announcing it (the gateway's
// publish failed, the client gave up) is announced by the safety net:
// booking_cancelled reaches Kafka once per id, and the slot it freed goes
// to the next user in line.
func TestSafetyNetAnnouncesACrashedCancellation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "evt-cancel"
	e.event(id, 1, time.Minute, 0, 10)
	users := e.enqueueWaiting(id, 2)
	col := e.collect(events.TopicBookingCancelled, events.TopicUserPromoted)
	e.promoter(1)

	first, err := e.store.Promote(e.ctx, id, 0)
	if err != nil || len(first.Promoted) != 1 {
		t.Fatalf("promote: %+v %v", first, err)
	}
	if err := e.ann.Announce(e.ctx, id, first.Outbox); err != nil {
		t.Fatal(err)
	}
	// cancel, then "crash": nothing announced
	res, err := e.store.Cancel(e.ctx, id, users[0])
	if err != nil || res.From != "active" || len(res.Outbox) != 1 {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	p := e.idlePromoter()
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.RunSafetyNet(ctx, 200*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })

	eventually(t, 5*time.Second, "booking_cancelled of the crashed cancel", func() bool {
		return len(col.unique(events.TopicBookingCancelled)) == 1
	})
	got := col.unique(events.TopicBookingCancelled)[0]
	if got.UserID != users[0] || got.Reason != "active" || got.Sequence != res.Sequence {
		t.Fatalf("booking_cancelled %+v", got)
	}
	eventually(t, 5*time.Second, "the next user admitted into the freed slot", func() bool {
		return e.state(id, users[1]) == booking.StateActive
	})
	// once fully announced (Kafka and the confirmed slot-released), the
	// entry is acknowledged: a repeat cancel has nothing left to announce
	eventually(t, 5*time.Second, "the cancellation acknowledged in the outbox", func() bool {
		again, err := e.store.Cancel(e.ctx, id, users[0])
		return err == nil && again.Duplicate && len(again.Outbox) == 0
	})
}

// A waiting user absent when their turn comes is dropped, takes no slot, and
// analytics see them leave: booking_cancelled with reason abandoned.
func TestAbandonedUserIsAnnounced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "evt-abandon"
	e.event(id, 1, time.Minute, 0, 10)
	abandon := 300 * time.Millisecond
	if _, err := e.store.UpdateEvent(e.ctx, id, booking.EventUpdate{Abandon: &abandon}); err != nil {
		t.Fatal(err)
	}
	users := e.enqueueWaiting(id, 3)
	col := e.collect(events.TopicBookingCancelled, events.TopicUserPromoted)
	time.Sleep(400 * time.Millisecond)
	if err := e.store.Touch(e.ctx, id, users[1], users[2]); err != nil { // users[0] went away
		t.Fatal(err)
	}
	res, err := e.store.Promote(e.ctx, id, 0)
	if err != nil || len(res.Promoted) != 1 || res.Promoted[0].UserID != users[1] {
		t.Fatalf("promote: %+v %v", res, err)
	}
	if err := e.ann.Announce(e.ctx, id, res.Outbox); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "booking_cancelled for the absent user", func() bool {
		return len(col.unique(events.TopicBookingCancelled)) == 1
	})
	got := col.unique(events.TopicBookingCancelled)[0]
	if got.UserID != users[0] || got.Reason != events.CancelledAbandoned || got.Sequence != 1 {
		t.Fatalf("booking_cancelled %+v", got)
	}
	if left, _ := e.store.Outbox(e.ctx, id, 0); len(left) != 0 {
		t.Fatalf("outbox after announce: %+v", left)
	}
}

// TestOnePromotionOneTimeout: the holds one promotion admits share their
// deadline and one timeout message, and when it arrives every one of
// them expires and is announced.
func TestOnePromotionOneTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "evt-batchto"
	e.event(id, 3, time.Second, 0, 10)
	e.enqueueWaiting(id, 5) // u001…u005
	col := e.collect(events.TopicBookingExpired)
	var mu sync.Mutex
	var bodies []messages.Timeout
	h := admission.NewTimeoutHandler(e.store, e.ann, e.log)
	e.consume(amqpx.TimeoutQueue, func(ctx context.Context, d amqpx.Delivery) error {
		if m, err := messages.DecodeTimeout(d.Body); err == nil {
			mu.Lock()
			bodies = append(bodies, m)
			mu.Unlock()
		}
		return h.Handle(ctx, d)
	}, 2)
	p := e.idlePromoter()
	// Later admissions get a long hold: only the first promotion's timeout
	// is due in the test.
	if n, err := p.PromoteEvent(e.ctx, id); err != nil || n != 3 {
		t.Fatalf("promote: %d %v", n, err)
	}
	hold := time.Hour
	if _, err := e.store.UpdateEvent(e.ctx, id, booking.EventUpdate{Hold: &hold}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "u001..u003 expired", func() bool {
		return e.state(id, "u001") == booking.StateExpired && e.state(id, "u002") == booking.StateExpired &&
			e.state(id, "u003") == booking.StateExpired
	})
	mu.Lock()
	if len(bodies) != 1 || len(bodies[0].Holds()) != 3 {
		t.Errorf("timeout messages %+v, want one naming the 3 holds", bodies)
	}
	mu.Unlock()
	eventually(t, 5*time.Second, "booking_expired of each", func() bool { return len(col.unique(events.TopicBookingExpired)) == 3 })
	// (the outcome is counted once a hold's announcement returned)
	eventually(t, 5*time.Second, "3 holds released by the timeout", func() bool {
		return e.counter("boxoffice_admission_timeouts_total", "outcome", "released") == 3
	})
	time.Sleep(200 * time.Millisecond) // a fourth would show now
	if got := e.counter("boxoffice_admission_timeouts_total", "outcome", "released"); got != 3 {
		t.Errorf("released %v holds, want 3", got)
	}
}
