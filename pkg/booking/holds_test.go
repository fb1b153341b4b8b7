package booking

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLockSeat(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 3, Hold: time.Minute})
	f.join("evt", "a")
	f.join("evt", "b")
	f.join("evt", "c")
	f.join("evt", "waiter")
	f.buy("evt", "c", "B5")
	tests := []struct {
		name, user, seat string
		want             error
	}{
		{"locks a free seat", "a", "A1", nil},
		{"same seat again is a no-op", "a", "A1", nil},
		{"taken seat", "b", "A1", ErrSeatUnavailable},
		{"sold seat", "b", "B5", ErrSeatUnavailable},
		{"unknown seat", "b", "Z9", ErrSeatUnknown},
		{"malformed seat", "b", "", ErrSeatUnknown},
		{"swap releases the previous seat", "a", "A2", nil},
		{"the released seat is free again", "b", "A1", nil},
		{"waiting user", "waiter", "A3", ErrInvalidState},
		{"completed user", "c", "A3", ErrInvalidState},
		{"unknown user", "nobody", "A3", ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.s.LockSeat(f.ctx, "evt", tc.user, tc.seat); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	want := map[string]SeatStatus{"A1": SeatHeld, "A2": SeatHeld, "B5": SeatSold}
	for id, st := range f.seats("evt") {
		if w := want[id]; (w == "" && st != SeatAvailable) || (w != "" && st != w) {
			t.Errorf("seat %s is %s", id, st)
		}
	}
	if c := f.counts("evt"); c.Held != 2 || c.Sold != 1 || c.Available != 7 {
		t.Errorf("counts %+v", c)
	}
	var se *StateError
	if _, err := f.s.LockSeat(f.ctx, "evt", "waiter", "A3"); !errors.As(err, &se) || se.State != StateWaiting {
		t.Errorf("state error %v", err)
	}
	t.Run("payment pending cannot change seat", func(t *testing.T) {
		f.s.InitiatePayment(f.ctx, "evt", "b", "pb")
		if _, err := f.s.LockSeat(f.ctx, "evt", "b", "A4"); !errors.Is(err, ErrInvalidState) {
			t.Fatal(err)
		}
	})
	t.Run("expired hold", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		if _, err := f.s.LockSeat(f.ctx, "evt", "a", "A5"); !errors.Is(err, ErrHoldExpired) {
			t.Fatal(err)
		}
	})
	if _, err := f.s.LockSeat(f.ctx, "nope", "a", "A1"); !errors.Is(err, ErrEventNotFound) {
		t.Fatal(err)
	}
	f.checkInvariants("evt")
}

func TestInitiatePayment(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2, Hold: time.Minute})
	f.join("evt", "a")
	f.join("evt", "b")
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "a", "p1"); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("without a seat: %v", err)
	}
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	ph, err := f.s.InitiatePayment(f.ctx, "evt", "a", "p1")
	want := PaymentHold{PaymentID: "p1", SeatID: "A1", SeatIDs: []string{"A1"}, Sequence: 1, ExpireAt: f.clock.Now().Add(time.Minute),
		Created: true, At: f.clock.Now(), Currency: DefaultCurrency, SeatPrices: []int64{0}}
	if err != nil || !cmp.Equal(ph, want) {
		t.Fatalf("initiate: %+v %v", ph, err)
	}
	f.clock.Advance(time.Second) // a repeat keeps the first time (payment_initiated is republished as is)
	again, err := f.s.InitiatePayment(f.ctx, "evt", "a", "p2")
	want.Created = false
	if err != nil || !cmp.Equal(again, want) {
		t.Fatalf("repeat returns the first payment: %+v %v", again, err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "nobody", "p3"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "a", "bad id"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatal(err)
	}
	f.s.LockSeat(f.ctx, "evt", "b", "A2")
	f.clock.Advance(time.Minute)
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "b", "p4"); !errors.Is(err, ErrHoldExpired) {
		t.Fatalf("expired: %v", err)
	}
	f.checkInvariants("evt")
}

