package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
)

// Operators allocate seats to a channel through the admin API, every
// request and response validated against docs/openapi.yaml: only a fan
// whose token carries the channel may take them (by hand or best
// available), the seat map shows them as c, and an operator's release
// puts the unsold ones on sale, recorded, audited and published.
func TestAllocationsThroughTheAdminAPI(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 5, "max_seats_per_order": 4})
	const path = "/api/admin/events/e1/seat-marks"
	r := hs.do("POST", path, hs.admin, map[string]any{"action": "allocate", "channel": "box_office", "row": "A",
		"release_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	if want(t, r, 200, ""); r.body["changed"] != true || r.body["channel"] != "box_office" || r.num("change_id") == 0 {
		t.Fatalf("allocate: %s", r.raw)
	}
	if got := seatStatuses(t, hs, "e1"); got != "cccccaaaaa" {
		t.Fatalf("seat map %s", got)
	}
	if m := hs.do("GET", "/api/seats/available?event_id=e1", "", nil); m.num("allocated") != 5 || m.num("available") != 5 {
		t.Fatalf("seat map counts %s", m.raw)
	}
	for _, body := range []map[string]any{
		{"action": "allocate", "row": "A"},
		{"action": "allocate", "channel": "a,b", "row": "A"},
		{"action": "hold", "purpose": "x", "channel": "p", "row": "A"},
		{"action": "allocate", "channel": "p", "purpose": "x", "row": "A"},
		{"action": "allocate", "channel": "p", "release_at": "noon", "row": "A"},
		{"action": "kill", "release_at": "2030-01-01T00:00:00Z", "row": "A"},
	} {
		bad("POST", path, hs.admin, body, 400, "invalid_body")
	}

	// a fan without the channel is refused them; one with it takes them
	alice := hs.token("alice", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 409, "seat_not_for_sale")
	r = hs.do("POST", "/api/booking/select-best", alice, map[string]any{"event_id": "e1", "count": 2})
	if want(t, r, 200, ""); r.raw == "" || r.body["seat_ids"].([]any)[0].(string)[0] != 'B' {
		t.Fatalf("best available without the channel: %s", r.raw)
	}
	tok, err := hs.srv.Auth.IssueChannel("walkup", "", "box_office", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want(t, hs.do("POST", "/api/booking/request", tok, map[string]any{"event_id": "e1"}), 200, "")
	r = hs.do("POST", "/api/booking/select-best", tok, map[string]any{"event_id": "e1", "count": 2})
	if want(t, r, 200, ""); r.body["seat_ids"].([]any)[0].(string)[0] != 'A' {
		t.Fatalf("best available through the channel: %s", r.raw)
	}

	// the operator ends it: the unsold seats go on sale, a repeat changes nothing
	rel := "/api/admin/events/e1/allocations/box_office/release"
	r = hs.do("POST", rel, hs.admin, nil)
	if want(t, r, 200, ""); r.body["changed"] != true || len(r.body["seat_ids"].([]any)) != 3 {
		t.Fatalf("release: %s", r.raw)
	}
	if r := hs.do("POST", rel, hs.admin, nil); r.body["changed"] != false || r.num("change_id") != 0 {
		t.Fatalf("a repeated release: %s", r.raw)
	}
	want(t, hs.do("POST", "/api/admin/events/nope/allocations/box_office/release", hs.admin, nil), 404, "event_not_found")
	bad("POST", rel, alice, nil, 403, "forbidden")
	// the channel's fan keeps the two seats of row A they hold, the rest is on sale
	if got := seatStatuses(t, hs, "e1"); countByte(got[:5], 'c') != 0 || countByte(got[:5], 'h') != 2 || countByte(got[:5], 'a') != 3 {
		t.Fatalf("seat map after the release %s", got)
	}
	for typ, n := range map[string]int{events.TopicSeatsAllocated: 1, events.TopicAllocationReleased: 1} {
		if fs := hs.rec.Topic(typ); len(fs) != n || fs[0].Validate() != nil {
			t.Fatalf("%s facts %+v", typ, fs)
		}
	}
	ct.Report()
}

func countByte(s string, b byte) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			n++
		}
	}
	return n
}

