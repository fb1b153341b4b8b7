package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// TestUpdateEventStoresEverySettingAndNumbersTheChanges: every setting an
// admin can patch is kept in the ledger (so a rebuild restores it), each
// update that changes something gets the next revision and says what it
// changed; one that changes nothing keeps the last change.
func TestUpdateEventStoresEverySettingAndNumbersTheChanges(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "upd", Name: "Show", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	name, grace, batch := "Big Show", 30*time.Second, 7
	start := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	d, err := g.led.UpdateEvent(ctx, "upd", booking.EventUpdate{Name: &name, Grace: &grace, BatchSize: &batch, SalesStart: &start})
	if err != nil {
		t.Fatal(err)
	}
	if d.Config.Name != name || d.Config.Grace != grace || d.Config.BatchSize != batch || !d.Config.SalesStart.Equal(start) {
		t.Fatalf("not stored: %+v", d.Config)
	}
	if d.Revision != 1 || d.LastChange != `batch_size=7 grace_seconds=30 name="Big Show" sales_start=2027-01-02T03:04:05Z` {
		t.Fatalf("change %d %q", d.Revision, d.LastChange)
	}
	d, err = g.led.UpdateEvent(ctx, "upd", booking.EventUpdate{Name: &name, BatchSize: &batch})
	if err != nil || d.Revision != 1 || d.LastChange == "" {
		t.Fatalf("no-op update: %d %q %v", d.Revision, d.LastChange, err)
	}
	var zero time.Time
	d, err = g.led.UpdateEvent(ctx, "upd", booking.EventUpdate{SalesStart: &zero})
	if err != nil || d.Revision != 2 || !d.Config.SalesStart.IsZero() || d.LastChange != "sales_start=" {
		t.Fatalf("cleared start: %d %q %+v %v", d.Revision, d.LastChange, d.Config.SalesStart, err)
	}
}