func TestPaymentSuccess(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 4, Hold: time.Minute, Grace: 10 * time.Second})
	for _, u := range []string{"a", "b", "c", "d"} {
		f.join("evt", u)
	}
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	f.s.InitiatePayment(f.ctx, "evt", "a", "pa")
	f.s.LockSeat(f.ctx, "evt", "b", "A2")
	f.s.LockSeat(f.ctx, "evt", "c", "A3")
	f.s.InitiatePayment(f.ctx, "evt", "c", "pc")
	f.s.PaymentFailure(f.ctx, "evt", "c", "pc")

	r, err := f.s.PaymentSuccess(f.ctx, "evt", "a", "pa")
	if err != nil || !cmp.Equal(r, PaymentResult{Outcome: OutcomeCompleted, SeatID: "A1", SeatIDs: []string{"A1"}, SeatPrices: []int64{0}, Sequence: 1, At: f.clock.Now()}) {
		t.Fatalf("success: %+v %v", r, err)
	}
	if f.seats("evt")["A1"] != SeatSold || f.state("evt", "a") != StateCompleted {
		t.Fatal("seat not sold")
	}
	before := f.counts("evt")
	for _, tc := range []struct {
		name, user, pay string
		want            error
		outcome         Outcome
	}{
		{"duplicate is a no-op", "a", "pa", nil, OutcomeDuplicate},
		{"other payment id on a completed booking", "a", "forged", ErrPaymentMismatch, ""},
		{"no payment initiated", "b", "pb", ErrPaymentMismatch, ""},
		{"payment after failure is late", "c", "pc", ErrLatePayment, ""},
		{"unknown user", "zed", "p", ErrNotFound, ""},
		{"unknown event", "a", "pa", nil, OutcomeDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := "evt"
			if tc.name == "unknown event" {
				event, tc.want = "nope", ErrEventNotFound
			}
			r, err := f.s.PaymentSuccess(f.ctx, event, tc.user, tc.pay)
			if !errors.Is(err, tc.want) || (tc.want == nil && r.Outcome != tc.outcome) {
				t.Fatalf("%+v %v", r, err)
			}
		})
	}
	if after := f.counts("evt"); after != before {
		t.Fatalf("counts changed by rejected webhooks: %+v → %+v", before, after)
	}
	t.Run("a payment landing after the deadline but before release completes", func(t *testing.T) {
		f.s.InitiatePayment(f.ctx, "evt", "b", "pb")
		f.clock.Advance(65 * time.Second)
		if r, err := f.s.PaymentSuccess(f.ctx, "evt", "b", "pb"); err != nil || r.Outcome != OutcomeCompleted {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("a sold seat stays sold after every later step", func(t *testing.T) {
		f.clock.Advance(time.Hour)
		f.s.Promote(f.ctx, "evt", 0)
		f.s.HandleTimeout(f.ctx, "evt", "a")
		f.s.Cancel(f.ctx, "evt", "a")
		f.s.PaymentFailure(f.ctx, "evt", "a", "pa")
		if f.seats("evt")["A1"] != SeatSold || f.seats("evt")["A2"] != SeatSold {
			t.Fatal("sold seat freed")
		}
	})
	f.checkInvariants("evt")
}

func TestPaymentFailure(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 4, Hold: time.Minute, Grace: time.Second})
	for i, u := range []string{"a", "b", "c", "d"} {
		f.join("evt", u)
		f.s.LockSeat(f.ctx, "evt", u, "A"+strconv.Itoa(i+1))
		f.s.InitiatePayment(f.ctx, "evt", u, "p"+u)
	}
	f.join("evt", "next")
	r, err := f.s.PaymentFailure(f.ctx, "evt", "a", "pa")
	failedAt := f.clock.Now()
	if err != nil || !cmp.Equal(r, PaymentResult{Outcome: OutcomeFailed, SeatID: "A1", SeatIDs: []string{"A1"}, Sequence: 1, At: failedAt}) {
		t.Fatalf("failure: %+v %v", r, err)
	}
	f.clock.Advance(time.Second) // a repeat keeps the first time (payment_failed is republished as is)
	if r, err := f.s.PaymentFailure(f.ctx, "evt", "a", "pa"); err != nil ||
		!cmp.Equal(r, PaymentResult{Outcome: OutcomeDuplicate, SeatID: "A1", SeatIDs: []string{"A1"}, Sequence: 1, At: failedAt}) {
		t.Fatalf("repeated failure: %+v %v", r, err)
	}
	if f.seats("evt")["A1"] != SeatAvailable || f.state("evt", "a") != StateFailed {
		t.Fatal("failed payment kept the seat")
	}
	if c := f.counts("evt"); c.Active != 3 || c.Held != 3 {
		t.Fatalf("counts %+v", c)
	}
	f.s.PaymentSuccess(f.ctx, "evt", "b", "pb")
	for _, tc := range []struct {
		name, user, pay string
		want            error
		outcome         Outcome
	}{
		{"duplicate", "a", "pa", nil, OutcomeDuplicate},
		{"wrong payment id", "c", "forged", ErrPaymentMismatch, ""},
		{"after success", "b", "pb", ErrAlreadyCompleted, ""},
		{"unknown user", "zed", "p", ErrNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.s.PaymentFailure(f.ctx, "evt", tc.user, tc.pay)
			if !errors.Is(err, tc.want) || (tc.want == nil && r.Outcome != tc.outcome) {
				t.Fatalf("%+v %v", r, err)
			}
		})
	}
	t.Run("after the hold expired", func(t *testing.T) {
		f.clock.Advance(time.Minute + time.Second)
		f.s.Promote(f.ctx, "evt", 0)
		r, err := f.s.PaymentFailure(f.ctx, "evt", "c", "pc")
		if err != nil || r.Outcome != OutcomeNoHold {
			t.Fatalf("%+v %v", r, err)
		}
	})
	f.checkInvariants("evt")
}

