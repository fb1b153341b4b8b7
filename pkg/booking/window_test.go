package booking

import (
	"errors"
	"testing"
	"time"
)

// TestSalesEndStopsAdmission: past the sales end (Redis's clock) nobody
// joins and nobody is admitted, even into a free slot; a waiting user's
// position and a stranger's say the sale ended; holds still expire.
func TestSalesEndStopsAdmission(t *testing.T) {
	f := newFixture(t)
	end := f.clock.Now().Add(time.Hour)
	f.event(EventConfig{ID: "ends", Capacity: 1, Hold: time.Minute, SalesEnd: end})
	if r := f.join("ends", "in"); r.State != StateActive {
		t.Fatalf("first join: %+v", r)
	}
	f.join("ends", "waits")
	if st, err := f.s.Position(f.ctx, "ends", "waits"); err != nil || st.SalesEnded {
		t.Fatalf("before the end: %+v %v", st, err)
	}
	f.clock.Set(end) // the end itself is still inside the window
	if st, err := f.s.Position(f.ctx, "ends", "waits"); err != nil || st.SalesEnded {
		t.Fatalf("at the end: %+v %v", st, err)
	}
	f.clock.Set(end.Add(time.Millisecond))
	if _, err := f.s.Enqueue(f.ctx, "ends", "late"); !errors.Is(err, ErrSalesEnded) {
		t.Fatalf("join after the end: %v, want ErrSalesEnded", err)
	}
	if _, err := f.s.Cancel(f.ctx, "ends", "in"); err != nil {
		t.Fatal(err)
	}
	p, err := f.s.Promote(f.ctx, "ends", 0)
	if err != nil || p.Reason != "sales_ended" || len(p.Promoted) != 0 {
		t.Fatalf("promote after the end into a free slot: %+v %v", p, err)
	}
	st, err := f.s.Position(f.ctx, "ends", "waits")
	if err != nil || st.State != StateWaiting || !st.SalesEnded || st.Position != 1 {
		t.Fatalf("waiting after the end: %+v %v", st, err)
	}
	var nf *NotFoundError
	if _, err := f.s.Position(f.ctx, "ends", "stranger"); !errors.As(err, &nf) || !nf.Status.SalesEnded {
		t.Fatalf("stranger after the end: %v", err)
	}
	if e, err := f.s.GetEvent(f.ctx, "ends"); err != nil || !e.SalesEnded || !e.FinishAfterEnd {
		t.Fatalf("event after the end: %+v %v", e, err)
	}
}

// TestSalesEndReclaimsHolds: a hold that runs out after the sales end is
// still reclaimed by promotion, which admits nobody in its place.
func TestSalesEndReclaimsHolds(t *testing.T) {
	f := newFixture(t)
	end := f.clock.Now().Add(30 * time.Second)
	f.event(EventConfig{ID: "reclaim", Capacity: 1, Hold: time.Minute, SalesEnd: end})
	f.join("reclaim", "in")
	f.join("reclaim", "waits")
	f.clock.Advance(2 * time.Minute)
	p, err := f.s.Promote(f.ctx, "reclaim", 0)
	if err != nil || p.Reason != "sales_ended" || len(p.Expired) != 1 || p.Expired[0].UserID != "in" || len(p.Promoted) != 0 {
		t.Fatalf("promote: %+v %v", p, err)
	}
	if st := f.state("reclaim", "waits"); st != StateWaiting {
		t.Fatalf("waiting user: %s", st)
	}
}

// TestFinishAfterEnd: by default a user in the room at the sales end
// selects, pays and completes within their hold; after the hold nothing
// starts.
func TestFinishAfterEnd(t *testing.T) {
	f := newFixture(t)
	end := f.clock.Now().Add(30 * time.Second)
	f.event(EventConfig{ID: "finish", Capacity: 2, Hold: time.Minute, SalesEnd: end})
	f.join("finish", "buyer")
	f.join("finish", "slow")
	f.clock.Advance(45 * time.Second) // past the end, inside the holds
	f.buy("finish", "buyer", "A1")
	f.clock.Advance(30 * time.Second) // past the holds
	if _, err := f.s.LockSeat(f.ctx, "finish", "slow", "A2"); !errors.Is(err, ErrHoldExpired) {
		t.Fatalf("select after the hold: %v, want ErrHoldExpired", err)
	}
	if c := f.counts("finish"); c.Sold != 1 {
		t.Fatalf("sold %d, want 1", c.Sold)
	}
}

