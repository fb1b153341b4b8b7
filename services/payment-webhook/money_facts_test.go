package main

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// TestPaymentFactsCarryTheLedgerAmount is issue 20's revenue point: the
// payment facts carry the amount and currency the ledger recorded when
// the payment was issued: booking_completed, payment_failed and
// payment_late (each also on a repeated webhook).
func TestPaymentFactsCarryTheLedgerAmount(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	l, _ := withLedger(t, hs)
	ctx := context.Background()
	sold, failed, late := hs.pending("ann", "A1"), hs.pending("bob", "A2"), hs.pending("cat", "A3")
	issue(t, l, "ann", "A1", sold)
	issue(t, l, "bob", "A2", failed)
	issue(t, l, "cat", "A3", late)
	for range 2 {
		if r := hs.signed(payment.PathSuccess, body("ann", "A1", sold, "")); r.code != 200 {
			t.Fatalf("success: %d %s", r.code, r.raw)
		}
		if r := hs.signed(payment.PathFailure, failBody("bob", "A2", failed, "insufficient_funds")); r.code != 200 {
			t.Fatalf("failure: %d %s", r.code, r.raw)
		}
	}
	hs.skew.Store(int64(20 * time.Second))
	for range 2 {
		if _, err := hs.store.HandleTimeout(ctx, "e1", "cat"); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if r := hs.signed(payment.PathSuccess, body("cat", "A3", late, "")); r.code != 200 || r.body["outcome"] != "refund" {
			t.Fatalf("late: %d %s", r.code, r.raw)
		}
	}
	for _, typ := range []string{events.TopicBookingCompleted, events.TopicPaymentFailed, events.TopicPaymentLate} {
		evs := hs.rec.Topic(typ)
		if len(evs) != 2 {
			t.Fatalf("%s: %d events, want 2", typ, len(evs))
		}
		for _, e := range evs {
			if e.Amount != 5000 || e.Currency != "EUR" {
				t.Errorf("%s: amount %d %q, want 5000 EUR", typ, e.Amount, e.Currency)
			}
		}
		if evs[0] != evs[1] {
			t.Errorf("%s: copies differ: %+v %+v", typ, evs[0], evs[1])
		}
	}
}