func TestHandleTimeout(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 4, Hold: time.Minute, Grace: 20 * time.Second})
	for _, u := range []string{"a", "b", "c", "d"} {
		f.join("evt", u)
	}
	deadline := f.clock.Now().Add(time.Minute)
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	f.s.LockSeat(f.ctx, "evt", "b", "A2")
	f.s.InitiatePayment(f.ctx, "evt", "b", "pb")
	f.buy("evt", "c", "A3")

	step := func(user string, want TimeoutResult) {
		t.Helper()
		got, err := f.s.HandleTimeout(f.ctx, "evt", user)
		if err != nil {
			t.Fatal(err)
		}
		want.At = f.clock.Now() // every reply carries the call's time, Redis's
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("timeout %s (-want +got):\n%s", user, diff)
		}
	}
	step("a", TimeoutResult{Outcome: OutcomeNotDue, Sequence: 1, SeatID: "A1", ExpireAt: deadline})
	f.clock.Advance(time.Minute)
	// a release writes the expiry's outbox entry (booking_expired at the
	// deadline), returned again while it is not announced
	xa := []OutboxEntry{{Kind: KindExpired, UserID: "a", Sequence: 1, SeatID: "A1", ExpireAt: deadline, At: f.clock.Now()}}
	step("a", TimeoutResult{Outcome: OutcomeReleased, Sequence: 1, SeatID: "A1", ExpireAt: deadline, Outbox: xa})
	step("a", TimeoutResult{Outcome: OutcomeNoHold, Sequence: 1, SeatID: "A1", AlreadyExpired: true, Outbox: xa})
	if err := f.s.AckOutbox(f.ctx, "evt", xa...); err != nil {
		t.Fatal(err)
	}
	step("a", TimeoutResult{Outcome: OutcomeNoHold, Sequence: 1, SeatID: "A1", AlreadyExpired: true})
	if f.seats("evt")["A1"] != SeatAvailable {
		t.Fatal("timeout kept the seat")
	}
	step("b", TimeoutResult{Outcome: OutcomeExtended, Sequence: 2, SeatID: "A2", PaymentID: "pb", ExpireAt: deadline.Add(20 * time.Second)})
	step("b", TimeoutResult{Outcome: OutcomeNotDue, Sequence: 2, SeatID: "A2", PaymentID: "pb", ExpireAt: deadline.Add(20 * time.Second)})
	step("c", TimeoutResult{Outcome: OutcomeNoHold, Sequence: 3, SeatID: "A3", PaymentID: "pay-c"})
	step("nobody", TimeoutResult{Outcome: OutcomeNoHold})
	f.clock.Advance(20 * time.Second)
	step("b", TimeoutResult{Outcome: OutcomeReleased, Sequence: 2, SeatID: "A2", PaymentID: "pb", ExpireAt: deadline.Add(20 * time.Second),
		Outbox: []OutboxEntry{{Kind: KindExpired, UserID: "b", Sequence: 2, SeatID: "A2", ExpireAt: deadline.Add(20 * time.Second), At: f.clock.Now()}}})
	if st := f.state("evt", "b"); st != StateExpired {
		t.Fatalf("b is %s", st)
	}
	// d was reclaimed by a promotion; its late timeout asks to republish
	f.s.Promote(f.ctx, "evt", 0)
	step("d", TimeoutResult{Outcome: OutcomeNoHold, Sequence: 4, AlreadyExpired: true,
		Outbox: []OutboxEntry{{Kind: KindExpired, UserID: "d", Sequence: 4, ExpireAt: deadline, At: f.clock.Now()}}})
	if _, err := f.s.HandleTimeout(f.ctx, "nope", "a"); !errors.Is(err, ErrEventNotFound) {
		t.Fatal(err)
	}
	f.checkInvariants("evt")
}

