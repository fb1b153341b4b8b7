package booking

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Regression tests of the orderings on the money path, against the
// real scripts.

// TestLatePaymentAfterRejoin: P1's hold and grace expire, the user joins
// again and pays P2; P1's success arrives after. P1 is a refund (its
// sequence and seat, a repeat answers the same), P2 completes normally.
func TestLatePaymentAfterRejoin(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2, Hold: time.Minute, Grace: 10 * time.Second})
	f.join("evt", "u")
	f.s.LockSeat(f.ctx, "evt", "u", "A1")
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "u", "p1"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	f.s.Promote(f.ctx, "evt", 0) // grace
	f.clock.Advance(11 * time.Second)
	f.s.Promote(f.ctx, "evt", 0) // released
	if st := f.state("evt", "u"); st != StateExpired {
		t.Fatalf("state %s", st)
	}
	lateAt := f.clock.Now()
	r := f.join("evt", "u")
	if r.State != StateActive || r.Sequence != 2 {
		t.Fatalf("rejoin %+v", r)
	}
	f.s.LockSeat(f.ctx, "evt", "u", "A2")
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "u", "p2"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	for i := range 2 {
		_, err := f.s.PaymentSuccess(f.ctx, "evt", "u", "p1")
		want := PaymentResult{SeatID: "A1", SeatIDs: []string{"A1"}, SeatPrices: []int64{0}, Sequence: 1, At: lateAt.Add(time.Second), Duplicate: i == 1}
		var late *LatePaymentError
		if !errors.Is(err, ErrLatePayment) || !errors.As(err, &late) || !cmp.Equal(late.Payment, want) {
			t.Fatalf("P1 success #%d: %v, want %+v late", i, err, want)
		}
	}
	// P1's failure now changes nothing either
	if res, err := f.s.PaymentFailure(f.ctx, "evt", "u", "p1"); err != nil || res.Outcome != OutcomeNoHold {
		t.Fatalf("P1 failure: %+v %v", res, err)
	}
	if st := f.state("evt", "u"); st != StatePaymentPending {
		t.Fatalf("P1 changed the new hold: %s", st)
	}
	res, err := f.s.PaymentSuccess(f.ctx, "evt", "u", "p2")
	if err != nil || res.Outcome != OutcomeCompleted || res.SeatID != "A2" || res.Sequence != 2 {
		t.Fatalf("P2: %+v %v", res, err)
	}
	if s := f.seats("evt"); s["A1"] != SeatAvailable || s["A2"] != SeatSold {
		t.Fatalf("seats %v", s)
	}
	if res, err := f.s.PaymentSuccess(f.ctx, "evt", "u", "p2"); err != nil || res.Outcome != OutcomeDuplicate {
		t.Fatalf("P2 again: %+v %v", res, err)
	}
	f.checkInvariants("evt")
}

// TestFailedPaymentThenRejoinFailureOfOldID: P1 fails, the user rejoins and
// pays with P2; a repeated failure of P1 must not release P2's hold, and a
// success of P1 is a refund.
func TestOldPaymentIDNeverTouchesNewHold(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2})
	f.join("evt", "u")
	f.s.LockSeat(f.ctx, "evt", "u", "A1")
	f.s.InitiatePayment(f.ctx, "evt", "u", "p1")
	if res, err := f.s.PaymentFailure(f.ctx, "evt", "u", "p1"); err != nil || res.Outcome != OutcomeFailed {
		t.Fatalf("P1 failure: %+v %v", res, err)
	}
	f.join("evt", "u")
	f.s.LockSeat(f.ctx, "evt", "u", "A1")
	f.s.InitiatePayment(f.ctx, "evt", "u", "p2")
	if res, err := f.s.PaymentFailure(f.ctx, "evt", "u", "p1"); err != nil || res.Outcome != OutcomeDuplicate {
		t.Fatalf("P1 failure again: %+v %v", res, err)
	}
	if _, err := f.s.PaymentSuccess(f.ctx, "evt", "u", "p1"); !errors.Is(err, ErrLatePayment) {
		t.Fatalf("P1 success after its failure: %v", err)
	}
	if st := f.state("evt", "u"); st != StatePaymentPending {
		t.Fatalf("state %s", st)
	}
	// another user's payment id is not this user's
	f.join("evt", "v")
	if _, err := f.s.PaymentSuccess(f.ctx, "evt", "v", "p2"); !errors.Is(err, ErrPaymentMismatch) {
		t.Fatalf("someone else's id: %v", err)
	}
	// an id is never issued twice
	f.s.LockSeat(f.ctx, "evt", "v", "A2")
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "v", "p1"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("reused payment id: %v", err)
	}
	f.checkInvariants("evt")
}

