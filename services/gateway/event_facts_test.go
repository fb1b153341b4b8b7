package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// TestEventFactsOncePerChange: creating an event publishes event_created
// (its settings, the ledger's creation time); each PATCH that changes a
// setting publishes one event_updated numbered by the ledger's revision,
// saying what changed; a PATCH that changes nothing republishes the last
// change as it was (same id, same bytes), never a new one.
func TestEventFactsOncePerChange(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2})
	created := hs.rec.Topic(events.TopicEventCreated)
	if len(created) != 1 || created[0].EventID != "e1" || created[0].UserID != events.RestoredBy ||
		created[0].Reason != "abandon_seconds=0 batch_size=500 capacity=2 grace_seconds=120 hold_seconds=600 seats=4" {
		t.Fatalf("event_created %+v", created)
	}
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"capacity": 3, "paused": true}), 200, "")
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"capacity": 3}), 200, "") // no change
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"paused": false, "hold_seconds": 90}), 200, "")
	up := hs.rec.Topic(events.TopicEventUpdated)
	if len(up) != 3 {
		t.Fatalf("%d event_updated, want 3: %+v", len(up), up)
	}
	if up[0].Sequence != 1 || up[0].Reason != "capacity=3 paused=true" {
		t.Errorf("first change %+v", up[0])
	}
	a, _ := events.Encode(up[0])
	b, _ := events.Encode(up[1])
	if string(a) != string(b) {
		t.Errorf("a PATCH that changed nothing published a new fact:\n%s\n%s", a, b)
	}
	if up[2].Sequence != 2 || up[2].Reason != "hold_seconds=90 paused=false" || up[2].ID == up[0].ID {
		t.Errorf("second change %+v", up[2])
	}
}

// TestRetriedCreateRepublishesTheSameEventCreated: the same create again
// (the retry of a call whose answer or publish was lost) answers 201 and
// republishes event_created byte for byte (the ledger's creation time).
func TestRetriedCreateRepublishesTheSameEventCreated(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	def := map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2}
	hs.createEvent(def)
	want(t, hs.do("POST", "/api/admin/events", hs.admin, def), 201, "")
	got := hs.rec.Topic(events.TopicEventCreated)
	if len(got) != 2 {
		t.Fatalf("%d event_created, want 2", len(got))
	}
	a, _ := events.Encode(got[0])
	b, _ := events.Encode(got[1])
	if string(a) != string(b) {
		t.Errorf("copies differ:\n%s\n%s", a, b)
	}
}