func TestCancel(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 3})
	for _, u := range []string{"a", "b", "c", "w"} {
		f.join("evt", u)
	}
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	f.s.LockSeat(f.ctx, "evt", "b", "A2")
	f.s.InitiatePayment(f.ctx, "evt", "b", "pb")
	now := f.clock.Now()
	entry := func(user, from, seat string, seq int64) []OutboxEntry {
		return []OutboxEntry{{Kind: KindCancelled, UserID: user, Sequence: seq, SeatID: seat, From: from, At: now}}
	}
	for _, tc := range []struct {
		name, user string
		want       CancelResult
		err        error
	}{
		{"from the queue", "w", CancelResult{From: "queue", Sequence: 4, Outbox: entry("w", "queue", "", 4)}, nil},
		{"from the room, freeing the seat", "a", CancelResult{From: "active", SeatID: "A1", Sequence: 1, Outbox: entry("a", "active", "A1", 1)}, nil},
		{"from the room without a seat", "c", CancelResult{From: "active", Sequence: 3, Outbox: entry("c", "active", "", 3)}, nil},
		{"again, not yet announced: same entry", "a", CancelResult{From: "active", SeatID: "A1", Sequence: 1, Duplicate: true, Outbox: entry("a", "active", "A1", 1)}, nil},
		{"during payment", "b", CancelResult{}, ErrCannotCancel},
		{"unknown user", "zed", CancelResult{}, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.s.Cancel(f.ctx, "evt", tc.user)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	if f.seats("evt")["A1"] != SeatAvailable || f.state("evt", "a") != StateCancelled || f.state("evt", "w") != StateCancelled {
		t.Fatal("cancel left state behind")
	}
	if c := f.counts("evt"); c.Active != 1 || c.Waiting != 0 || c.Held != 1 {
		t.Fatalf("counts %+v", c)
	}
	t.Run("again after the announcement: nothing pending", func(t *testing.T) {
		r, _ := f.s.Cancel(f.ctx, "evt", "a")
		if err := f.s.AckOutbox(f.ctx, "evt", r.Outbox...); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.Cancel(f.ctx, "evt", "a")
		if err != nil || !got.Duplicate || len(got.Outbox) != 0 || got.Sequence != 1 {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("a finished booking cannot be cancelled", func(t *testing.T) {
		f.s.PaymentSuccess(f.ctx, "evt", "b", "pb")
		if _, err := f.s.Cancel(f.ctx, "evt", "b"); !errors.Is(err, ErrInvalidState) {
			t.Fatal(err)
		}
	})
	f.checkInvariants("evt")
}
