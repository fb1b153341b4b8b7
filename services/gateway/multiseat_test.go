package main

import (
	"encoding/json"
	"slices"
	"testing"
)

// Orders of several seats in priced sections through the API.
func TestMultiSeatOrder(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "tour", "currency": "USD", "max_seats_per_order": 3, "capacity": 5,
		"sections": []map[string]any{
			{"name": "Floor", "rows": 2, "seats_per_row": 4, "price_cents": 5000},
			{"name": "Balcony", "rows": 1, "seats_per_row": 4, "price_cents": 2500}}})
	alice, bob := hs.token("alice", ""), hs.token("bob", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "tour"}), 200, "")
	want(t, hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "tour"}), 200, "")

	// the event shows its price range and sections
	r := hs.do("GET", "/api/events/tour", "", nil)
	want(t, r, 200, "")
	if r.num("price_min_cents") != 2500 || r.num("price_max_cents") != 5000 || r.str("currency") != "USD" ||
		r.num("max_seats_per_order") != 3 || r.num("price_cents") != 2500 {
		t.Fatalf("event: %s", r.raw)
	}
	r = hs.do("GET", "/api/events", "", nil)
	if evs, _ := r.body["events"].([]any); len(evs) != 1 || evs[0].(map[string]any)["price_max_cents"] != 5000.0 {
		t.Fatalf("events: %s", r.raw)
	}

	r = hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "tour", "seat_ids": []string{"A1", "B4", "C2"}})
	want(t, r, 200, "")
	if ids, _ := r.body["seat_ids"].([]any); len(ids) != 3 {
		t.Fatalf("select: %s", r.raw)
	}
	// bob overlaps on two seats: 409 naming them, nothing locked
	r = hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{"A2", "C2", "A1"}})
	want(t, r, 409, "seat_unavailable")
	var taken []string
	for _, v := range r.body["seat_ids"].([]any) {
		taken = append(taken, v.(string))
	}
	if !slices.Equal(taken, []string{"C2", "A1"}) {
		t.Fatalf("taken %v: %s", taken, r.raw)
	}
	var seatMap struct {
		Sections []struct{ Status string } `json:"sections"`
	}
	json.Unmarshal([]byte(hs.do("GET", "/api/seats/available?event_id=tour", "", nil).raw), &seatMap)
	if len(seatMap.Sections) != 3 || seatMap.Sections[0].Status != "haaa" || seatMap.Sections[1].Status != "aaah" || seatMap.Sections[2].Status != "ahaa" {
		t.Fatalf("seat map after a failed selection: %+v", seatMap)
	}
	// the maximum can be changed live (and is bounded)
	want(t, hs.do("PATCH", "/api/admin/events/tour", hs.admin, map[string]any{"max_seats_per_order": 11}), 400, "invalid_argument")
	if r := hs.do("PATCH", "/api/admin/events/tour", hs.admin, map[string]any{"max_seats_per_order": 2}); r.code != 200 || r.num("max_seats_per_order") != 2 {
		t.Fatalf("patch: %s", r.raw)
	}
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{"A2", "A3", "A4"}}), 400, "too_many_seats")
	want(t, hs.do("PATCH", "/api/admin/events/tour", hs.admin, map[string]any{"max_seats_per_order": 3}), 200, "")
	// bad selections are 4xx
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{"A2", "A3", "A4", "B1"}}), 400, "too_many_seats")
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{"A2", "A2"}}), 400, "invalid_body")
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{"A2", "Z9"}}), 404, "seat_not_found")
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{}}), 400, "invalid_body")
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_id": "A2", "seat_ids": []string{"A3"}}), 400, "invalid_body")
	// a single seat_id still works, and selecting again replaces
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_id": "A2"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{"A3", "A4"}}), 200, "")
	r = hs.do("GET", "/api/booking/position?event_id=tour", bob, nil)
	if ids, _ := r.body["seat_ids"].([]any); len(ids) != 2 || r.str("seat_id") != "" {
		t.Fatalf("bob's status: %s", r.raw)
	}

	// the amount is the sum of the section prices, in the event's currency
	r = hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "tour"})
	want(t, r, 200, "")
	if r.num("amount") != 12500 || r.str("currency") != "USD" {
		t.Fatalf("initiate: %s", r.raw)
	}
	if c := hs.prov.calls[len(hs.prov.calls)-1]; c.Amount != 12500 || c.Currency != "USD" || c.SeatID != "A1,B4,C2" {
		t.Fatalf("provider got %+v", c)
	}
}

// An event made the old way is one section at TICKET_PRICE_CENTS: n seats
// cost n times the price.
func TestMultiSeatLegacyPrice(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 3, "capacity": 1})
	alice := hs.token("alice", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_ids": []string{"A1", "B1"}}), 200, "")
	r := hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "e1"})
	if r.code != 200 || r.num("amount") != 200 || r.str("currency") != "EUR" {
		t.Fatalf("initiate: %s", r.raw)
	}
	// sections and a flat seat map at once: 400
	r = hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "bad", "rows": 1, "seats_per_row": 1,
		"sections": []map[string]any{{"name": "x", "rows": 1, "seats_per_row": 1}}})
	want(t, r, 400, "invalid_event")
	want(t, hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "bad", "rows": 1, "seats_per_row": 1, "max_seats_per_order": 11}), 400, "invalid_event")
	want(t, hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "bad", "rows": 1, "seats_per_row": 1, "currency": "usd"}), 400, "invalid_event")
}
