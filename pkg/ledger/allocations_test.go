package ledger_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

func (g *rig) allocate(channel string, at time.Time, seats ...string) ledger.MarkChange {
	g.t.Helper()
	res, err := g.led.AllocateSeats(context.Background(), g.store, g.event, channel, "ops@example.com", at, seats,
		func(ctx context.Context) ([]string, error) {
			return g.store.AllocateSeats(ctx, g.event, channel, at, seats)
		})
	if err != nil {
		g.t.Fatalf("allocate %v to %s: %v", seats, channel, err)
	}
	return res
}

// unpublished is the last unpublished seat mark change of mark (zero
// when there is none).
func (g *rig) unpublished(mark booking.SeatMark) ledger.MarkChange {
	g.t.Helper()
	facts, err := g.led.UnpublishedMarkChanges(context.Background(), 0, 100)
	if err != nil {
		g.t.Fatal(err)
	}
	var last ledger.MarkChange
	for _, f := range facts {
		if f.Mark == mark && f.EventID == g.event {
			last = f
		}
	}
	return last
}

func (g *rig) status() map[string]booking.SeatStatus {
	g.t.Helper()
	all, err := g.store.Seats(context.Background(), g.event)
	if err != nil {
		g.t.Fatal(err)
	}
	st := map[string]booking.SeatStatus{}
	for _, s := range all {
		st[s.ID] = s.Status
	}
	return st
}

// Allocations are recorded with who and when, kept by a rebuild with
// their release time, and ended by the sweep once Redis's clock says so.
func TestAllocationsRecordedRestoredAndReleased(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "alloc", Name: "Alloc", Rows: 2, SeatsPerRow: 5, Capacity: 5})
	ctx := context.Background()
	later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	first := g.allocate("partner", later, "A1", "A2")
	if first.ID == 0 || !slices.Equal(first.Changed, []string{"A1", "A2"}) {
		t.Fatalf("allocate: %+v", first)
	}
	if f := first.Fact(); f.Type != events.TopicSeatsAllocated || f.Reason != "channel=partner" {
		t.Fatalf("fact %+v", f)
	}
	g.allocate("early", time.Now().Add(-time.Minute), "B1")
	if got := g.marks(); got["A1"] != "allocate:partner" || got["B1"] != "allocate:early" {
		t.Fatalf("ledger marks %v", got)
	}

	// a rebuild keeps the seats allocated and the release time
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if st := g.status(); st["A1"] != booking.SeatAllocated || st["B1"] != booking.SeatAllocated {
		t.Fatalf("after the rebuild: %v", st)
	}
	_, err := g.store.ReleaseAllocation(ctx, g.event, "partner", true)
	var early *booking.AllocationNotDueError
	if !errors.As(err, &early) || !early.At.Equal(later) {
		t.Fatalf("the release time after the rebuild: %v", err)
	}

	// the sweep ends the due one only, once, with its fact
	sw := &ledger.AllocationSweeper{Ledger: g.led, Store: g.store, Publisher: &ledger.MarkPublisher{Ledger: g.led, Kafka: g.rec},
		Release: func(ctx context.Context, event, channel string) (booking.AllocationEnd, error) {
			return g.store.ReleaseAllocation(ctx, event, channel, true)
		}}
	if n, err := sw.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if n, err := sw.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep: %d %v", n, err)
	}
	if st := g.status(); st["B1"] != booking.SeatAvailable || st["A1"] != booking.SeatAllocated {
		t.Fatalf("after the sweep: %v", st)
	}
	rel := g.rec.Topic(events.TopicAllocationReleased)
	if len(rel) != 1 || rel[0].SeatID != "B1" || rel[0].UserID != ledger.SystemActor || rel[0].Reason != "channel=early" {
		t.Fatalf("allocation_released %+v", rel)
	}
	if got := g.marks(); got["B1"] != "" || got["A1"] != "allocate:partner" {
		t.Fatalf("ledger marks after the sweep %v", got)
	}

	// the operator ends one at once; a repeat records nothing
	res, err := g.led.ReleaseAllocation(ctx, g.store, g.event, "partner", "ops@example.com", func(ctx context.Context) (booking.AllocationEnd, error) {
		return g.store.ReleaseAllocation(ctx, g.event, "partner", false)
	})
	if err != nil || res.ID == 0 || len(res.Changed) != 2 {
		t.Fatalf("release: %+v %v", res, err)
	}
	again, err := g.led.ReleaseAllocation(ctx, g.store, g.event, "partner", "ops@example.com", func(ctx context.Context) (booking.AllocationEnd, error) {
		return g.store.ReleaseAllocation(ctx, g.event, "partner", false)
	})
	if err != nil || again.ID != 0 {
		t.Fatalf("a repeated release: %+v %v", again, err)
	}
	if len(g.marks()) != 0 {
		t.Fatalf("marks left %v", g.marks())
	}
}

