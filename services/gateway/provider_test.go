package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// TestAdminProvider: an operator declares the payment provider degraded:
// the holds in the room stop, a join that would have entered at once
// queues, one fact per event; a repeat changes nothing; recovery restarts
// the clocks and promotes.
func TestAdminProvider(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 2, "hold_seconds": 30})
	u1, u2 := hs.token("u1", ""), hs.token("u2", "")
	if r := hs.do("POST", "/api/booking/request", u1, map[string]any{"event_id": "e1"}); r.str("status") != "active" {
		t.Fatalf("join: %s", r.raw)
	}

	want(t, hs.do("PUT", "/api/admin/provider", u1, map[string]any{"degraded": true}), 403, "forbidden")
	want(t, hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{}), 400, "invalid_argument")
	want(t, hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": "yes"}), 400, "invalid_body")

	r := hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": true})
	evs, _ := r.body["events"].([]any)
	if r.code != 200 || r.num("changed") != 1 || len(evs) != 1 {
		t.Fatalf("degraded: %s", r.raw)
	}
	if e := evs[0].(map[string]any); e["holds"] != float64(1) || e["paused_since"] == "" || e["changed"] != true {
		t.Fatalf("degraded: %s", r.raw)
	}
	facts := hs.rec.Topic(events.TopicProviderDegraded)
	if len(facts) != 1 || facts[0].EventID != "e1" || facts[0].Reason != "holds=1 by=operator" {
		t.Fatalf("provider_degraded: %+v", facts)
	}
	if r := hs.do("POST", "/api/booking/request", u2, map[string]any{"event_id": "e1"}); r.str("status") != "queued" {
		t.Fatalf("join during the outage: %s, want queued", r.raw)
	}

	r = hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": true})
	if r.code != 200 || r.num("changed") != 0 {
		t.Fatalf("degraded again: %s", r.raw)
	}
	if again := hs.rec.Topic(events.TopicProviderDegraded); len(again) != 2 || again[1].ID != facts[0].ID {
		t.Fatalf("a repeat publishes the same fact: %+v", again)
	}

	released := len(hs.ann.Released())
	r = hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": false})
	if r.code != 200 || r.num("changed") != 1 {
		t.Fatalf("recovered: %s", r.raw)
	}
	rec := hs.rec.Topic(events.TopicProviderRecovered)
	if len(rec) != 1 || rec[0].Sequence != facts[0].Sequence {
		t.Fatalf("provider_recovered: %+v", rec)
	}
	if rel := hs.ann.Released(); len(rel) != released+1 || rel[len(rel)-1] != messages.ReasonCapacity {
		t.Fatalf("recovery did not release a slot: %v", rel)
	}
	if r := hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": false}); r.code != 200 || r.num("changed") != 0 {
		t.Fatalf("recovered again: %s", r.raw)
	}
}
