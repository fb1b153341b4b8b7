package notifier

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// A pre-queued user's first message has no position nor ETA but the
// sales start, when the draw places them.
func TestInitialMessageOfAPrequeuedUser(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	start := now.Add(5 * time.Minute)
	st := booking.Status{State: booking.StateWaiting, Sequence: 7, SalesStart: start,
		Counts: booking.Counts{AdmittedLastMinute: 10}}
	b, err := initialMessage("e1", st, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["prequeued"] != start.UTC().Format(time.RFC3339Nano) || m["eta_seconds"] != nil || m["position"] != float64(0) {
		t.Fatalf("pre-queued first message: %s", b)
	}
	b, _ = initialMessage("e1", booking.Status{State: booking.StateWaiting, Sequence: 7, Position: 3, SalesStart: now.Add(-time.Second),
		Counts: booking.Counts{AdmittedLastMinute: 60}}, nil, now)
	m = nil
	_ = json.Unmarshal(b, &m)
	if _, ok := m["prequeued"]; ok || m["eta_seconds"] != float64(3) {
		t.Fatalf("after the start: %s", b)
	}
	// a later phase's pre-queued fan after the phase's start, before its
	// draw placed them: position 0, still pre-queued
	b, _ = initialMessage("e1", booking.Status{State: booking.StateWaiting, Sequence: 7, SalesStart: now.Add(-time.Second),
		Counts: booking.Counts{AdmittedLastMinute: 60}}, nil, now)
	m = nil
	_ = json.Unmarshal(b, &m)
	if m["prequeued"] != now.Add(-time.Second).UTC().Format(time.RFC3339Nano) || m["eta_seconds"] != nil {
		t.Fatalf("a phase's pre-queued fan before the draw: %s", b)
	}
}

// Past the sales end a waiting user's first message, and a stranger's,
// is sales_ended: nobody will be admitted.
func TestInitialMessageAfterTheSalesEnd(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for name, err := range map[string]error{"waiting": nil, "not joined": booking.ErrNotFound} {
		st := booking.Status{State: booking.StateWaiting, Sequence: 7, Position: 3, SalesEnded: true}
		b, e := initialMessage("e1", st, err, now)
		var m map[string]any
		if e != nil || json.Unmarshal(b, &m) != nil || m["type"] != "sales_ended" {
			t.Fatalf("%s: %s %v", name, b, e)
		}
	}
}