// An allocation the ledger has a release time for but Redis has none
// (a rebuild whose step failed) still ends at that time: the sweep puts the ledger's time back and
// asks again, instead of finding it not due on every pass.
func TestSweepEndsAnAllocationRedisLostTheTimeOf(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "lost", Name: "Lost", Rows: 2, SeatsPerRow: 5, Capacity: 5})
	ctx := context.Background()
	g.allocate("early", time.Now().Add(-time.Minute), "B1", "B2")
	later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	g.allocate("partner", later, "A1")
	config := booking.EventKeys(g.store.Prefix(), g.event)[0]
	if err := g.rdb.HDel(ctx, config, "ra:early", "ra:partner").Err(); err != nil {
		t.Fatal(err)
	}
	sw := &ledger.AllocationSweeper{Ledger: g.led, Store: g.store, Publisher: &ledger.MarkPublisher{Ledger: g.led, Kafka: g.rec},
		Release: func(ctx context.Context, event, channel string) (booking.AllocationEnd, error) {
			return g.store.ReleaseAllocation(ctx, event, channel, true)
		},
		SetRelease: g.store.SetAllocationRelease}
	if n, err := sw.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if st := g.status(); st["B1"] != booking.SeatAvailable || st["B2"] != booking.SeatAvailable || st["A1"] != booking.SeatAllocated {
		t.Fatalf("after the sweep: %v", st)
	}
	if got := g.marks(); got["B1"] != "" || got["A1"] != "allocate:partner" {
		t.Fatalf("ledger marks after the sweep %v", got)
	}
}

// A wheelchair space or companion seat stays one when its allocation
// ends (the operator's release, the sweep at its release time) and
// through a rebuild of Redis from the ledger, sold or on sale.
func TestAccessibleSeatsKeptByTheLedger(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "access", Name: "Access", Rows: 2, SeatsPerRow: 5, Capacity: 5})
	ctx := context.Background()
	g.allocate(booking.ChannelWheelchair, time.Now().Add(-time.Minute), "A1", "B1")
	g.allocate(booking.ChannelCompanion, time.Now().Add(time.Hour), "A2")
	want := map[string]string{"A1": booking.ChannelWheelchair, "B1": booking.ChannelWheelchair, "A2": booking.ChannelCompanion}
	check := func(when string) {
		t.Helper()
		got, err := g.store.AccessibleSeats(ctx, g.event)
		if err != nil || !maps.Equal(got, want) {
			t.Fatalf("%s: accessible seats %v %v, want %v", when, got, err, want)
		}
	}
	sw := &ledger.AllocationSweeper{Ledger: g.led, Store: g.store, Publisher: &ledger.MarkPublisher{Ledger: g.led, Kafka: g.rec},
		Release: func(ctx context.Context, event, channel string) (booking.AllocationEnd, error) {
			return g.store.ReleaseAllocation(ctx, event, channel, true)
		}}
	if n, err := sw.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := g.led.ReleaseAllocation(ctx, g.store, g.event, booking.ChannelCompanion, "ops@example.com", func(ctx context.Context) (booking.AllocationEnd, error) {
		return g.store.ReleaseAllocation(ctx, g.event, booking.ChannelCompanion, false)
	}); err != nil {
		t.Fatal(err)
	}
	check("released")
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if st := g.status(); st["A1"] != booking.SeatAvailable || st["A2"] != booking.SeatAvailable {
		t.Fatalf("after the rebuild: %v", st)
	}
	check("rebuilt")
}

