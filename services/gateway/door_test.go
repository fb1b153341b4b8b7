package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"

	"github.com/boxoffice/boxoffice/pkg/messages"
)

// The rate cap through the API: set at create, capped immediate
// admissions, the ETA at the cap, changed live by PATCH.
func TestRateCapAPI(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 10, "admit_per_minute": 2})
	r := hs.do("GET", "/api/events/e1", "", nil)
	if r.num("admit_per_minute") != 2 {
		t.Fatalf("event: %s", r.raw)
	}
	if c := hs.rec.Topic(events.TopicEventCreated); len(c) != 1 || !strings.Contains(c[0].Reason, "admit_per_minute=2") {
		t.Fatalf("event_created does not say the cap: %+v", c)
	}
	var toks []string
	for _, u := range []string{"a", "b", "c", "d"} {
		toks = append(toks, hs.token(u, ""))
		hs.do("POST", "/api/booking/request", toks[len(toks)-1], map[string]any{"event_id": "e1"})
	}
	r = hs.do("GET", "/api/booking/position?event_id=e1", toks[2], nil)
	if r.str("status") != "queued" || r.num("position") != 1 || r.num("eta_seconds") != 30 {
		t.Fatalf("third joiner with a cap of 2/min: %s", r.raw)
	}
	r = hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"admit_per_minute": 1})
	if r.code != http.StatusOK || r.num("admit_per_minute") != 1 {
		t.Fatalf("patch: %s", r.raw)
	}
	if rel := hs.ann.Released(); len(rel) != 1 || rel[0] != messages.ReasonCapacity {
		t.Fatalf("a cap change did not release: %v", rel)
	}
	// lowered: the ETA assumes 1/min though 2 came in this minute
	r = hs.do("GET", "/api/booking/position?event_id=e1", toks[3], nil)
	if r.num("position") != 2 || r.num("eta_seconds") != 120 {
		t.Fatalf("ETA after lowering: %s", r.raw)
	}
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"admit_per_minute": -1}), 400, "")
	// raised: the next promotion admits at once
	r = hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"admit_per_minute": 10})
	want(t, r, http.StatusOK, "")
	res, err := hs.store.Promote(t.Context(), "e1", 0)
	if err != nil || len(res.Promoted) != 2 {
		t.Fatalf("promote after raising: %+v %v", res, err)
	}
	want(t, hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "e2", "rows": 1, "seats_per_row": 1, "admit_per_minute": -3}), 400, "invalid_event")
}

// The pre-queue's commitment is on record in event_created before the
// sale, the same as the event shows.
func TestDrawCommitmentOnRecord(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "pq", "rows": 1, "seats_per_row": 2,
		"sales_start": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "early_join_seconds": 600})
	r := hs.do("GET", "/api/events/pq", "", nil)
	c := hs.rec.Topic(events.TopicEventCreated)
	if r.str("draw_commit") == "" || r.num("early_join_seconds") != 600 || len(c) != 1 ||
		!strings.Contains(c[0].Reason, "early_join_seconds=600") || !strings.HasSuffix(c[0].Reason, " draw_commit="+r.str("draw_commit")) {
		t.Fatalf("event %s; event_created %+v", r.raw, c)
	}
}
