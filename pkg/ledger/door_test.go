package ledger_test

import (
	"context"
	"testing"

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
	if _, err := g.led.UpdateEvent(ctx, "capped", booking.EventUpdate{AdmitPerMinute: &n}); err != nil {
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