// The end of an allocation that Redis took in a call whose ledger
// transaction rolled back is recorded with the seats it put on sale: by
// the call's repeat or, without one, by the reconciliation (actor
// reconcile), so its fact names them and a rebuild does not allocate them
// again.
func TestAllocationEndRedisTookIsRecorded(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "keepend", Name: "End", Rows: 1, SeatsPerRow: 6, Capacity: 5})
	ctx := context.Background()
	g.allocate("partner", time.Time{}, "A1", "A2")
	g.allocate("press", time.Time{}, "A3", "A4")
	died := errors.New("connection lost before the commit")
	end := func(channel string, lost bool) (ledger.MarkChange, error) {
		return g.led.ReleaseAllocation(ctx, g.store, g.event, channel, "ops@example.com", func(ctx context.Context) (booking.AllocationEnd, error) {
			res, err := g.store.ReleaseAllocation(ctx, g.event, channel, false)
			if lost && err == nil {
				err = died
			}
			return res, err
		})
	}
	sorted := func(s []string) []string { return slices.Sorted(slices.Values(s)) }

	if _, err := end("partner", true); !errors.Is(err, died) {
		t.Fatalf("lost end: %v", err)
	}
	res, err := end("partner", false)
	if err != nil || res.ID == 0 || !slices.Equal(sorted(res.Changed), []string{"A1", "A2"}) {
		t.Fatalf("the repeat of a lost end: %+v %v", res, err)
	}
	if again, err := end("partner", false); err != nil || again.ID != 0 {
		t.Fatalf("a second repeat: %+v %v", again, err)
	}

	if _, err := end("press", true); !errors.Is(err, died) {
		t.Fatalf("lost end: %v", err)
	}
	rec, err := g.r.Reconcile(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.RecordedMarks) != 1 || rec.RecordedMarks[0].Mark != ledger.MarkReleaseAllocation || rec.RecordedMarks[0].ID == 0 ||
		rec.RecordedMarks[0].Purpose != "press" || rec.RecordedMarks[0].Actor != ledger.ReconcileActor ||
		!slices.Equal(sorted(rec.RecordedMarks[0].Changed), []string{"A3", "A4"}) {
		t.Fatalf("the reconciliation recorded %+v", rec.RecordedMarks)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.RecordedMarks) != 0 {
		t.Fatalf("a second reconciliation recorded %+v (%v)", rec.RecordedMarks, err)
	}
	if m := g.marks(); len(m) != 0 {
		t.Fatalf("the ledger still allocates %v", m)
	}
	// a rebuild keeps them on sale
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if st := g.status(); st["A1"] != booking.SeatAvailable || st["A3"] != booking.SeatAvailable {
		t.Fatalf("after the rebuild: %v", st)
	}
}

