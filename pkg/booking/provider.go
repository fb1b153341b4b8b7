package booking

import (
	"context"
	"fmt"
	"time"
)

var scriptProviderState = newScript("provider_state")

// ProviderState is an event's hold clocks after SetProviderDegraded
// (docs/booking-engine.md "Payment provider outages").
type ProviderState struct {
	// Changed is false when the event was already in the state asked for
	// (the call is idempotent).
	Changed bool
	// PausedSince is when the hold clocks stopped, zero while they run.
	PausedSince time.Time
	// Paused is the length of the pauses that ended, summed: every hold
	// admitted before them ends that much later.
	Paused time.Duration
	// Holds is the number of users in the room, whose clocks the change
	// stopped or restarted.
	Holds int64
	// At is the change's time, Redis's clock.
	At time.Time
	// Ended is when the pause this call ended had begun (recovered and
	// Changed), zero otherwise.
	Ended time.Time
}

// SetProviderDegraded stops (degraded) or restarts (recovered) the hold
// clocks of an event's users in the room, in one atomic step
// (lua/provider_state.lua): while stopped no hold expires, no one is
// admitted (promotion answers "provider_degraded", a join waits) and joins
// keep queueing; on restart every hold has the time it had left, its
// deadline moved by the pause's length. Cost O(1) whatever the number of
// holds. Idempotent. Errors: ErrEventNotFound.
func (s *Store) SetProviderDegraded(ctx context.Context, eventID string, degraded bool) (ProviderState, error) {
	want := "recovered"
	if degraded {
		want = "degraded"
	}
	return s.providerState(ctx, eventID, want)
}

// EndProviderOutage restarts an event's hold clocks like
// SetProviderDegraded(false), for an outage that lasted longer than the
// maximum: the provider may still be down, and the event says so
// (Event.ProviderOutageEnded) until its next change. Idempotent.
func (s *Store) EndProviderOutage(ctx context.Context, eventID string) (ProviderState, error) {
	return s.providerState(ctx, eventID, "recovered", "max_outage")
}

func (s *Store) providerState(ctx context.Context, eventID string, args ...any) (ProviderState, error) {
	if err := checkIDs(eventID); err != nil {
		return ProviderState{}, err
	}
	r, err := s.run(ctx, scriptProviderState, eventID, args...)
	if err != nil {
		return ProviderState{}, fmt.Errorf("provider state: %w", err)
	}
	var st ProviderState
	var pausedMS int64
	r.scan(&st.Changed, &st.PausedSince, &pausedMS, &st.Holds, &st.At, &st.Ended)
	st.Paused = time.Duration(pausedMS) * time.Millisecond
	return st, nil
}
