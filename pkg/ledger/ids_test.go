package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// TestFactIDsNeverRepeatAcrossRebuilds: fact ids never repeat, through
// the id: an event is rebuilt from the ledger twice (Redis lost it twice),
// the second time by an instance whose clock is a second behind; the users
// who join again (the same users every time) get facts whose ids no earlier
// join had, so consumers that dedupe by id drop nothing new. Each
// restore's own fact is new too.
func TestFactIDsNeverRepeatAcrossRebuilds(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "ids", Name: "Ids", Rows: 1, SeatsPerRow: 10, Capacity: 2})
	clock := time.Now()
	g.r.Now = func() time.Time { return clock }
	ctx := context.Background()
	seen := map[string]string{}
	record := func(round int, ev events.Event) {
		t.Helper()
		if prev, dup := seen[ev.ID]; dup {
			t.Fatalf("round %d: %s %s has the id of %s", round, ev.Type, ev.UserID, prev)
		}
		seen[ev.ID] = fmt.Sprintf("round %d %s %s seq %d", round, ev.Type, ev.UserID, ev.Sequence)
	}
	for round := range 3 {
		if round > 0 {
			g.flush()
			if round == 2 {
				clock = clock.Add(-time.Second) // another instance, its clock behind
			}
			res, err := g.r.Restore(ctx, g.event)
			if err != nil {
				t.Fatalf("restore %d: %v", round, err)
			}
			record(round, events.EventRestored(g.event, res.SeqBase, "", clock))
		}
		for i := range 1500 {
			u := fmt.Sprintf("u%04d", i)
			j := g.join(u)
			record(round, events.BookingRequested(g.event, u, j.Sequence, clock))
		}
	}
}