// TestImmediateAdmissionCountsGraceHolds: a room of 1 whose only hold is an
// overdue payment_pending (it will get grace) is full for a new join.
func TestImmediateAdmissionCountsGraceHolds(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1, Hold: time.Minute, Grace: 30 * time.Second})
	f.join("evt", "a")
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	f.s.InitiatePayment(f.ctx, "evt", "a", "pa")
	f.clock.Advance(time.Minute + time.Second) // overdue, no promotion yet
	if r := f.join("evt", "b"); r.State != StateWaiting {
		t.Fatalf("b admitted into a full room: %+v", r)
	}
	p, _ := f.s.Promote(f.ctx, "evt", 0)
	if len(p.Promoted) != 0 || f.state("evt", "a") != StatePaymentPending {
		t.Fatalf("promotion: %+v", p)
	}
	f.checkInvariants("evt")
	// An overdue hold that will not get grace is a free slot.
	f.clock.Advance(time.Minute)
	if r := f.join("evt", "c"); r.State != StateWaiting {
		t.Fatalf("c jumped the queue: %+v", r)
	}
	g := newFixture(t)
	g.event(EventConfig{Capacity: 1, Hold: time.Minute})
	g.join("evt", "a")
	g.clock.Advance(time.Minute + time.Second)
	if r := g.join("evt", "b"); r.State != StateActive {
		t.Fatalf("expired hold kept its slot: %+v", r)
	}
}

// TestOutboxKeyedPerJoin: while nothing is announced, a user admitted,
// cancelling, joining again and cancelling again keeps both rounds' facts.
func TestOutboxKeyedPerJoin(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2, Hold: time.Minute})
	for range 2 {
		f.join("evt", "u")
		if _, err := f.s.Cancel(f.ctx, "evt", "u"); err != nil {
			t.Fatal(err)
		}
	}
	f.join("evt", "u")
	f.clock.Advance(2 * time.Minute)
	f.s.Promote(f.ctx, "evt", 0) // expires round 3
	f.join("evt", "u")
	all, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range all {
		got[string(e.Kind)+"/"+string(rune('0'+e.Sequence))]++
	}
	want := map[string]int{"joined/1": 1, "promoted/1": 1, "cancelled/1": 1, "joined/2": 1, "promoted/2": 1,
		"cancelled/2": 1, "joined/3": 1, "promoted/3": 1, "expired/3": 1, "joined/4": 1, "promoted/4": 1}
	if len(got) != len(want) {
		t.Fatalf("outbox %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("outbox %v, want %v", got, want)
		}
	}
	// a repeated cancel returns its own round's entry
	f.s.Cancel(f.ctx, "evt", "u")
	r, _ := f.s.Cancel(f.ctx, "evt", "u")
	if !r.Duplicate || len(r.Outbox) != 1 || r.Outbox[0].Sequence != 4 {
		t.Fatalf("repeat cancel %+v", r)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", all...); err != nil {
		t.Fatal(err)
	}
	left, _ := f.s.Outbox(f.ctx, "evt", 0)
	if len(left) != 1 || left[0].Kind != KindCancelled || left[0].Sequence != 4 {
		t.Fatalf("left %+v", left)
	}
}

// TestMarkOutbox: one side's progress is kept; both sides remove the entry;
// a legacy entry keyed by user is read and acknowledged.
func TestMarkOutbox(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2})
	r := f.join("evt", "u")
	promoted := r.Outbox[1]
	if err := f.s.MarkOutbox(f.ctx, "evt", true, promoted); err != nil {
		t.Fatal(err)
	}
	all, _ := f.s.Outbox(f.ctx, "evt", 0)
	if len(all) != 2 || !all[1].RabbitDone || all[1].KafkaDone || all[0].RabbitDone {
		t.Fatalf("after rabbit mark: %+v", all)
	}
	// a mark on a stale copy changes nothing
	f.s.MarkOutbox(f.ctx, "evt", false, promoted)
	if again, _ := f.s.Outbox(f.ctx, "evt", 0); len(again) != 2 || !again[1].RabbitDone {
		t.Fatalf("stale mark: %+v", again)
	}
	if err := f.s.MarkOutbox(f.ctx, "evt", false, all[1]); err != nil {
		t.Fatal(err)
	}
	if left, _ := f.s.Outbox(f.ctx, "evt", 0); len(left) != 1 || left[0].Kind != KindJoined {
		t.Fatalf("both sides done: %+v", left)
	}
	// legacy field
	k := keysFor(f.s.prefix, "evt")
	f.rdb.HSet(f.ctx, k[kOutbox], "x:old:user", "7||A1|1000")
	all, _ = f.s.Outbox(f.ctx, "evt", 0)
	var legacy OutboxEntry
	for _, e := range all {
		if e.Kind == KindExpired {
			legacy = e
		}
	}
	if legacy.UserID != "old:user" || !legacy.LegacyKey || legacy.Sequence != 7 {
		t.Fatalf("legacy %+v", legacy)
	}
	f.s.AckOutbox(f.ctx, "evt", legacy)
	if n, _ := f.rdb.HExists(f.ctx, k[kOutbox], "x:old:user").Result(); n {
		t.Fatal("legacy entry not acknowledged")
	}
}

