package main

import (
	"strings"
	"testing"
)

// Admin input that used to wedge an event is refused, every setting can be
// patched, and one event id rule holds at every entry point.
func TestAdminInputBounds(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 2})
	long := strings.Repeat("a", 65)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"huge batch", "POST", "/api/admin/events", `{"id":"e2","rows":1,"seats_per_row":1,"batch_size":9200000000000000000}`, 400, "invalid_event"},
		{"capacity above the max", "POST", "/api/admin/events", `{"id":"e2","rows":1,"seats_per_row":1,"capacity":1000001}`, 400, "invalid_event"},
		{"hold above a day", "POST", "/api/admin/events", `{"id":"e2","rows":1,"seats_per_row":1,"hold_seconds":86401}`, 400, "invalid_event"},
		{"sales end before 1970", "POST", "/api/admin/events", `{"id":"e2","rows":1,"seats_per_row":1,"sales_end":"1969-12-31T00:00:00Z"}`, 400, "invalid_event"},
		{"id with a slash", "POST", "/api/admin/events", `{"id":"a/b","rows":1,"seats_per_row":1}`, 400, "invalid_event"},
		{"id too long", "POST", "/api/admin/events", `{"id":"` + long + `","rows":1,"seats_per_row":1}`, 400, "invalid_event"},
		{"patch huge batch", "PATCH", "/api/admin/events/e1", `{"batch_size":9200000000000000000}`, 400, "invalid_argument"},
		{"patch zero batch", "PATCH", "/api/admin/events/e1", `{"batch_size":0}`, 400, "invalid_argument"},
		{"patch sales end before 1970", "PATCH", "/api/admin/events/e1", `{"sales_end":"1969-12-31T00:00:00Z"}`, 400, "invalid_argument"},
		{"patch bad time", "PATCH", "/api/admin/events/e1", `{"sales_start":"noon"}`, 400, "invalid_argument"},
		{"patch nothing", "PATCH", "/api/admin/events/e1", `{}`, 400, "invalid_argument"},
		{"patch bad on_phase_change", "PATCH", "/api/admin/events/e1", `{"on_phase_change":"stay"}`, 400, "invalid_argument"},
		{"create bad on_phase_change", "POST", "/api/admin/events", `{"id":"e9","rows":1,"seats_per_row":4,"on_phase_change":"later"}`, 400, "invalid_event"},
		{"refundable until not a time", "POST", "/api/admin/events", `{"id":"e2","rows":1,"seats_per_row":1,"refundable_until":"soon"}`, 400, "invalid_event"},
		{"refundable until before 1970", "POST", "/api/admin/events", `{"id":"e2","rows":1,"seats_per_row":1,"refundable_until":"1969-12-31T00:00:00Z"}`, 400, "invalid_event"},
		{"finish after end not a bool", "POST", "/api/admin/events", `{"id":"e2","rows":1,"seats_per_row":1,"finish_after_end":"no"}`, 400, "invalid_body"},
		{"patch refundable until before 1970", "PATCH", "/api/admin/events/e1", `{"refundable_until":"1969-12-31T00:00:00Z"}`, 400, "invalid_argument"},
		{"patch refundable until not a time", "PATCH", "/api/admin/events/e1", `{"refundable_until":"tomorrow"}`, 400, "invalid_argument"},
		{"get id with a colon", "GET", "/api/events/a:b", "", 404, "event_not_found"},
		{"seat map id with a colon", "GET", "/api/seats/available?event_id=a:b", "", 400, "invalid_argument"},
		{"join id too long", "POST", "/api/booking/request", `{"event_id":"` + long + `"}`, 400, "invalid_body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			tok := hs.admin
			want(t, hs.do(tc.method, tc.path, tok, body), tc.status, tc.code)
		})
	}
	r := hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"batch_size": 50, "name": "Fixed", "grace_seconds": 30,
		"sales_start": "2030-01-01T00:00:00Z", "sales_end": "2030-01-02T00:00:00Z"})
	want(t, r, 200, "")
	if r.num("batch_size") != 50 || r.str("name") != "Fixed" || r.num("grace_seconds") != 30 || r.str("sales_end") != "2030-01-02T00:00:00Z" {
		t.Fatalf("patched: %s", r.raw)
	}
	r = hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"finish_after_end": false,
		"refundable_until": "2030-01-03T00:00:00Z"})
	want(t, r, 200, "")
	if r.str("refundable_until") != "2030-01-03T00:00:00Z" || !strings.Contains(r.raw, `"finish_after_end":false`) {
		t.Fatalf("window settings not patched: %s", r.raw)
	}
	r = hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"sales_start": "", "sales_end": "", "refundable_until": ""})
	want(t, r, 200, "")
	if strings.Contains(r.raw, "2030") {
		t.Fatalf("sales window not cleared: %s", r.raw)
	}
}

// An event without a sales start shows none (not the zero time
// 0001-01-01T00:00:00Z), wherever an event is shown, and again once a
// start is cleared.
func TestUnsetSalesStartIsOmitted(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "open", "rows": 1, "seats_per_row": 2})
	shown := func() []resp {
		return []resp{hs.do("GET", "/api/events/open", "", nil), hs.do("GET", "/api/admin/events/open", hs.admin, nil),
			hs.do("GET", "/api/events", "", nil)}
	}
	for _, r := range shown() {
		want(t, r, 200, "")
		if strings.Contains(r.raw, "sales_start") || strings.Contains(r.raw, "0001-01-01") {
			t.Fatalf("unset sales start shown: %s", r.raw)
		}
	}
	r := hs.do("PATCH", "/api/admin/events/open", hs.admin, map[string]any{"sales_start": "2030-01-01T00:00:00Z"})
	if want(t, r, 200, ""); r.str("sales_start") != "2030-01-01T00:00:00Z" {
		t.Fatalf("sales start not shown: %s", r.raw)
	}
	r = hs.do("PATCH", "/api/admin/events/open", hs.admin, map[string]any{"sales_start": ""})
	if want(t, r, 200, ""); strings.Contains(r.raw, "sales_start") {
		t.Fatalf("cleared sales start shown: %s", r.raw)
	}
	for _, r := range shown() {
		if strings.Contains(r.raw, "sales_start") {
			t.Fatalf("cleared sales start shown: %s", r.raw)
		}
	}
}
