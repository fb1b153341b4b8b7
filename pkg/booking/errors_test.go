package booking

import (
	"errors"
	"testing"
)

// TestMalformedIDSameErrorEverywhere: every method that takes an id answers
// a malformed one with *IDError naming it (ErrInvalidArgument), before
// touching Redis. (CreateEvent and RestoreEvent validate a whole
// configuration and say ErrInvalidEvent.)
func TestMalformedIDSameErrorEverywhere(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{})
	const bad = "a{b"
	one := []OutboxEntry{{Kind: KindJoined, UserID: "u", Sequence: 1}}
	calls := map[string]func() error{
		"GetEvent":        func() error { _, err := f.s.GetEvent(f.ctx, bad); return err },
		"UpdateEvent":     func() error { _, err := f.s.UpdateEvent(f.ctx, bad, EventUpdate{}); return err },
		"Seats":           func() error { _, err := f.s.Seats(f.ctx, bad); return err },
		"Counts":          func() error { _, err := f.s.Counts(f.ctx, bad); return err },
		"SeatStatuses":    func() error { _, err := f.s.SeatStatuses(f.ctx, bad); return err },
		"SeatMapIDs":      func() error { _, err := f.s.SeatMapIDs(f.ctx, bad); return err },
		"CloseDraw":       func() error { _, err := f.s.CloseDraw(f.ctx, bad); return err },
		"EventChallenge":  func() error { _, err := f.s.EventChallenge(f.ctx, bad); return err },
		"MarkDrawn":       func() error { return f.s.MarkDrawn(f.ctx, bad) },
		"Enqueue":         func() error { _, err := f.s.Enqueue(f.ctx, "evt", bad); return err },
		"Position":        func() error { _, err := f.s.Position(f.ctx, bad, "u"); return err },
		"Promote":         func() error { _, err := f.s.Promote(f.ctx, bad, 0); return err },
		"Touch":           func() error { return f.s.Touch(f.ctx, bad, "u") },
		"LockSeat":        func() error { _, err := f.s.LockSeat(f.ctx, "evt", bad, "A1"); return err },
		"LockSeats":       func() error { _, err := f.s.LockSeats(f.ctx, bad, "u", []string{"A1", "A2"}); return err },
		"InitiatePayment": func() error { _, err := f.s.InitiatePayment(f.ctx, "evt", "u", bad); return err },
		"PaymentSuccess":  func() error { _, err := f.s.PaymentSuccess(f.ctx, "evt", bad, "p"); return err },
		"PaymentFailure":  func() error { _, err := f.s.PaymentFailure(f.ctx, bad, "u", "p"); return err },
		"HandleTimeout":   func() error { _, err := f.s.HandleTimeout(f.ctx, "evt", bad); return err },
		"Cancel":          func() error { _, err := f.s.Cancel(f.ctx, bad, "u"); return err },
		"Outbox":          func() error { _, err := f.s.Outbox(f.ctx, bad, 0); return err },
		"AckOutbox":       func() error { return f.s.AckOutbox(f.ctx, bad, one...) },
		"MarkOutbox":      func() error { return f.s.MarkOutbox(f.ctx, bad, true, one...) },
		"EventExists":     func() error { _, err := f.s.EventExists(f.ctx, bad); return err },
		"SoldSeats":       func() error { _, err := f.s.SoldSeats(f.ctx, bad); return err },
		"RepairSold":      func() error { _, err := f.s.RepairSold(f.ctx, bad, nil); return err },
	}
	for name, call := range calls {
		err := call()
		var idErr *IDError
		if !errors.As(err, &idErr) || idErr.ID != bad || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want *IDError for %q", name, err, bad)
		}
	}
}
