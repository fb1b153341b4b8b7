package admissiontest

import (
	"context"
	"errors"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// A Recorder keeps every call in order and, while failing, returns the
// error and keeps nothing.
func TestRecorder(t *testing.T) {
	var r Recorder
	ctx := context.Background()
	down := errors.New("down")
	r.Fail(down)
	if err := r.ReleaseSlot(ctx, "e", "timeout", ""); !errors.Is(err, down) {
		t.Fatalf("ReleaseSlot while failing: %v", err)
	}
	r.Fail(nil)
	_ = r.Announce(ctx, "e", []booking.OutboxEntry{{Kind: booking.KindJoined}, {Kind: booking.KindPromoted}})
	_ = r.ReleaseSlot(ctx, "e", "cancellation", "")
	_ = r.Notify(ctx, messages.Notification{Type: messages.NotifyYourTurn})
	if a := r.Announced(); len(a) != 2 || a[1].Kind != booking.KindPromoted {
		t.Errorf("announced %+v", a)
	}
	if rel := r.Released(); len(rel) != 1 || rel[0] != "cancellation" {
		t.Errorf("released %v", rel)
	}
	if n := r.Notified(); len(n) != 1 || n[0].Type != messages.NotifyYourTurn {
		t.Errorf("notified %+v", n)
	}
}
