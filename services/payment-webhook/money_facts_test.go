package main

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// TestPaymentFactsCarryTheLedgerAmount: the
// payment facts carry the amount and currency the ledger recorded when
// the payment was issued: booking_completed, payment_failed and
// payment_late (each also on a repeated webhook).
func TestPaymentFactsCarryTheLedgerAmount(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	sold, failed, late := hs.issued(l, "ann", "A1"), hs.issued(l, "bob", "A2"), hs.issued(l, "cat", "A3")
	for range 2 {
		if r := hs.signed(payment.PathSuccess, body("ann", "A1", sold, "")); r.code != 200 {
			t.Fatalf("success: %d %s", r.code, r.raw)
		}
		if r := hs.signed(payment.PathFailure, failBody("bob", "A2", failed, "insufficient_funds")); r.code != 200 {
			t.Fatalf("failure: %d %s", r.code, r.raw)
		}
	}
	hs.expire("cat")
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
		if !reflect.DeepEqual(evs[0], evs[1]) {
			t.Errorf("%s: copies differ: %+v %+v", typ, evs[0], evs[1])
		}
	}
}

// TestLastSeatSoldPublishesEventSoldOutOnce: the completion that sells the
// last seat publishes event_sold_out with that completion's time; a
// repeat of any completion afterwards republishes the same fact (one id,
// one time), and none is published while seats remain.
func TestLastSeatSoldPublishesEventSoldOutOnce(t *testing.T) {
	t.Parallel()
	hs := newHarness(t) // 4 seats
	var pids []string
	for i, u := range []string{"ann", "bob", "cat", "dan"} {
		pid := hs.pending(u, "A"+string(rune('1'+i)))
		pids = append(pids, pid)
		if r := hs.signed(payment.PathSuccess, body(u, "A"+string(rune('1'+i)), pid, "")); r.code != 200 {
			t.Fatalf("success %s: %d %s", u, r.code, r.raw)
		}
		if n := len(hs.rec.Topic(events.TopicEventSoldOut)); (i < 3 && n != 0) || (i == 3 && n != 1) {
			t.Fatalf("after %d sales: %d event_sold_out", i+1, n)
		}
	}
	hs.skew.Store(int64(time.Minute))
	if r := hs.signed(payment.PathSuccess, body("ann", "A1", pids[0], "")); r.code != 200 {
		t.Fatalf("repeat: %d %s", r.code, r.raw)
	}
	got := hs.rec.Topic(events.TopicEventSoldOut)
	if len(got) != 2 || got[0].ID != got[1].ID || !got[0].OccurredAt.Equal(got[1].OccurredAt) || got[0].EventID != "e1" {
		t.Fatalf("event_sold_out %+v", got)
	}
	done := hs.rec.Topic(events.TopicBookingCompleted)
	if !got[0].OccurredAt.Equal(done[3].OccurredAt) {
		t.Errorf("sold out at %v, the last sale at %v", got[0].OccurredAt, done[3].OccurredAt)
	}
}

// TestCompletionCarriesItsPhase: booking_completed carries the sale's
// phase current when the seat was sold, as the ledger recorded it with
// the order; a repeat after the phase changed republishes the same fact.
func TestCompletionCarriesItsPhase(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	ctx := context.Background()
	if _, _, err := hs.store.SetPhase(ctx, "e1", booking.PhaseState{Phase: "fanclub", Audience: booking.AudiencePublic}); err != nil {
		t.Fatal(err)
	}
	pid := hs.issued(l, "ann", "A1")
	if r := hs.signed(payment.PathSuccess, body("ann", "A1", pid, "")); r.code != 200 {
		t.Fatalf("success: %d %s", r.code, r.raw)
	}
	if _, _, err := hs.store.SetPhase(ctx, "e1", booking.PhaseState{Phase: "general", Audience: booking.AudiencePublic}); err != nil {
		t.Fatal(err)
	}
	if r := hs.signed(payment.PathSuccess, body("ann", "A1", pid, "")); r.code != 200 {
		t.Fatalf("repeat: %d %s", r.code, r.raw)
	}
	evs := hs.rec.Topic(events.TopicBookingCompleted)
	if len(evs) != 2 || evs[0].Phase != "fanclub" || !reflect.DeepEqual(evs[0], evs[1]) {
		t.Fatalf("facts: %+v", evs)
	}
	if o, err := l.OrderByPayment(ctx, pid); err != nil || o.Phase != "fanclub" {
		t.Fatalf("order: %+v %v", o, err)
	}
}
