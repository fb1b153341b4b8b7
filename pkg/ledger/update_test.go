package ledger_test

import (
	"context"
	"errors"
	"sync"
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
	d, err := g.led.UpdateEvent(ctx, "upd", booking.EventUpdate{Name: &name, Grace: &grace, BatchSize: &batch, SalesStart: &start}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Config.Name != name || d.Config.Grace != grace || d.Config.BatchSize != batch || !d.Config.SalesStart.Equal(start) {
		t.Fatalf("not stored: %+v", d.Config)
	}
	if d.Revision != 1 || d.LastChange != `batch_size=7 grace_seconds=30 name="Big Show" sales_start=2027-01-02T03:04:05Z` {
		t.Fatalf("change %d %q", d.Revision, d.LastChange)
	}
	d, err = g.led.UpdateEvent(ctx, "upd", booking.EventUpdate{Name: &name, BatchSize: &batch}, nil)
	if err != nil || d.Revision != 1 || d.LastChange == "" {
		t.Fatalf("no-op update: %d %q %v", d.Revision, d.LastChange, err)
	}
	var zero time.Time
	d, err = g.led.UpdateEvent(ctx, "upd", booking.EventUpdate{SalesStart: &zero}, nil)
	if err != nil || d.Revision != 2 || !d.Config.SalesStart.IsZero() || d.LastChange != "sales_start=" {
		t.Fatalf("cleared start: %d %q %+v %v", d.Revision, d.LastChange, d.Config.SalesStart, err)
	}
}

// Every bound PostgreSQL has (int4 columns, text without NUL) is checked
// before it: a value past one is booking's invalid argument or invalid
// event, which the admin API answers 400, never a failed statement, which
// it would answer 503 ("retry") though no retry can pass. Nothing changes.
func TestEventBoundsAreCheckedBeforePostgreSQL(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "bnd", Name: "Show", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	big, neg, nul, ctl := 1<<31, -1<<63, "a\x00b", "a\nb"
	for name, u := range map[string]booking.EventUpdate{
		"capacity 2^31": {Capacity: &big}, "capacity -2^63": {Capacity: &neg},
		"batch_size 2^31": {BatchSize: &big}, "max_seats_per_order 2^31": {MaxSeatsPerOrder: &big},
		"admit_per_minute 2^31": {AdmitPerMinute: &big}, "admit_per_minute -2^63": {AdmitPerMinute: &neg},
		"name with NUL": {Name: &nul}, "name with a line break": {Name: &ctl},
	} {
		if _, err := g.led.UpdateEvent(ctx, "bnd", u, nil); !errors.Is(err, booking.ErrInvalidArgument) {
			t.Errorf("%s: %v, want invalid argument", name, err)
		}
	}
	for name, cfg := range map[string]booking.EventConfig{
		"name with NUL":         {ID: "bnd2", Name: nul, Rows: 1, SeatsPerRow: 1},
		"section name with NUL": {ID: "bnd3", Sections: []booking.Section{{Name: nul, Rows: 1, SeatsPerRow: 1}}},
		"capacity 2^31":         {ID: "bnd4", Rows: 1, SeatsPerRow: 1, Capacity: big},
	} {
		if _, _, err := g.led.CreateEvent(ctx, cfg); !errors.Is(err, booking.ErrInvalidEvent) {
			t.Errorf("create, %s: %v, want invalid event", name, err)
		}
	}
	d, err := g.led.Event(ctx, "bnd")
	if err != nil || d.Revision != 0 || d.Config.Name != "Show" || d.Config.Capacity != 2 {
		t.Fatalf("changed: %+v %v", d, err)
	}
}

// A settings change Redis took in a transaction PostgreSQL then did not
// commit (the gateway died between the two, or the commit failed) is
// undone in Redis: by the reconciliation, or by the event's next change,
// whichever comes first. PostgreSQL is the record; the change was never
// confirmed to the operator. A committed change stays, and a field
// something else changed since (a phase's hold) is left as it is.
func TestSettingsRedisTookWithoutTheLedgerAreUndone(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "lost", Name: "Show", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	died := errors.New("connection lost before the commit")
	lose := func(u booking.EventUpdate) {
		t.Helper()
		_, err := g.led.UpdateEvent(ctx, "lost", u, func(ctx context.Context, rev int64) error {
			u.Revision = rev
			if _, err := g.store.UpdateEvent(ctx, "lost", u); err != nil {
				return err
			}
			return died
		})
		if !errors.Is(err, died) {
			t.Fatalf("lost update: %v", err)
		}
	}
	keep := func(u booking.EventUpdate) {
		t.Helper()
		if _, err := g.led.UpdateEvent(ctx, "lost", u, func(ctx context.Context, rev int64) error {
			u.Revision = rev
			_, err := g.store.UpdateEvent(ctx, "lost", u)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(when string, capacity int, paused bool, name string, hold time.Duration) {
		t.Helper()
		e, err := g.store.GetEvent(ctx, "lost")
		if err != nil {
			t.Fatal(err)
		}
		if e.Capacity != capacity || e.Paused != paused || e.Name != name || e.Hold != hold {
			t.Fatalf("%s: Redis has capacity %d paused %v name %q hold %v, want %d %v %q %v",
				when, e.Capacity, e.Paused, e.Name, e.Hold, capacity, paused, name, hold)
		}
	}
	nine, yes, other, hold := 9, true, "Lost Show", 90*time.Second
	lose(booking.EventUpdate{Capacity: &nine, Paused: &yes, Name: &other, Hold: &hold})
	want("after the lost change", 9, true, "Lost Show", hold)
	// something else sets the hold since (a phase starting): not undone
	phaseHold := 45 * time.Second
	if _, err := g.store.UpdateEvent(ctx, "lost", booking.EventUpdate{Hold: &phaseHold}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.r.Reconcile(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	want("after the reconciliation", 2, false, "Show", phaseHold)

	// the next change undoes a lost one before its own
	lose(booking.EventUpdate{Capacity: &nine, Paused: &yes})
	renamed := "Renamed Show"
	keep(booking.EventUpdate{Name: &renamed})
	want("after the next change", 2, false, renamed, phaseHold)

	// a committed change stays through the reconciliation
	keep(booking.EventUpdate{Capacity: &nine})
	if _, err := g.r.Reconcile(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	want("after a committed change", 9, false, renamed, phaseHold)
	if d, err := g.led.Event(ctx, "lost"); err != nil || d.Config.Capacity != 9 || d.Paused || d.Config.Name != renamed {
		t.Fatalf("ledger: %+v %v", d, err)
	}
}

// A reconciliation while a change is between Redis and its commit leaves
// it alone (the event's row is locked: it skips the event this pass), so
// a change under way is never taken for a lost one.
func TestSettingsUnderWayAreLeftAlone(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "busy", Name: "Show", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	nine := 9
	inRedis, commit := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(commit) }) }
	defer release() // a failure below lets the change commit
	done := make(chan error, 1)
	go func() {
		u := booking.EventUpdate{Capacity: &nine}
		_, err := g.led.UpdateEvent(ctx, "busy", u, func(ctx context.Context, rev int64) error {
			u.Revision = rev
			_, err := g.store.UpdateEvent(ctx, "busy", u)
			close(inRedis)
			<-commit
			return err
		})
		done <- err
	}()
	<-inRedis
	rec, err := g.r.Reconcile(ctx, "busy")
	if err != nil || len(rec.UndoneSettings) != 0 {
		t.Fatalf("reconciled a change under way: %+v %v", rec, err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec, err = g.r.Reconcile(ctx, "busy"); err != nil || len(rec.UndoneSettings) != 0 {
		t.Fatalf("undid a committed change: %+v %v", rec, err)
	}
	if e, err := g.store.GetEvent(ctx, "busy"); err != nil || e.Capacity != 9 {
		t.Fatalf("capacity %d %v, want 9", e.Capacity, err)
	}
}
