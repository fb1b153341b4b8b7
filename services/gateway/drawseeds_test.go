package main

import (
	"context"
	"testing"
	"time"
)

// The draw seeds of the event's pre-queue (made on create, or by a PATCH
// of early_join_seconds) and of a later phase's (made when the schedule
// is saved) are in the ledger, and an admin restore after Redis lost the
// event publishes the same commitments as before.
func TestDrawCommitmentsSurviveARebuild(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ctx := context.Background()
	start := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	at := func(h int) string { return start.Add(time.Duration(h) * time.Hour).UTC().Format(time.RFC3339) }
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 4, "sales_start": at(0),
		"early_join_seconds": 3600})
	hs.createEvent(map[string]any{"id": "e2", "rows": 1, "seats_per_row": 4, "capacity": 4, "sales_start": at(0)})
	want(t, hs.do("PATCH", "/api/admin/events/e2", hs.admin, map[string]any{"early_join_seconds": 600}), 200, "")
	want(t, hs.do("PUT", "/api/admin/events/e1/phases", hs.admin, map[string]any{"phases": []map[string]any{
		{"id": "presale", "starts_at": at(0), "ends_at": at(1), "audience": "public"},
		{"id": "general", "starts_at": at(2), "ends_at": at(3), "audience": "public", "early_join_seconds": 600}}}), 200, "")

	commits := func(id string) (string, string) {
		t.Helper()
		r := hs.do("GET", "/api/events/"+id, "", nil)
		want(t, r, 200, "")
		var phase string
		if sch, ok := r.body["schedule"].([]any); ok && len(sch) == 2 {
			phase, _ = sch[1].(map[string]any)["draw_commit"].(string)
		}
		return r.str("draw_commit"), phase
	}
	for _, id := range []string{"e1", "e2"} {
		kept, err := l.DrawSeeds(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		event, phase := commits(id)
		if event == "" || len(kept) == 0 || kept[0].Phase != "" || kept[0].Commit != event {
			t.Fatalf("%s: the ledger keeps %+v, the event publishes %q", id, kept, event)
		}
		if id == "e1" && (phase == "" || len(kept) != 2 || kept[1].Phase != "general" || kept[1].Commit != phase) {
			t.Fatalf("%s: the ledger keeps %+v, the later phase publishes %q", id, kept, phase)
		}
		if err := redisDel(hs, id); err != nil {
			t.Fatal(err)
		}
		want(t, hs.do("POST", "/api/admin/events/"+id+"/restore", hs.admin, nil), 200, "")
		if e, p := commits(id); e != event || p != phase {
			t.Fatalf("%s after the rebuild: commitments %q %q, want %q %q", id, e, p, event, phase)
		}
	}
}
