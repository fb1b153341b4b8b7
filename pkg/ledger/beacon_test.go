package ledger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// The draw's beacon kept in the ledger, with its signature, is back in
// Redis after a rebuild.
func TestDrawBeaconRestored(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "beacon", Name: "Beacon", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		SalesStart: time.Now().Add(3 * time.Hour).Truncate(time.Second), EarlyJoin: time.Hour})
	ctx := context.Background()
	if b, err := g.led.Beacons(ctx, g.event); err != nil || len(b) != 0 {
		t.Fatalf("no beacon yet: %+v %v", b, err)
	}
	want := fairness.Beacon{Round: 77, Source: "NIST beacon v2", Value: strings.Repeat("c3", 32), Signature: strings.Repeat("e5", 48)}
	if _, err := g.store.SetBeaconRound(ctx, g.event, "", want.Round, want.Source); err != nil {
		t.Fatal(err)
	}
	if _, err := g.store.SetBeaconValue(ctx, g.event, "", want.Value, want.Signature); err != nil {
		t.Fatal(err)
	}
	if err := g.led.SaveBeacon(ctx, g.event, "", want); err != nil {
		t.Fatal(err)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if b, err := g.store.Beacon(ctx, g.event, ""); err != nil || b != want {
		t.Fatalf("after the rebuild: %+v %v", b, err)
	}
}

// A beacon Redis has and the ledger does not (the admin call's ledger
// write failed and was not retried) is recorded by the reconciliation,
// the event's own draw's and a later phase's alike, so a rebuild keeps
// the rounds the draws were committed to.
func TestBeaconKeptByReconcile(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	cfg := booking.EventConfig{ID: "kept", Name: "Kept", Rows: 1, SeatsPerRow: 4, Capacity: 2, SalesStart: start, EarlyJoin: time.Hour}
	g := newRig(t, cfg)
	ctx := context.Background()
	early := 600
	sch := booking.Schedule{Phases: []booking.Phase{
		{ID: "presale", StartsAt: start, EndsAt: start.Add(time.Hour), Audience: booking.AudiencePublic},
		{ID: "general", StartsAt: start.Add(2 * time.Hour), EndsAt: start.Add(3 * time.Hour), Audience: booking.AudiencePublic, EarlyJoinSeconds: &early}}}
	if _, err := g.led.SetSchedule(ctx, g.event, sch, "test", func(ctx context.Context, def booking.EventConfig, s booking.Schedule, rev int64) error {
		return g.store.SetSchedule(ctx, def, s, rev)
	}); err != nil {
		t.Fatal(err)
	}
	own := fairness.Beacon{Round: 500, Source: "NIST beacon v2"}
	later := fairness.Beacon{Round: 900, Source: "NIST beacon v2", Value: strings.Repeat("d4", 32), Signature: strings.Repeat("f6", 48)}
	if _, err := g.store.SetBeaconRound(ctx, g.event, "", own.Round, own.Source); err != nil {
		t.Fatal(err)
	}
	if _, err := g.store.SetBeaconRound(ctx, g.event, "general", later.Round, later.Source); err != nil {
		t.Fatal(err)
	}
	if _, err := g.store.SetBeaconValue(ctx, g.event, "general", later.Value, later.Signature); err != nil {
		t.Fatal(err)
	}
	if _, err := g.r.Reconcile(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	bs, err := g.led.Beacons(ctx, g.event)
	if err != nil || len(bs) != 2 || bs[""] != own || bs["general"] != later {
		t.Fatalf("the ledger's beacons after the reconciliation: %+v %v", bs, err)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	for phase, want := range map[string]fairness.Beacon{"": own, "general": later} {
		if b, err := g.store.Beacon(ctx, g.event, phase); err != nil || b != want {
			t.Errorf("after the rebuild, the beacon of %q: %+v %v", phase, b, err)
		}
	}
}
