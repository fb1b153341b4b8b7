package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
)

// PUT /api/admin/events/{id}/beacon: a round committed before the
// pre-queue opens is on the draw document and in the ledger; its value is
// taken once; bad input is a 4xx with its own code, nothing changed.
func TestDrawBeaconAPI(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	hs.h = contracttest.Load(t).Wrap(hs.h, nil) // responses; the requests include deliberate errors
	start := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "sales_start": start.Format(time.RFC3339),
		"early_join_seconds": 3600})
	hs.createEvent(map[string]any{"id": "open", "rows": 1, "seats_per_row": 4,
		"sales_start": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339), "early_join_seconds": 3600})
	hs.createEvent(map[string]any{"id": "plain", "rows": 1, "seats_per_row": 4})
	const path = "/api/admin/events/e1/beacon"
	value := strings.Repeat("5a", 32)

	want(t, hs.do("PUT", path, hs.admin, map[string]any{"round": 0}), 400, "invalid_body")
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"round": 5, "value": "XYZ"}), 400, CodeInvalidBeacon)
	want(t, hs.do("PUT", "/api/admin/events/nope/beacon", hs.admin, map[string]any{"round": 5}), 404, "event_not_found")
	want(t, hs.do("PUT", "/api/admin/events/open/beacon", hs.admin, map[string]any{"round": 5}), 409, "beacon_locked")
	want(t, hs.do("PUT", "/api/admin/events/plain/beacon", hs.admin, map[string]any{"round": 5}), 409, "no_prequeue")
	if d := hs.do("GET", "/api/events/e1/draw", "", nil); d.body["beacon_round"] != nil {
		t.Fatalf("a refused call changed the draw: %s", d.raw)
	}

	r := hs.do("PUT", path, hs.admin, map[string]any{"round": 5, "source": "drand quicknet"})
	if want(t, r, 200, ""); r.body["changed"] != true || r.num("beacon_round") != 5 {
		t.Fatalf("commit: %s", r.raw)
	}
	if r := hs.do("PUT", path, hs.admin, map[string]any{"round": 5}); r.body["changed"] != false {
		t.Fatalf("repeat: %s", r.raw)
	}
	d := hs.do("GET", "/api/events/e1/draw", "", nil)
	if d.num("beacon_round") != 5 || d.str("beacon_source") != "drand quicknet" || d.str("beacon") != "" {
		t.Fatalf("draw document: %s", d.raw)
	}
	r = hs.do("PUT", path, hs.admin, map[string]any{"round": 5, "value": value})
	if want(t, r, 200, ""); r.str("beacon") != value {
		t.Fatalf("value: %s", r.raw)
	}
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"round": 5, "value": strings.Repeat("00", 32)}), 409, "beacon_value_set")
	b, err := l.Beacon(context.Background(), "e1")
	if err != nil || b != (fairness.Beacon{Round: 5, Source: "drand quicknet", Value: value}) {
		t.Fatalf("ledger's beacon: %+v %v", b, err)
	}
}
