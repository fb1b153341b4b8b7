package main

import (
	"strings"
	"testing"
)

// Once the sales end has passed (Redis's clock) the API says so at every
// step: the event and its progress, a waiting fan's position, a join,
// and, for an event whose holds end with the sale, seat selection and
// payment start of a fan in the room.
func TestSalesEndAtEveryStep(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 1, "finish_after_end": false})
	alice, bob := hs.token("alice", ""), hs.token("bob", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")
	r := hs.do("GET", "/api/events/e1", "", nil)
	if r.body["sales_ended"] != false || r.body["finish_after_end"] != false {
		t.Fatalf("event before the end: %s", r.raw)
	}
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"sales_end": "2000-01-01T00:00:00Z"}), 200, "")

	r = hs.do("GET", "/api/events/e1", "", nil)
	if r.body["sales_ended"] != true {
		t.Fatalf("event after the end: %s", r.raw)
	}
	r = hs.do("GET", "/api/events/e1/progress", "", nil)
	if r.body["sales_ended"] != true {
		t.Fatalf("progress after the end: %s", r.raw)
	}
	r = hs.do("GET", "/api/booking/position?event_id=e1", bob, nil)
	if r.str("status") != "sales_ended" || r.body["sales_ended"] != true || r.num("position") != 1 {
		t.Fatalf("bob's position after the end: %s", r.raw)
	}
	r = hs.do("GET", "/api/booking/position?event_id=e1", hs.token("carol", ""), nil)
	if r.str("status") != "not_found" || r.body["sales_ended"] != true {
		t.Fatalf("a stranger's position after the end: %s", r.raw)
	}
	want(t, hs.do("POST", "/api/booking/request", hs.token("carol", ""), map[string]any{"event_id": "e1"}), 400, "sales_ended")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A2"}), 400, "sales_ended")
	want(t, hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "e1"}), 400, "sales_ended")
	if len(hs.prov.calls) != 0 {
		t.Fatalf("a payment was started after the end: %+v", hs.prov.calls)
	}
	r = hs.do("GET", "/api/events", "", nil)
	if !strings.Contains(r.raw, `"sales_ended":true`) {
		t.Fatalf("event list after the end: %s", r.raw)
	}
}
