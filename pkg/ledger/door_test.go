package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// The rate cap is part of the definition: created, changed live, and
// given back to Redis by a restore.
func TestRateCapOutlivesRedis(t *testing.T) {
	ctx := context.Background()
	g := newRig(t, booking.EventConfig{ID: "capped", Rows: 2, SeatsPerRow: 5, Capacity: 5, AdmitPerMinute: 60})
	if e, err := g.store.GetEvent(ctx, "capped"); err != nil || e.AdmitPerMinute != 60 {
		t.Fatalf("redis: %+v %v", e, err)
	}
	n := 45
	if _, err := g.led.UpdateEvent(ctx, "capped", booking.EventUpdate{AdmitPerMinute: &n}, nil); err != nil {
		t.Fatal(err)
	}
	d, err := g.led.Event(ctx, "capped")
	if err != nil || d.Config.AdmitPerMinute != 45 {
		t.Fatalf("ledger: %+v %v", d.Config, err)
	}
	// a retried create with another cap is another definition
	if _, _, err := g.led.CreateEvent(ctx, booking.EventConfig{ID: "capped", Rows: 2, SeatsPerRow: 5, Capacity: 5, AdmitPerMinute: 61}); err == nil {
		t.Fatal("another cap accepted as the same definition")
	}
	g.flush()
	if _, err := g.r.Restore(ctx, "capped"); err != nil {
		t.Fatal(err)
	}
	if e, err := g.store.GetEvent(ctx, "capped"); err != nil || e.AdmitPerMinute != 45 {
		t.Fatalf("restored: %+v %v", e, err)
	}
}

// The pre-queue's opening and the join challenge are part of the
// definition too: patched in the ledger and given back to Redis by a
// restore (with a new draw seed: the waiting users are gone with Redis).
func TestEarlyJoinAndChallengeOutliveRedis(t *testing.T) {
	ctx := context.Background()
	start := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	g := newRig(t, booking.EventConfig{ID: "door", Rows: 2, SeatsPerRow: 5, Capacity: 5, SalesStart: start,
		EarlyJoin: 10 * time.Minute, Challenge: booking.ChallengePoW})
	if e, err := g.store.GetEvent(ctx, "door"); err != nil || e.Challenge != booking.ChallengePoW || e.EarlyJoin != 10*time.Minute {
		t.Fatalf("redis: %+v %v", e, err)
	}
	early, none := 20*time.Minute, booking.ChallengeNone
	d, err := g.led.UpdateEvent(ctx, "door", booking.EventUpdate{EarlyJoin: &early, Challenge: &none}, nil)
	if err != nil || d.Config.EarlyJoin != early || d.Config.Challenge != none {
		t.Fatalf("ledger after the patch: %+v %v", d.Config, err)
	}
	if d.LastChange != "challenge=none early_join_seconds=1200" {
		t.Fatalf("last change %q", d.LastChange)
	}
	// a retried create with another challenge is another definition
	if _, _, err := g.led.CreateEvent(ctx, booking.EventConfig{ID: "door", Rows: 2, SeatsPerRow: 5, Capacity: 5,
		SalesStart: start, EarlyJoin: early, Challenge: booking.ChallengePoW}); err == nil {
		t.Fatal("another challenge accepted as the same definition")
	}
	if _, _, err := g.led.CreateEvent(ctx, booking.EventConfig{ID: "door", Rows: 2, SeatsPerRow: 5, Capacity: 5,
		SalesStart: start, EarlyJoin: early}); err != nil {
		t.Fatalf("the same definition again: %v", err)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, "door"); err != nil {
		t.Fatal(err)
	}
	e, err := g.store.GetEvent(ctx, "door")
	if err != nil || e.EarlyJoin != early || e.Challenge != none || len(e.DrawCommit) != 64 {
		t.Fatalf("restored: %+v %v", e, err)
	}
}
