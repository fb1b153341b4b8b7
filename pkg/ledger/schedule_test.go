package ledger_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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
		return g.led.SetSchedule(ctx, g.event, sch, "otto", func(ctx context.Context, def booking.EventConfig, sch booking.Schedule) error {
			return g.store.SetSchedule(ctx, def, sch)
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
