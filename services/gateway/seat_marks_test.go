package main

import (
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// seatStatuses is the event's seat map as one string of status bytes.
func seatStatuses(t *testing.T, hs *harness, event string) string {
	t.Helper()
	r := hs.do("GET", "/api/seats/available?event_id="+event, "", nil)
	want(t, r, 200, "")
	var b strings.Builder
	secs, _ := r.body["sections"].([]any)
	for _, s := range secs {
		b.WriteString(s.(map[string]any)["status"].(string))
	}
	return b.String()
}

// Operators hold, kill and release seats through the admin API, every
// request and response validated against docs/openapi.yaml: fans are
// refused such seats, a release sells them at once, a seat a fan holds or
// bought is refused per seat with nothing changed, a repeat changes
// nothing, and a rebuild from the ledger keeps them.
func TestSeatMarksHoldKillRelease(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 3, "max_seats_per_order": 4})
	const path = "/api/admin/events/e1/seat-marks"
	mark := func(body map[string]any) resp {
		t.Helper()
		r := hs.do("POST", path, hs.admin, body)
		want(t, r, 200, "")
		return r
	}

	r := mark(map[string]any{"action": "hold", "purpose": "sponsor", "seat_ids": []string{"A1", "A2"}})
	if r.body["changed"] != true || r.num("change_id") == 0 || len(r.body["seat_ids"].([]any)) != 2 {
		t.Fatalf("hold: %s", r.raw)
	}
	if r := mark(map[string]any{"action": "hold", "purpose": "sponsor", "seat_ids": []string{"A2", "A1"}}); r.body["changed"] != false ||
		r.num("change_id") != 0 {
		t.Fatalf("a repeat: %s", r.raw)
	}
	mark(map[string]any{"action": "kill", "row": "B"})
	mark(map[string]any{"action": "hold", "purpose": "accessibility", "range": map[string]string{"from": "A4", "to": "A3"}})
	if got := seatStatuses(t, hs, "e1"); got != "rrrrakkkkk" {
		t.Fatalf("seat map %s", got)
	}
	m := hs.do("GET", "/api/seats/available?event_id=e1", "", nil)
	if m.num("reserved") != 4 || m.num("killed") != 5 || m.num("available") != 1 {
		t.Fatalf("seat map counts %s", m.raw)
	}

	// fans are refused them, alone or among seats on sale
	alice := hs.token("alice", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	r = hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"})
	want(t, r, 409, "seat_not_for_sale")
	r = hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_ids": []string{"A5", "B1"}})
	if want(t, r, 409, "seat_not_for_sale"); len(r.body["seat_ids"].([]any)) != 1 || r.body["seat_ids"].([]any)[0] != "B1" {
		t.Fatalf("multi-seat refusal %s", r.raw)
	}

	// a release sells them at once
	mark(map[string]any{"action": "release", "range": map[string]string{"from": "A1", "to": "A2"}})
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_ids": []string{"A1", "A5"}}), 200, "")
	pay(t, hs, l, "bob", "A2")

	// a seat a fan holds or bought: refused, each named, nothing changed
	before := seatStatuses(t, hs, "e1")
	r = hs.do("POST", path, hs.admin, map[string]any{"action": "kill", "seat_ids": []string{"A3", "A1", "A2"}})
	want(t, r, 409, "seat_unavailable")
	if !strings.Contains(r.raw, `"refused":[{"seat_id":"A1","status":"held"},{"seat_id":"A2","status":"sold"}]`) {
		t.Fatalf("refusal %s", r.raw)
	}
	r = hs.do("POST", path, hs.admin, map[string]any{"action": "kill", "seat_ids": []string{"A3", "Z9"}})
	if want(t, r, 404, "seat_not_found"); !strings.Contains(r.raw, `"seat_ids":["Z9"]`) {
		t.Fatalf("unknown seat %s", r.raw)
	}
	want(t, hs.do("POST", path, hs.admin, map[string]any{"action": "kill", "row": "Q"}), 404, "seat_not_found")
	want(t, hs.do("POST", "/api/admin/events/nope/seat-marks", hs.admin, map[string]any{"action": "kill", "seat_ids": []string{"A1"}}), 404, "event_not_found")
	want(t, hs.do("POST", "/api/admin/events/nope/seat-marks", hs.admin, map[string]any{"action": "kill", "row": "A"}), 404, "event_not_found")
	for _, body := range []any{
		map[string]any{"action": "kill", "seat_ids": []string{"a b"}},
		map[string]any{"action": "kill", "seat_ids": []string{"A1,A2"}},
		map[string]any{"action": "kill"},
		map[string]any{"action": "kill", "row": "A", "seat_ids": []string{"A1"}},
		map[string]any{"action": "sell", "seat_ids": []string{"A1"}},
		map[string]any{"action": "hold", "seat_ids": []string{"A1"}},
		map[string]any{"action": "hold", "purpose": "   ", "seat_ids": []string{"A1"}},
		map[string]any{"action": "kill", "purpose": "x", "seat_ids": []string{"A1"}},
		map[string]any{"action": "kill", "row": "b"},
		map[string]any{"action": "kill", "range": map[string]string{"from": "A1"}},
		`{"action":`,
	} {
		bad("POST", path, hs.admin, body, 400, "invalid_body")
	}
	bad("POST", path, alice, map[string]any{"action": "kill", "row": "A"}, 403, "forbidden")
	bad("POST", path, "", map[string]any{"action": "kill", "row": "A"}, 401, "unauthorized")
	ct.refusals("POST", path, hs.admin, func() map[string]any {
		return map[string]any{"action": "hold", "purpose": "artist", "seat_ids": []string{"A3"}}
	})
	if got := seatStatuses(t, hs, "e1"); got != before {
		t.Fatalf("refused requests changed the seats: %s, was %s", got, before)
	}

	// the facts: one per change, numbered by it
	for typ, n := range map[string]int{events.TopicSeatsHeld: 2, events.TopicSeatsKilled: 1, events.TopicSeatsReleased: 1} {
		fs := hs.rec.Topic(typ)
		if len(fs) != n {
			t.Fatalf("%d %s facts, want %d", len(fs), typ, n)
		}
		for _, f := range fs {
			if f.Sequence == 0 || f.UserID == "" || f.SeatID == "" || f.Validate() != nil {
				t.Fatalf("fact %+v", f)
			}
		}
	}
	r = hs.do("GET", path, hs.admin, nil)
	want(t, r, 200, "")
	if marks := r.body["seat_marks"].([]any); len(marks) != 7 {
		t.Fatalf("marks %s", r.raw)
	}

	// a rebuild from the ledger keeps them (alice's open hold is dropped)
	if err := redisDel(hs, "e1"); err != nil {
		t.Fatal(err)
	}
	want(t, hs.do("POST", "/api/admin/events/e1/restore", hs.admin, nil), 200, "")
	if got := seatStatuses(t, hs, "e1"); got != "asrrakkkkk" {
		t.Fatalf("seat map after the rebuild %s", got)
	}
	ct.Report()
}

func TestSeatMarksNeedTheOperatorRole(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	h.account("vera", operators.Viewer)
	h.account("otto", operators.Operator)
	h.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	viewer, operator := h.signIn("vera", opPassword), h.signIn("otto", opPassword)
	body := map[string]any{"action": "kill", "seat_ids": []string{"A1"}}
	r, _ := h.send("POST", "/api/admin/events/e1/seat-marks", viewer, body)
	want(t, r, 403, "forbidden")
	if got := seatStatuses(t, h.harness, "e1"); got != "aaaa" {
		t.Fatalf("a viewer changed seats: %s", got)
	}
	r, _ = h.send("GET", "/api/admin/events/e1/seat-marks", viewer, nil)
	want(t, r, 200, "")
	r, _ = h.send("POST", "/api/admin/events/e1/seat-marks", operator, body)
	want(t, r, 200, "")
	r, _ = h.send("GET", "/api/admin/events/e1/seat-marks", viewer, nil)
	if want(t, r, 200, ""); !strings.Contains(r.raw, `"actor":"otto"`) {
		t.Fatalf("marks %s", r.raw)
	}
}