// An end Redis took and the ledger lost, followed by a new allocation of
// the same channel before the reconciliation: the allocation records the
// end first (actor reconcile), so the old seats are not allocated in the
// ledger still and a rebuild keeps them on sale.
func TestAllocationEndLostBeforeTheChannelIsAllocatedAgain(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "endrealloc", Name: "Again", Rows: 1, SeatsPerRow: 6, Capacity: 5})
	ctx := context.Background()
	g.allocate("partner", time.Now().Add(time.Hour).Truncate(time.Millisecond), "A1", "A2")
	died := errors.New("connection lost before the commit")
	if _, err := g.led.ReleaseAllocation(ctx, g.store, g.event, "partner", "ops@example.com", func(ctx context.Context) (booking.AllocationEnd, error) {
		res, err := g.store.ReleaseAllocation(ctx, g.event, "partner", false)
		if err == nil {
			err = died
		}
		return res, err
	}); !errors.Is(err, died) {
		t.Fatalf("lost end: %v", err)
	}
	again := g.allocate("partner", time.Time{}, "A3")
	if again.ID == 0 || !slices.Equal(again.Changed, []string{"A3"}) {
		t.Fatalf("the new allocation: %+v", again)
	}
	if m := g.marks(); !maps.Equal(m, map[string]string{"A3": "allocate:partner"}) {
		t.Fatalf("the ledger allocates %v", m)
	}
	if rel, err := g.led.AllocationReleases(ctx, g.event); err != nil || len(rel) != 0 {
		t.Fatalf("the ended allocation's release time is still recorded: %+v %v", rel, err)
	}
	if end := g.unpublished(ledger.MarkReleaseAllocation); end.Purpose != "partner" || end.Actor != ledger.ReconcileActor ||
		end.ID == 0 || end.ID > again.ID || !slices.Equal(slices.Sorted(slices.Values(end.Changed)), []string{"A1", "A2"}) {
		t.Fatalf("the lost end is not recorded before the allocation: %+v", end)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.RecordedMarks) != 0 {
		t.Fatalf("the reconciliation recorded %+v (%v)", rec.RecordedMarks, err)
	}
	if n := testutil.ToFloat64(g.r.Metrics.Recorded("seat_marks")); n != 1 {
		t.Fatalf("lost changes counted: %v, want the end", n)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if st := g.status(); st["A1"] != booking.SeatAvailable || st["A2"] != booking.SeatAvailable || st["A3"] != booking.SeatAllocated {
		t.Fatalf("after the rebuild: %v", st)
	}
}

// An allocation Redis took and the ledger lost, ended before the
// reconciliation: the end records the allocation first (actor
// reconcile), so its fact precedes the end's and the ledger never ends
// an allocation it had no record of.
func TestAllocationLostBeforeItsEnd(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "lostalloc", Name: "Lost", Rows: 1, SeatsPerRow: 6, Capacity: 5})
	ctx := context.Background()
	g.loseAllocation("partner", time.Now().Add(time.Hour).Truncate(time.Millisecond), "A1", "A2")
	end, err := g.led.ReleaseAllocation(ctx, g.store, g.event, "partner", "ops@example.com", func(ctx context.Context) (booking.AllocationEnd, error) {
		return g.store.ReleaseAllocation(ctx, g.event, "partner", false)
	})
	if err != nil || end.ID == 0 || !slices.Equal(slices.Sorted(slices.Values(end.Changed)), []string{"A1", "A2"}) {
		t.Fatalf("the end: %+v %v", end, err)
	}
	if alloc := g.unpublished(booking.MarkAllocate); alloc.Purpose != "partner" || alloc.Actor != ledger.ReconcileActor ||
		alloc.ID == 0 || alloc.ID > end.ID || !slices.Equal(slices.Sorted(slices.Values(alloc.Changed)), []string{"A1", "A2"}) {
		t.Fatalf("the lost allocation is not recorded before its end: %+v", alloc)
	}
	if m := g.marks(); len(m) != 0 {
		t.Fatalf("the ledger still allocates %v", m)
	}
	if rel, err := g.led.AllocationReleases(ctx, g.event); err != nil || len(rel) != 0 {
		t.Fatalf("release times left: %+v %v", rel, err)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.RecordedMarks) != 0 {
		t.Fatalf("the reconciliation recorded %+v (%v)", rec.RecordedMarks, err)
	}
	if n := testutil.ToFloat64(g.r.Metrics.Recorded("seat_marks")); n != 1 {
		t.Fatalf("lost changes counted: %v, want the allocation", n)
	}
}
