package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// pendingSeats brings user to payment_pending on several seats of event
// "ms" (two priced sections) and returns the payment id and the amount.
func (hs *harness) pendingSeats(l *ledger.Ledger, user string, seats ...string) (string, int64) {
	ctx := context.Background()
	if _, err := hs.store.Enqueue(ctx, "ms", user); err != nil {
		hs.t.Fatal(err)
	}
	if _, err := hs.store.LockSeats(ctx, "ms", user, seats); err != nil {
		hs.t.Fatal(err)
	}
	h, err := hs.store.InitiatePayment(ctx, "ms", user, "pay_"+user)
	if err != nil {
		hs.t.Fatal(err)
	}
	if err := l.RecordPayment(ctx, ledger.Payment{PaymentID: h.PaymentID, EventID: "ms", UserID: user,
		SeatID: h.SeatID, Amount: h.AmountCents, Currency: h.Currency}); err != nil {
		hs.t.Fatal(err)
	}
	return h.PaymentID, h.AmountCents
}

// The webhook completes the whole order (every seat sold, one
// ledger line per seat with its price); a late payment refunds it whole.
func TestMultiSeatOrderCompletesAndLateRefundsWhole(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	ctx := context.Background()
	if _, err := hs.store.CreateEvent(ctx, booking.EventConfig{ID: "ms", Capacity: 4, Hold: 10 * time.Second, Grace: 5 * time.Second,
		Currency: "USD", Sections: []booking.Section{{Name: "Floor", Rows: 1, SeatsPerRow: 4, PriceCents: 5000},
			{Name: "Balcony", Rows: 1, SeatsPerRow: 4, PriceCents: 2000}}}); err != nil {
		t.Fatal(err)
	}
	pid, amount := hs.pendingSeats(l, "alice", "A1", "B2", "B3")
	if amount != 9000 {
		t.Fatalf("amount %d", amount)
	}
	wh := func(user, pid string) []byte {
		b, _ := json.Marshal(payment.Webhook{UserID: user, EventID: "ms", PaymentID: pid, Status: payment.StatusSuccess})
		return b
	}
	for range 2 {
		if r := hs.signed(payment.PathSuccess, wh("alice", pid)); r.code != 200 {
			t.Fatalf("success: %d %s", r.code, r.raw)
		}
	}
	o, err := l.OrderByPayment(ctx, pid)
	if err != nil || o.Status != ledger.StatusCompleted || o.Amount != 9000 || o.Currency != "USD" ||
		!slices.Equal(o.SeatIDs, []string{"A1", "B2", "B3"}) || !slices.Equal(o.SeatPrices, []int64{5000, 2000, 2000}) {
		t.Fatalf("order %v %+v", err, o)
	}
	if e, _ := hs.store.GetEvent(ctx, "ms"); e.Counts.Sold != 3 || e.Counts.Held != 0 {
		t.Fatalf("counts %+v", e.Counts)
	}

	// bob's hold of two seats ends before his payment lands: refund whole
	pid2, amount2 := hs.pendingSeats(l, "bob", "A2", "B4")
	hs.expireIn("ms", "bob")
	if r := hs.signed(payment.PathSuccess, wh("bob", pid2)); r.code != 200 || r.body["outcome"] != "refund" {
		t.Fatalf("late: %d %s", r.code, r.raw)
	}
	late, err := l.OrderByPayment(ctx, pid2)
	if err != nil || late.Status != ledger.StatusRefundDue || late.Amount != amount2 || amount2 != 7000 ||
		!slices.Equal(late.SeatIDs, []string{"A2", "B4"}) {
		t.Fatalf("late order %v %+v", err, late)
	}
	if e, _ := hs.store.GetEvent(ctx, "ms"); e.Counts.Sold != 3 || e.Counts.Held != 0 {
		t.Fatalf("counts after the late payment %+v", e.Counts)
	}
}