// Accessibility seats through the API, validated against docs/openapi.yaml:
// a wheelchair space and a companion seat (allocated to the channels
// wheelchair and companion) are refused to a fan who does not ask for
// them and taken by one who does, by hand or best available.
func TestAccessibilitySeatsThroughTheAPI(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	ct := contracttest.Load(t)
	hs.h = ct.Wrap(hs.h, func(*http.Request) bool { return true })
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 5, "capacity": 5, "max_seats_per_order": 4})
	const path = "/api/admin/events/e1/seat-marks"
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for seat, ch := range map[string]string{"A1": "wheelchair", "A2": "companion"} {
		r := hs.do("POST", path, hs.admin, map[string]any{"action": "allocate", "channel": ch, "seat_ids": []string{seat}, "release_at": at})
		want(t, r, 200, "")
	}
	m := hs.do("GET", "/api/seats/available?event_id=e1", "", nil)
	if acc, _ := m.body["accessible"].(map[string]any); acc == nil || len(acc["wheelchair"].([]any)) != 1 || acc["companion"].([]any)[0] != "A2" {
		t.Fatalf("seat map: %s", m.raw)
	}
	alice, bob := hs.token("alice", ""), hs.token("bob", "")
	for _, tok := range []string{alice, bob} {
		want(t, hs.do("POST", "/api/booking/request", tok, map[string]any{"event_id": "e1"}), 200, "")
	}
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 409, "seat_not_for_sale")
	r := hs.do("POST", "/api/booking/select-best", alice, map[string]any{"event_id": "e1", "count": 1})
	if want(t, r, 200, ""); r.body["seat_ids"].([]any)[0] == "A1" || r.body["seat_ids"].([]any)[0] == "A2" {
		t.Fatalf("best available without asking: %s", r.raw)
	}
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1", "accessible": true}), 200, "")
	r = hs.do("POST", "/api/booking/select-best", bob, map[string]any{"event_id": "e1", "count": 1, "accessible": true})
	if want(t, r, 200, ""); r.body["seat_ids"].([]any)[0] != "A2" {
		t.Fatalf("best available asking for accessibility seats: %s", r.raw)
	}

	// released to general sale, a wheelchair space is still one on the map
	want(t, hs.do("POST", "/api/booking/cancel", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/admin/events/e1/allocations/wheelchair/release", hs.admin, nil), 200, "")
	if got := seatStatuses(t, hs, "e1"); got[0] != 'a' {
		t.Fatalf("seat map after the release %s", got)
	}
	m = hs.do("GET", "/api/seats/available?event_id=e1", "", nil)
	if acc, _ := m.body["accessible"].(map[string]any); acc == nil || acc["wheelchair"].([]any)[0] != "A1" || acc["companion"].([]any)[0] != "A2" {
		t.Fatalf("seat map after the release: %s", m.raw)
	}
	ct.Report()
}

// A fan buying through a channel picks the channel's seats by hand
// (select-seat), by the token's channel claim or while the event's phase
// is the channel; a fan of no channel or of another is refused them with
// 409 seat_not_for_sale naming them, through the contract-checked API.
func TestHandPickThroughTheChannel(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	ct, _ := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 5, "max_seats_per_order": 4})
	want(t, hs.do("POST", "/api/admin/events/e1/seat-marks", hs.admin, map[string]any{"action": "allocate", "channel": "box_office", "row": "A"}), 200, "")
	channelToken := func(user, channel string) string {
		tok, err := hs.srv.Auth.IssueChannel(user, "", channel, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	alice, partner, walkup := hs.token("alice", ""), channelToken("carol", "partner"), channelToken("walkup", "box_office")
	for _, tok := range []string{alice, partner, walkup} {
		want(t, hs.do("POST", "/api/booking/request", tok, map[string]any{"event_id": "e1"}), 200, "")
	}
	for name, tok := range map[string]string{"no channel": alice, "another channel": partner} {
		r := hs.do("POST", "/api/booking/select-seat", tok, map[string]any{"event_id": "e1", "seat_ids": []string{"B1", "A1"}})
		if want(t, r, 409, "seat_not_for_sale"); len(r.body["seat_ids"].([]any)) != 1 || r.body["seat_ids"].([]any)[0] != "A1" {
			t.Fatalf("%s: %s", name, r.raw)
		}
	}
	r := hs.do("POST", "/api/booking/select-seat", walkup, map[string]any{"event_id": "e1", "seat_ids": []string{"A1", "A2"}})
	if want(t, r, 200, ""); len(r.body["seat_ids"].([]any)) != 2 {
		t.Fatalf("through the channel: %s", r.raw)
	}
	want(t, hs.do("POST", "/api/booking/select-seat", walkup, map[string]any{"event_id": "e1", "seat_id": "A5"}), 200, "")

	// the event's phase is the channel: any fan picks its seats
	const phase = "/api/admin/events/e1/phase"
	want(t, hs.do("PUT", phase, hs.admin, map[string]any{"phase": "box_office", "audience": "public"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")
	want(t, hs.do("PUT", phase, hs.admin, map[string]any{"phase": "", "audience": "public"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", partner, map[string]any{"event_id": "e1", "seat_id": "A2"}), 409, "seat_not_for_sale")
	if got := seatStatuses(t, hs, "e1"); got[:5] != "hccch" {
		t.Fatalf("seat map %s", got)
	}
	ct.Report()
}

// An accessibility seat's kind cleared (or set) through the seat marks'
// action set_kind, validated against docs/openapi.yaml: kind "" is none
// (null, as in every body, is refused); refused while the seat is allocated to the channel of its
// kind, 4xx for bad input; kept in the ledger, so a rebuild of Redis
// keeps the cleared kind.
func TestAccessibleSeatKindClearedThroughTheAPI(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ctx := context.Background()
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 5, "capacity": 5})
	const path = "/api/admin/events/e1/seat-marks"
	accessible := func() map[string]any {
		m := hs.do("GET", "/api/seats/available?event_id=e1", "", nil)
		acc, _ := m.body["accessible"].(map[string]any)
		return acc
	}
	for seat, ch := range map[string]string{"A1": "wheelchair", "A2": "companion"} {
		want(t, hs.do("POST", path, hs.admin, map[string]any{"action": "allocate", "channel": ch, "seat_ids": []string{seat}}), 200, "")
	}
	// allocated to the channel of its kind: the kind stays with it
	r := hs.do("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": "", "seat_ids": []string{"A1", "A3"}})
	if want(t, r, 409, "seat_unavailable"); fmt.Sprint(r.body["refused"]) != "[map[seat_id:A1 status:allocated]]" {
		t.Fatalf("clear while allocated: %s", r.raw)
	}
	want(t, hs.do("POST", "/api/admin/events/e1/allocations/wheelchair/release", hs.admin, nil), 200, "")
	want(t, hs.do("POST", "/api/admin/events/e1/allocations/companion/release", hs.admin, nil), 200, "")
	if acc := accessible(); len(acc) != 2 {
		t.Fatalf("kinds after the releases: %v", acc)
	}
	// cleared; a repeat changes nothing
	r = hs.do("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": "", "seat_ids": []string{"A1"}})
	if want(t, r, 200, ""); r.body["changed"] != true || fmt.Sprint(r.body["seat_ids"]) != "[A1]" {
		t.Fatalf("clear: %s", r.raw)
	}
	want(t, hs.do("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": "", "row": "A"}), 200, "")
	r = hs.do("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": "", "seat_ids": []string{"A1", "A2"}})
	if want(t, r, 200, ""); r.body["changed"] != false {
		t.Fatalf("repeat: %s", r.raw)
	}
	if acc := accessible(); len(acc) != 0 {
		t.Fatalf("kinds after clearing: %v", acc)
	}
	// and set again by hand, without an allocation
	want(t, hs.do("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": "companion", "seat_ids": []string{"A4"}}), 200, "")
	if kinds, err := l.AccessibleSeats(ctx, "e1"); err != nil || len(kinds) != 1 || kinds["A4"] != "companion" {
		t.Fatalf("ledger kinds: %v %v", kinds, err)
	}
	// a rebuild of Redis from the ledger keeps it so
	if err := redisDel(hs, "e1"); err != nil {
		t.Fatal(err)
	}
	want(t, hs.do("POST", "/api/admin/events/e1/restore", hs.admin, nil), 200, "")
	if acc := accessible(); len(acc) != 1 || fmt.Sprint(acc["companion"]) != "[A4]" {
		t.Fatalf("kinds after the rebuild: %v", acc)
	}
	// bad input
	bad("POST", path, hs.admin, map[string]any{"action": "set_kind", "seat_ids": []string{"A1"}}, 400, "invalid_body")
	bad("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": nil, "seat_ids": []string{"A1"}}, 400, "invalid_body")
	bad("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": "vip", "seat_ids": []string{"A1"}}, 400, "invalid_body")
	bad("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": 3, "seat_ids": []string{"A1"}}, 400, "invalid_body")
	bad("POST", path, hs.admin, map[string]any{"action": "hold", "purpose": "x", "kind": "", "seat_ids": []string{"A1"}}, 400, "invalid_body")
	bad("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": "", "purpose": "x", "seat_ids": []string{"A1"}}, 400, "invalid_body")
	want(t, hs.do("POST", path, hs.admin, map[string]any{"action": "set_kind", "kind": "", "seat_ids": []string{"Z9"}}), 404, "seat_not_found")
	ct.Report()
}
