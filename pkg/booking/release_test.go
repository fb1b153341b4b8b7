package booking

import (
	"errors"
	"slices"
	"testing"
)

func TestReleaseSoldPutsCancelledSeatsBackOnSale(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Rows: 1, SeatsPerRow: 4, Capacity: 2, MaxSeatsPerOrder: 3})
	f.join("evt", "u1")
	if _, err := f.s.Promote(f.ctx, "evt", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.LockSeats(f.ctx, "evt", "u1", []string{"A1", "A2", "A3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "u1", "pay-u1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.PaymentSuccess(f.ctx, "evt", "u1", "pay-u1"); err != nil {
		t.Fatal(err)
	}
	// another payment id, or a seat not the buyer's: nothing changes
	if r, err := f.s.ReleaseSold(f.ctx, "evt", "u1", "pay-other", []string{"A1"}); err != nil || r.Released != 0 || !slices.Equal(r.Left, []string{"A1"}) {
		t.Fatalf("foreign payment: %+v %v", r, err)
	}
	r, err := f.s.ReleaseSold(f.ctx, "evt", "u1", "pay-u1", []string{"A2", "A4"})
	if err != nil || r.Released != 1 || !slices.Equal(r.Left, []string{"A4"}) {
		t.Fatalf("release A2: %+v %v", r, err)
	}
	seats := f.seats("evt")
	if seats["A1"] != SeatSold || seats["A2"] != SeatAvailable || seats["A3"] != SeatSold {
		t.Fatalf("seats after a partial release: %v", seats)
	}
	if c := f.counts("evt"); c.Sold != 2 {
		t.Fatalf("sold %d, want 2", c.Sold)
	}
	f.checkInvariants("evt")
	// a repeat changes nothing
	if r, err := f.s.ReleaseSold(f.ctx, "evt", "u1", "pay-u1", []string{"A2"}); err != nil || r.Released != 0 {
		t.Fatalf("repeat: %+v %v", r, err)
	}
	if c := f.counts("evt"); c.Sold != 2 {
		t.Fatalf("sold %d after a repeat, want 2", c.Sold)
	}
	if r, err := f.s.ReleaseSold(f.ctx, "evt", "u1", "pay-u1", []string{"A1", "A3"}); err != nil || r.Released != 2 {
		t.Fatalf("release the rest: %+v %v", r, err)
	}
	st, err := f.s.SeatStatuses(f.ctx, "evt")
	if err != nil || st != "aaaa" {
		t.Fatalf("status string %q %v", st, err)
	}
	f.checkInvariants("evt")
	if _, err := f.s.ReleaseSold(f.ctx, "nope", "u1", "pay-u1", []string{"A1"}); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
}
