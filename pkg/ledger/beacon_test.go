package ledger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// The draw's beacon kept in the ledger is back in Redis after a rebuild.
func TestDrawBeaconRestored(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "beacon", Name: "Beacon", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		SalesStart: time.Now().Add(3 * time.Hour).Truncate(time.Second), EarlyJoin: time.Hour})
	ctx := context.Background()
	if b, err := g.led.Beacons(ctx, g.event); err != nil || len(b) != 0 {
		t.Fatalf("no beacon yet: %+v %v", b, err)
	}
	want := fairness.Beacon{Round: 77, Source: "drand quicknet", Value: strings.Repeat("c3", 32)}
	if _, err := g.store.SetBeaconRound(ctx, g.event, "", want.Round, want.Source); err != nil {
		t.Fatal(err)
	}
	if _, err := g.store.SetBeaconValue(ctx, g.event, "", want.Value); err != nil {
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