// TestCreateEventRetryRegisters: the event index SADD failed after the
// script created the event; the retry registers it.
func TestCreateEventRetryRegisters(t *testing.T) {
	f := newFixture(t)
	idx := eventsIndexKey(f.s.prefix)
	f.rdb.Set(f.ctx, idx, "not a set", 0) // SADD fails: WRONGTYPE
	cfg := EventConfig{ID: "evt", Rows: 1, SeatsPerRow: 2}
	if _, err := f.s.CreateEvent(f.ctx, cfg); err == nil || errors.Is(err, ErrEventExists) {
		t.Fatalf("first create: %v", err)
	}
	f.rdb.Del(f.ctx, idx)
	e, err := f.s.CreateEvent(f.ctx, cfg)
	if err != nil || e.ID != "evt" {
		t.Fatalf("retry: %+v %v", e, err)
	}
	ids, _ := f.s.EventIDs(f.ctx)
	if len(ids) != 1 || ids[0] != "evt" {
		t.Fatalf("index %v", ids)
	}
	// a different configuration under the same id is still refused
	if _, err := f.s.CreateEvent(f.ctx, EventConfig{ID: "evt", Rows: 2, SeatsPerRow: 2}); !errors.Is(err, ErrEventExists) {
		t.Fatalf("other config: %v", err)
	}
}

var _ = context.Background
var _ = strings.Cut

// TestAbandonEnabledLive: users who joined while
// abandon was 0 have no presence entry; switching abandonment on counts
// them present from that moment, and a connected one (Touch) stays present.
func TestAbandonEnabledLive(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1})
	for _, u := range []string{"a", "w1", "w2", "w3", "w4"} {
		f.join("evt", u)
	}
	f.clock.Advance(10 * time.Minute)
	on := 120 * time.Second
	if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Abandon: &on}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	f.s.Cancel(f.ctx, "evt", "a")
	p, _ := f.s.Promote(f.ctx, "evt", 0)
	if len(p.Abandoned) != 0 || len(p.Promoted) != 1 || p.Promoted[0].UserID != "w1" {
		t.Fatalf("right after switching on: %+v", p)
	}
	f.clock.Advance(60 * time.Second)
	if err := f.s.Touch(f.ctx, "evt", "w3", "w1"); err != nil { // w3 connected
		t.Fatal(err)
	}
	f.clock.Advance(100 * time.Second) // w2, w4: 161 s since switched on, never seen
	f.s.Cancel(f.ctx, "evt", "w1")
	p, _ = f.s.Promote(f.ctx, "evt", 0)
	if len(p.Promoted) != 1 || p.Promoted[0].UserID != "w3" || len(p.Abandoned) != 1 || p.Abandoned[0] != "w2" {
		t.Fatalf("after 161 s: %+v", p)
	}
	// Touch never adds a user who is not waiting
	if n, _ := f.rdb.ZCard(f.ctx, keysFor(f.s.prefix, "evt")[kSeen]).Result(); n != 0 {
		t.Fatalf("presence entries left: %d", n)
	}
	// switching off and on again restarts the clock for everyone waiting
	off := time.Duration(0)
	f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Abandon: &off})
	f.clock.Advance(time.Hour)
	f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Abandon: &on})
	f.s.Cancel(f.ctx, "evt", "w3")
	if p, _ = f.s.Promote(f.ctx, "evt", 0); len(p.Promoted) != 1 || p.Promoted[0].UserID != "w4" {
		t.Fatalf("after off and on: %+v", p)
	}
	f.checkInvariants("evt")
}
