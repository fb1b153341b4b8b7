package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// TestRepeatedInitiateRepublishesTheSamePaymentInitiated: a repeated
// payment/initiate publishes payment_initiated again with the first
// call's time and the amount the ledger recorded then, although the
// configured price changed in between: the copies are equal.
func TestRepeatedInitiateRepublishesTheSamePaymentInitiated(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2})
	tok := hs.token("ann", "")
	want(t, hs.do("POST", "/api/booking/request", tok, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", tok, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")
	price := hs.srv.TicketPrice
	want(t, hs.do("POST", "/api/booking/payment/initiate", tok, map[string]any{"event_id": "e1"}), 200, "")
	hs.srv.TicketPrice = price + 700 // the price changes while the payment is pending
	want(t, hs.do("POST", "/api/booking/payment/initiate", tok, map[string]any{"event_id": "e1"}), 200, "")
	evs := hs.rec.Topic(events.TopicPaymentInitiated)
	if len(evs) != 2 {
		t.Fatalf("%d payment_initiated, want 2", len(evs))
	}
	if evs[0].Amount != price || evs[0].Currency != "EUR" {
		t.Errorf("amount %d %q, want %d EUR", evs[0].Amount, evs[0].Currency, price)
	}
	a, _ := events.Encode(evs[0])
	b, _ := events.Encode(evs[1])
	if string(a) != string(b) {
		t.Errorf("copies differ:\n%s\n%s", a, b)
	}
}
