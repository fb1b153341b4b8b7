package ledger_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// A rebuild of Redis puts back the draw seeds the ledger kept: the event's
// own pre-queue's and a later phase's, so the commitments published
// before the rebuild match the seeds revealed after it.
func TestDrawSeedsRestored(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	cfg := booking.EventConfig{ID: "seeds", Name: "Seeds", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		SalesStart: start, EarlyJoin: time.Hour}
	g := newRig(t, cfg)
	ctx := context.Background()
	early := 600
	sch := booking.Schedule{Phases: []booking.Phase{
		{ID: "presale", StartsAt: start, EndsAt: start.Add(time.Hour), Audience: booking.AudiencePublic},
		{ID: "general", StartsAt: start.Add(2 * time.Hour), EndsAt: start.Add(3 * time.Hour),
			Audience: booking.AudiencePublic, EarlyJoinSeconds: &early}}}
	if _, err := g.led.SetSchedule(ctx, g.event, sch, "test", g.store.SetSchedule); err != nil {
		t.Fatal(err)
	}
	before, err := g.store.DrawSeeds(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 2 || before[0].Phase != "" || before[1].Phase != "general" {
		t.Fatalf("draws before the rebuild: %+v", before)
	}
	if differ, err := g.led.RecordDrawSeeds(ctx, g.event, before); err != nil || len(differ) > 0 {
		t.Fatalf("record: %+v %v", differ, err)
	}
	ev, err := g.store.GetEvent(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	published, err := g.store.PhaseCommits(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}

	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	after, err := g.store.DrawSeeds(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after, before) {
		t.Fatalf("draws after the rebuild %+v, want %+v", after, before)
	}
	if again, err := g.store.GetEvent(ctx, g.event); err != nil || again.DrawCommit != ev.DrawCommit {
		t.Fatalf("draw_commit after the rebuild %q %v, want %q", again.DrawCommit, err, ev.DrawCommit)
	}
	if again, err := g.store.PhaseCommits(ctx, g.event); err != nil || again["general"] != published["general"] {
		t.Fatalf("phase commitments after the rebuild %v %v, want %v", again, err, published)
	}
}

// The first seed recorded for a draw stays: a different one recorded
// later is not written and is answered as differing, with the kept one.
func TestDrawSeedsFirstStays(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "first", Name: "First", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		SalesStart: time.Now().Add(3 * time.Hour).Truncate(time.Second), EarlyJoin: time.Hour})
	ctx := context.Background()
	seed := drawSeed
	first := []booking.DrawSeed{seed("", "a1"), seed("general", "b2")}
	if differ, err := g.led.RecordDrawSeeds(ctx, g.event, first); err != nil || len(differ) > 0 {
		t.Fatalf("first record: %+v %v", differ, err)
	}
	if differ, err := g.led.RecordDrawSeeds(ctx, g.event, first); err != nil || len(differ) > 0 {
		t.Fatalf("the same again: %+v %v", differ, err)
	}
	later := []booking.DrawSeed{seed("", "c3"), seed("general", "b2"), seed("late", "d4")}
	differ, err := g.led.RecordDrawSeeds(ctx, g.event, later)
	if err != nil {
		t.Fatal(err)
	}
	if want := []booking.DrawSeed{first[0]}; !slices.Equal(differ, want) {
		t.Fatalf("differing draws %+v, want %+v", differ, want)
	}
	kept, err := g.led.DrawSeeds(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	if want := []booking.DrawSeed{first[0], first[1], later[2]}; !slices.Equal(kept, want) {
		t.Fatalf("kept %+v, want %+v", kept, want)
	}
	bad := seed("x", "e5")
	bad.Commit = first[0].Commit
	if _, err := g.led.RecordDrawSeeds(ctx, g.event, []booking.DrawSeed{bad}); err == nil {
		t.Fatal("a seed that does not match its commitment was recorded")
	}
}

// A seed whose ledger write failed is recorded by the reconciliation, and
// a rebuild after it keeps the seed.
func TestDrawSeedsRecordedByReconciliation(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "heal", Name: "Heal", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		SalesStart: time.Now().Add(3 * time.Hour).Truncate(time.Second), EarlyJoin: time.Hour})
	ctx := context.Background()
	before, err := g.store.DrawSeeds(ctx, g.event)
	if err != nil || len(before) != 1 {
		t.Fatalf("draws: %+v %v", before, err)
	}
	if kept, err := g.led.DrawSeeds(ctx, g.event); err != nil || len(kept) != 0 {
		t.Fatalf("nothing recorded yet: %+v %v", kept, err)
	}
	if _, err := g.r.Reconcile(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if kept, err := g.led.DrawSeeds(ctx, g.event); err != nil || !slices.Equal(kept, before) {
		t.Fatalf("recorded %+v %v, want %+v", kept, err, before)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if after, err := g.store.DrawSeeds(ctx, g.event); err != nil || !slices.Equal(after, before) {
		t.Fatalf("after the rebuild %+v %v, want %+v", after, err, before)
	}
}

// A seed in Redis that differs from the one the ledger kept (changed by
// hand, or by a bug) is left as it is but counted by the reconciliation,
// for the alert: the draw will not verify against the commitment
// published first.
func TestDrawSeedMismatchCounted(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "swap", Name: "Swap", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		SalesStart: time.Now().Add(3 * time.Hour).Truncate(time.Second), EarlyJoin: time.Hour})
	ctx := context.Background()
	gauge := g.r.Metrics.DrawSeedMismatch(g.event)
	res, err := g.r.Reconcile(ctx, g.event)
	if err != nil || len(res.DrawSeedMismatches) != 0 || testutil.ToFloat64(gauge) != 0 {
		t.Fatalf("first pass (records the seed): %+v %v, gauge %v", res, err, testutil.ToFloat64(gauge))
	}
	kept, err := g.led.DrawSeeds(ctx, g.event)
	if err != nil || len(kept) != 1 {
		t.Fatalf("kept %+v %v", kept, err)
	}
	swapped := drawSeed("", "7e")
	config := booking.EventKeys(g.store.Prefix(), g.event)[0]
	if err := g.rdb.HSet(ctx, config, "draw_seed", swapped.Seed, "draw_commit", swapped.Commit).Err(); err != nil {
		t.Fatal(err)
	}
	res, err = g.r.Reconcile(ctx, g.event)
	if err != nil || !slices.Equal(res.DrawSeedMismatches, []string{""}) || testutil.ToFloat64(gauge) != 1 {
		t.Fatalf("after the swap: %+v %v, gauge %v", res, err, testutil.ToFloat64(gauge))
	}
	if again, err := g.led.DrawSeeds(ctx, g.event); err != nil || !slices.Equal(again, kept) {
		t.Fatalf("the ledger's seed changed: %+v %v", again, err)
	}
}

// drawSeed is phase's draw seed of 32 bytes b (two hex digits) with its
// commitment.
func drawSeed(phase, b string) booking.DrawSeed {
	raw, _ := hex.DecodeString(strings.Repeat(b, 32))
	sum := sha256.Sum256(raw)
	return booking.DrawSeed{Phase: phase, Seed: strings.Repeat(b, 32), Commit: hex.EncodeToString(sum[:])}
}