// TestHoldsEndWithSale: an event whose holds end with the sale refuses
// seat selection and payment start after the end, and a payment
// confirmed after it is late (a refund), its seats not sold; a payment
// confirmed before the end completes.
func TestHoldsEndWithSale(t *testing.T) {
	f := newFixture(t)
	end := f.clock.Now().Add(30 * time.Second)
	e := f.event(EventConfig{ID: "strict", Capacity: 4, Hold: time.Minute, SalesEnd: end, HoldsEndWithSale: true})
	if e.FinishAfterEnd {
		t.Fatal("finish_after_end true for an event whose holds end with the sale")
	}
	for _, u := range []string{"early", "picker", "payer", "paying"} {
		f.join("strict", u)
	}
	f.buy("strict", "early", "A1")
	if _, err := f.s.LockSeat(f.ctx, "strict", "payer", "A3"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.LockSeat(f.ctx, "strict", "paying", "A4"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "strict", "paying", "pay-paying"); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(end.Add(time.Millisecond))
	if _, err := f.s.LockSeat(f.ctx, "strict", "picker", "A2"); !errors.Is(err, ErrSalesEnded) {
		t.Fatalf("select after the end: %v, want ErrSalesEnded", err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "strict", "payer", "pay-payer"); !errors.Is(err, ErrSalesEnded) {
		t.Fatalf("payment start after the end: %v, want ErrSalesEnded", err)
	}
	_, err := f.s.PaymentSuccess(f.ctx, "strict", "paying", "pay-paying")
	var late *LatePaymentError
	if !errors.As(err, &late) || late.Payment.Duplicate || late.Payment.SeatID != "A4" {
		t.Fatalf("webhook after the end: %v, want a late payment of A4", err)
	}
	if _, err := f.s.PaymentSuccess(f.ctx, "strict", "paying", "pay-paying"); !errors.As(err, &late) || !late.Payment.Duplicate {
		t.Fatalf("the webhook again: %v, want a late duplicate", err)
	}
	if c := f.counts("strict"); c.Sold != 1 {
		t.Fatalf("sold %d, want 1 (the payment before the end)", c.Sold)
	}
	if st := f.seats("strict"); st["A4"] == SeatSold || st["A1"] != SeatSold {
		t.Fatalf("seats: %v", st)
	}
}

// TestWindowSettingsUpdate: finish_after_end and refundable_until change
// with UpdateEvent, are refused out of bounds, and a refundable order is
// one before the deadline.
func TestWindowSettingsUpdate(t *testing.T) {
	f := newFixture(t)
	until := f.clock.Now().Add(24 * time.Hour)
	e := f.event(EventConfig{ID: "settings", RefundableUntil: until})
	if !e.FinishAfterEnd || !e.RefundableUntil.Equal(until) {
		t.Fatalf("created: %+v", e)
	}
	if !e.Refundable(until) || e.Refundable(until.Add(time.Millisecond)) {
		t.Fatal("refundable until the deadline, inclusive, and not after")
	}
	no, none := false, time.Time{}
	e, err := f.s.UpdateEvent(f.ctx, "settings", EventUpdate{FinishAfterEnd: &no, RefundableUntil: &none})
	if err != nil || e.FinishAfterEnd || !e.RefundableUntil.IsZero() || e.Refundable(f.clock.Now()) {
		t.Fatalf("updated: %+v %v", e, err)
	}
	old := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := f.s.UpdateEvent(f.ctx, "settings", EventUpdate{RefundableUntil: &old}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("refundable_until before 1970: %v, want ErrInvalidArgument", err)
	}
}
