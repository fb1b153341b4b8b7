package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// The sales window's settings are part of the definition: created,
// patched in the ledger with the change recorded, and given back to
// Redis by a restore.
func TestSalesWindowOutlivesRedis(t *testing.T) {
	ctx := context.Background()
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Millisecond)
	g := newRig(t, booking.EventConfig{ID: "window", Rows: 2, SeatsPerRow: 5, Capacity: 5,
		HoldsEndWithSale: true, RefundableUntil: until})
	if e, err := g.store.GetEvent(ctx, "window"); err != nil || e.FinishAfterEnd || !e.RefundableUntil.Equal(until) {
		t.Fatalf("redis: %+v %v", e, err)
	}
	finish, later := true, until.Add(time.Hour)
	d, err := g.led.UpdateEvent(ctx, "window", booking.EventUpdate{FinishAfterEnd: &finish, RefundableUntil: &later}, nil)
	if err != nil || d.Config.HoldsEndWithSale || !d.Config.RefundableUntil.Equal(later) {
		t.Fatalf("ledger after the patch: %+v %v", d.Config, err)
	}
	if want := "finish_after_end=true refundable_until=" + later.Format(time.RFC3339Nano); d.LastChange != want {
		t.Fatalf("last change %q, want %q", d.LastChange, want)
	}
	// a retried create with another deadline is another definition
	if _, _, err := g.led.CreateEvent(ctx, booking.EventConfig{ID: "window", Rows: 2, SeatsPerRow: 5, Capacity: 5,
		HoldsEndWithSale: true, RefundableUntil: until.Add(time.Second)}); err == nil {
		t.Fatal("another refundable_until accepted as the same definition")
	}
	g.flush()
	if _, err := g.r.Restore(ctx, "window"); err != nil {
		t.Fatal(err)
	}
	e, err := g.store.GetEvent(ctx, "window")
	if err != nil || !e.FinishAfterEnd || !e.RefundableUntil.Equal(later) {
		t.Fatalf("restored: %+v %v", e, err)
	}
}
