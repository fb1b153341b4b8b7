package ledger_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// A schedule is checked against the event before anything is written,
// saved with Redis's copy, applied once however many gateways race at a
// boundary, restored by a rebuild; the phase current at a sale is
// recorded with its order and the sales add up per phase.
func TestScheduleAppliedOnceRecordedAndRestored(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "sched", Name: "Sched", Capacity: 4,
		Sections: []booking.Section{{Name: "floor", Rows: 1, SeatsPerRow: 4, PriceCents: 5000}}})
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	save := func(sch booking.Schedule) (booking.Schedule, error) {
		return g.led.SetSchedule(ctx, g.event, sch, "otto", func(ctx context.Context, def booking.EventConfig, sch booking.Schedule, rev int64) error {
			return g.store.SetSchedule(ctx, def, sch, rev)
		})
	}
	bad := booking.Schedule{Phases: []booking.Phase{{ID: "a", StartsAt: now, EndsAt: now.Add(time.Hour),
		Audience: booking.AudiencePublic, Prices: map[string]int64{"balcony": 1}}}}
	if _, err := save(bad); !errors.Is(err, booking.ErrInvalidArgument) {
		t.Fatalf("a price for an unknown section: %v", err)
	}
	if sch, err := g.led.Schedule(ctx, g.event); err != nil || len(sch.Phases) != 0 {
		t.Fatalf("a refused schedule was saved: %+v %v", sch, err)
	}
	if _, err := save(booking.Schedule{}); err != nil {
		t.Fatal(err)
	}
	sch := booking.Schedule{Phases: []booking.Phase{
		{ID: "fanclub", Name: "Fan club", StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Audience: booking.AudiencePublic,
			Prices: map[string]int64{"floor": 4000}},
		{ID: "general", StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), Audience: booking.AudiencePublic}}}
	saved, err := save(sch)
	if err != nil || saved.OnPhaseChange != booking.PhaseChangeKeep {
		t.Fatalf("save: %+v %v", saved, err)
	}
	if evs, err := g.led.ScheduledEvents(ctx); err != nil || len(evs) == 0 {
		t.Fatalf("scheduled events: %v %v", evs, err)
	}
	var wg sync.WaitGroup
	ids := make(chan int64, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.led.ApplyPhase(ctx, g.event, ledger.ScheduleActor, func(ctx context.Context) (booking.PhaseState, booking.PhaseState, bool, error) {
				st, err := g.store.ApplySchedule(ctx, g.event, true)
				return st.Previous, st.Next, st.Changed, err
			})
			if err != nil {
				t.Error(err)
			}
			ids <- res.ID
		}()
	}
	wg.Wait()
	close(ids)
	recorded := 0
	for id := range ids {
		if id != 0 {
			recorded++
		}
	}
	changes, err := g.led.Phases(ctx, g.event)
	if recorded != 1 || err != nil || len(changes) != 1 || changes[0].Phase != "fanclub" || changes[0].Actor != ledger.ScheduleActor {
		t.Fatalf("8 gateways at one boundary: %d recorded, changes %+v %v", recorded, changes, err)
	}
	g.join("ann")
	if ok, err := g.buy("ann", "A1"); !ok || err != nil {
		t.Fatalf("buy: %v %v", ok, err)
	}
	by, err := g.led.SalesByPhase(ctx, g.event) // (buy records 5000 a payment)
	if err != nil || len(by) != 1 || by[0] != (ledger.PhaseSales{Phase: "fanclub", Currency: "EUR", Orders: 1, Seats: 1, Revenue: 5000}) {
		t.Fatalf("sales by phase: %+v %v", by, err)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	st, err := g.store.ApplySchedule(ctx, g.event, false)
	if err != nil || !st.Due || st.Changed || st.Next.Phase != "fanclub" {
		t.Fatalf("after the rebuild: %+v %v", st, err)
	}
}

