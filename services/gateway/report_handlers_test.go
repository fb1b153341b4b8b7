package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/report"
)

// TestEventReportJSONAndCSV: the admin report endpoint serves what the
// report consumer counted, as JSON and as CSV; unknown events are 404,
// a bad format 400, and it is admin only.
func TestEventReportJSONAndCSV(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2})
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	c := report.NewCounter(hs.srv.Redis, hs.srv.Prefix, 0)
	for _, e := range []events.Event{
		events.BookingRequested("e1", "ann", 1, at),
		events.UserPromoted("e1", "ann", 1, at.Add(10*time.Second)),
		events.BookingCompleted("e1", "ann", "A1", "pa", 1, at.Add(70*time.Second)).WithMoney(100, "EUR"),
	} {
		if _, err := c.Count(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	r := hs.do("GET", "/api/admin/events/e1/report", hs.admin, nil)
	want(t, r, 200, "")
	counts, _ := r.body["counts"].(map[string]any)
	revenue, _ := r.body["revenue"].(map[string]any)
	if counts["booking_completed"] != float64(1) || counts["booking_request"] != float64(1) || revenue["EUR"] != float64(100) {
		t.Errorf("report %s", r.raw)
	}
	csv := hs.do("GET", "/api/admin/events/e1/report?format=csv", hs.admin, nil)
	if csv.code != 200 || !strings.HasPrefix(csv.raw, "metric,key,value\n") || !strings.Contains(csv.raw, "count,booking_completed,1\n") {
		t.Errorf("csv %d %s", csv.code, csv.raw)
	}
	if r := hs.do("GET", "/api/admin/events/e1/report", hs.admin, nil, "Accept", "text/csv"); !strings.HasPrefix(r.raw, "metric,") {
		t.Errorf("Accept: text/csv gave %s", r.raw)
	}
	want(t, hs.do("GET", "/api/admin/events/e1/report?format=xml", hs.admin, nil), 400, "invalid_argument")
	want(t, hs.do("GET", "/api/admin/events/nope/report", hs.admin, nil), 404, "")
	if r := hs.do("GET", "/api/admin/events/e1/report", hs.token("ann", ""), nil); r.code != 403 {
		t.Errorf("non-admin: %d", r.code)
	}
}
