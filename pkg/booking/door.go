package booking

import (
	"context"
	"fmt"
)

// The front door's event settings (issue 13): the rate cap
// (AdmitPerMinute). They are config fields that create_event.lua does not
// take: CreateEvent sets them with update_event.lua right after the
// create, and a retried create whose event lacks them sets them then.

// MaxAdmitPerMinute bounds the rate cap.
const MaxAdmitPerMinute = 10_000_000

func checkAdmitPerMinute(n int) error {
	if n < 0 || n > MaxAdmitPerMinute {
		return fmt.Errorf("admit per minute must be from 0 (off) to %d", MaxAdmitPerMinute)
	}
	return nil
}

// doorArgs are update_event.lua's field, value pairs of the door settings
// in u.
func (u EventUpdate) doorArgs() ([]any, error) {
	var args []any
	if u.AdmitPerMinute != nil {
		if err := checkAdmitPerMinute(*u.AdmitPerMinute); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
		}
		args = append(args, "admit_per_minute", *u.AdmitPerMinute)
	}
	return args, nil
}

// doorUpdate is the update that gives a created event c's door settings
// (nil when c has none).
func doorUpdate(c EventConfig) []any {
	var args []any
	if c.AdmitPerMinute != 0 {
		args = append(args, "admit_per_minute", c.AdmitPerMinute)
	}
	return args
}

// sameDoor reports whether e has c's door settings.
func sameDoor(e Event, c EventConfig) bool { return e.AdmitPerMinute == c.AdmitPerMinute }

// noDoor reports whether e has no door setting (created by a create whose
// door update did not run).
func noDoor(e Event) bool { return e.AdmitPerMinute == 0 }

// setDoor applies c's door settings to the event.
func (s *Store) setDoor(ctx context.Context, c EventConfig) error {
	args := doorUpdate(c)
	if len(args) == 0 {
		return nil
	}
	args = append(args, "now_ms", s.nowMS())
	if _, err := s.run(ctx, scriptUpdateEvent, c.ID, args...); err != nil {
		return fmt.Errorf("create event: door settings: %w", err)
	}
	return nil
}