// A schedule Redis took in a save whose ledger transaction then rolled
// back (the gateway died between the two) is undone by the
// reconciliation: the ledger's schedule is Redis's again, and when a
// tick had already made the lost schedule's phase current, the next tick
// makes the ledger's schedule's phase current again, with its settings.
func TestScheduleRedisTookWithoutTheLedgerIsUndone(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "lostsched", Name: "Sched", Capacity: 4,
		Sections: []booking.Section{{Name: "floor", Rows: 1, SeatsPerRow: 4, PriceCents: 5000}}})
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	died := errors.New("connection lost before the commit")
	save := func(sch booking.Schedule, fail error) {
		t.Helper()
		_, err := g.led.SetSchedule(ctx, g.event, sch, "otto",
			func(ctx context.Context, def booking.EventConfig, sch booking.Schedule, rev int64) error {
				if err := g.store.SetSchedule(ctx, def, sch, rev); err != nil {
					return err
				}
				return fail
			})
		if !errors.Is(err, fail) {
			t.Fatalf("save: %v, want %v", err, fail)
		}
	}
	tick := func() {
		t.Helper()
		if _, err := g.led.ApplyPhase(ctx, g.event, ledger.ScheduleActor, func(ctx context.Context) (booking.PhaseState, booking.PhaseState, bool, error) {
			st, err := g.store.ApplySchedule(ctx, g.event, true)
			return st.Previous, st.Next, st.Changed, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(when, phase, audience string, hold time.Duration, onChange string) {
		t.Helper()
		e, err := g.store.GetEvent(ctx, g.event)
		if err != nil {
			t.Fatal(err)
		}
		if e.Phase != phase || e.Audience != audience || e.Hold != hold || e.OnPhaseChange != onChange {
			t.Fatalf("%s: Redis has phase %q audience %q hold %v on_phase_change %q, want %q %q %v %q",
				when, e.Phase, e.Audience, e.Hold, e.OnPhaseChange, phase, audience, hold, onChange)
		}
	}
	reconcile := func(when string) {
		t.Helper()
		rec, err := g.r.Reconcile(ctx, g.event)
		if err != nil || !slices.Contains(rec.UndoneSettings, "schedule") {
			t.Fatalf("%s: the reconciliation undid %v (%v), want the schedule", when, rec.UndoneSettings, err)
		}
	}
	secs := func(s int) *int { return &s }
	kept := booking.Schedule{Phases: []booking.Phase{
		{ID: "fanclub", StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Audience: booking.AudiencePublic, HoldSeconds: secs(60)},
		{ID: "general", StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), Audience: booking.AudiencePublic}}}
	lost := booking.Schedule{OnPhaseChange: booking.PhaseChangeLeave, Phases: []booking.Phase{
		{ID: "presale", StartsAt: now.Add(-time.Hour), EndsAt: now.Add(2 * time.Hour), Audience: booking.AudienceCode, HoldSeconds: secs(30)}}}
	save(kept, nil)
	tick()
	want("the kept schedule applied", "fanclub", booking.AudiencePublic, time.Minute, booking.PhaseChangeKeep)

	// lost before any tick applied it: undone, its phase never current
	save(lost, died)
	want("after the lost save", "fanclub", booking.AudiencePublic, time.Minute, booking.PhaseChangeLeave)
	reconcile("before a tick")
	want("after the reconciliation", "fanclub", booking.AudiencePublic, time.Minute, booking.PhaseChangeKeep)
	if st, err := g.store.ApplySchedule(ctx, g.event, false); err != nil || st.Due || st.Next.Phase != "fanclub" {
		t.Fatalf("the kept schedule's slot is not the one applied again: %+v %v", st, err)
	}

	// lost, and a tick made its phase current meanwhile: the next tick
	// after the reconciliation goes back to the ledger's phase
	save(lost, died)
	tick()
	want("a tick on the lost schedule", "presale", booking.AudienceCode, 30*time.Second, booking.PhaseChangeLeave)
	reconcile("after a tick")
	tick()
	want("the next tick", "fanclub", booking.AudiencePublic, time.Minute, booking.PhaseChangeKeep)
	changes, err := g.led.Phases(ctx, g.event)
	if err != nil || len(changes) != 3 || changes[1].Phase != "presale" || changes[2].Phase != "fanclub" {
		t.Fatalf("the ledger's phase changes: %+v %v", changes, err)
	}
	if sch, err := g.led.Schedule(ctx, g.event); err != nil || len(sch.Phases) != 2 || sch.Phases[0].ID != "fanclub" {
		t.Fatalf("the ledger's schedule: %+v %v", sch, err)
	}
}

// A phase change Redis took in a call whose ledger transaction then rolled
// back (the gateway died between the two) is recorded all the same: by
// the call's repeat, which Redis answers as no change, or else by the
// reconciliation, so a rebuild keeps the phase fans joined and bought in.
func TestPhaseRedisTookWithoutTheLedgerIsRecorded(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "lostphase", Name: "Phase", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	died := errors.New("connection lost before the commit")
	set := func(p booking.PhaseState, fail error) ledger.PhaseChange {
		t.Helper()
		res, err := g.led.SetPhase(ctx, g.event, p, "otto", func(ctx context.Context) (booking.PhaseState, bool, error) {
			prev, changed, err := g.store.SetPhase(ctx, g.event, p)
			if err == nil {
				err = fail
			}
			return prev, changed, err
		})
		if !errors.Is(err, fail) {
			t.Fatalf("set phase %+v: %v, want %v", p, err, fail)
		}
		return res
	}
	last := func(when string) ledger.PhaseChange {
		t.Helper()
		changes, err := g.led.Phases(ctx, g.event)
		if err != nil || len(changes) == 0 {
			t.Fatalf("%s: the ledger's phase changes: %+v %v", when, changes, err)
		}
		return changes[len(changes)-1]
	}
	presale := booking.PhaseState{Phase: "presale", Audience: booking.AudienceCode}
	general := booking.PhaseState{Phase: "general", Audience: booking.AudiencePublic}

	set(presale, died)
	if res := set(presale, nil); res.ID == 0 {
		t.Fatal("the repeat of a lost phase change recorded nothing")
	}
	if l := last("after the repeat"); l.Phase != "presale" || l.Audience != booking.AudienceCode || l.Previous != "" {
		t.Fatalf("after the repeat: %+v", l)
	}
	if res := set(presale, nil); res.ID != 0 {
		t.Fatalf("a repeat of a recorded change recorded again: %+v", res)
	}

	set(general, died)
	rec, err := g.r.Reconcile(ctx, g.event)
	if err != nil || rec.RecordedPhase != "general" {
		t.Fatalf("reconcile: recorded phase %q (%v), want general", rec.RecordedPhase, err)
	}
	if l := last("after the reconciliation"); l.Phase != "general" || l.Previous != "presale" || l.Actor != ledger.ReconcileActor {
		t.Fatalf("after the reconciliation: %+v", l)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || rec.RecordedPhase != "" {
		t.Fatalf("a second reconciliation recorded %q (%v)", rec.RecordedPhase, err)
	}
	if err := testutil.GatherAndCompare(g.reg, strings.NewReader(`
# HELP boxoffice_ledger_recorded_changes_total Admin changes Redis took whose ledger transaction rolled back, recorded in the ledger later: by reconciliation, or by the next change of the same seats, channel or phase.
# TYPE boxoffice_ledger_recorded_changes_total counter
boxoffice_ledger_recorded_changes_total{kind="phase"} 1
`), "boxoffice_ledger_recorded_changes_total"); err != nil {
		t.Fatal(err)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if e, err := g.store.GetEvent(ctx, g.event); err != nil || e.Phase != "general" || e.Audience != booking.AudiencePublic {
		t.Fatalf("after the rebuild: phase %q audience %q (%v)", e.Phase, e.Audience, err)
	}
}

// A reconciliation while a phase change is between Redis and its commit
// leaves it alone (the event's row is locked), so the change is recorded
// once, by its own call, under its own actor.
func TestPhaseUnderWayIsLeftToItsCall(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "busyphase", Name: "Phase", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	inRedis, commit := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(commit) }) }
	defer release() // a failure below lets the change commit
	done := make(chan error, 1)
	go func() {
		p := booking.PhaseState{Phase: "presale", Audience: booking.AudienceCode}
		_, err := g.led.SetPhase(ctx, g.event, p, "otto", func(ctx context.Context) (booking.PhaseState, bool, error) {
			prev, changed, err := g.store.SetPhase(ctx, g.event, p)
			close(inRedis)
			<-commit
			return prev, changed, err
		})
		done <- err
	}()
	<-inRedis
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || rec.RecordedPhase != "" {
		t.Fatalf("recorded a change under way: %+v %v", rec, err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || rec.RecordedPhase != "" {
		t.Fatalf("recorded a committed change again: %+v %v", rec, err)
	}
	changes, err := g.led.Phases(ctx, g.event)
	if err != nil || len(changes) != 1 || changes[0].Actor != "otto" || changes[0].Phase != "presale" {
		t.Fatalf("the ledger's phase changes: %+v %v", changes, err)
	}
}

// A phase change Redis took whose ledger transaction rolled back,
// followed by another change before the reconciliation: the lost change
// is recorded first (actor reconcile), so the ledger's history, and the
// facts it publishes, start every phase they end.
func TestPhaseLostBeforeTheNextChange(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "lostnext", Name: "Phase", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	died := errors.New("connection lost before the commit")
	presale := booking.PhaseState{Phase: "presale", Audience: booking.AudienceCode}
	general := booking.PhaseState{Phase: "general", Audience: booking.AudiencePublic}
	if _, err := g.led.SetPhase(ctx, g.event, presale, "otto", func(ctx context.Context) (booking.PhaseState, bool, error) {
		prev, changed, err := g.store.SetPhase(ctx, g.event, presale)
		if err == nil {
			err = died
		}
		return prev, changed, err
	}); !errors.Is(err, died) {
		t.Fatalf("lost change: %v", err)
	}
	res, err := g.led.SetPhase(ctx, g.event, general, "otto", func(ctx context.Context) (booking.PhaseState, bool, error) {
		return g.store.SetPhase(ctx, g.event, general)
	})
	if err != nil || res.ID == 0 || res.Previous != "presale" {
		t.Fatalf("the next change: %+v %v", res, err)
	}
	changes, err := g.led.Phases(ctx, g.event)
	if err != nil || len(changes) != 2 {
		t.Fatalf("the ledger's phase changes: %+v %v", changes, err)
	}
	if c := changes[0]; c.Phase != "presale" || c.Audience != booking.AudienceCode || c.Previous != "" || c.Actor != ledger.ReconcileActor {
		t.Fatalf("the lost change: %+v", c)
	}
	if c := changes[1]; c.ID != res.ID || c.Phase != "general" || c.Previous != "presale" || c.Actor != "otto" {
		t.Fatalf("the next change: %+v", c)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || rec.RecordedPhase != "" {
		t.Fatalf("the reconciliation recorded %q (%v)", rec.RecordedPhase, err)
	}
	if n := testutil.ToFloat64(g.r.Metrics.Recorded("phase")); n != 1 {
		t.Fatalf("lost changes counted: %v, want the lost phase", n)
	}
}
