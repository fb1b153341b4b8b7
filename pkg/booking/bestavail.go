package booking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Best available and the no-orphan rule (lua/select_best.lua,
// lua/lib/select.lua, lua/lib/rows.lua).
//
// SelectBest holds the best count adjacent seats for an admitted user:
// the first row, in the event's section order and then row order, that
// has them, nearest its centre. The engine keeps an index of each row's
// free runs (the runs key), updated by every change of a seat's status
// byte, so a call costs O(row length), not O(seats).
//
// The no-orphan rule: best available never leaves a single free seat
// between two taken seats or at a row's end unless no other choice of as
// many adjacent seats fits; on an event with NoOrphanRule, LockSeats
// refuses a manual choice that would (unless nothing else fits in its
// section) with an *OrphanSeatError carrying a suggested alternative.

var scriptSelectBest = newScript("select_best")

// ErrNoAdjacentSeats: no count adjacent seats are free together (in the
// section asked for). *NoAdjacentSeatsError says what is left.
var ErrNoAdjacentSeats = errors.New("no adjacent seats")

// ErrSectionUnknown: the event has no section of that name.
var ErrSectionUnknown = errors.New("unknown section")

// ErrOrphanSeat: a manual selection would leave a single free seat while
// another choice would not (*OrphanSeatError).
var ErrOrphanSeat = errors.New("selection leaves a single free seat")

// NoAdjacentSeatsError is ErrNoAdjacentSeats with what is left: the most
// adjacent seats still free together (in the section) and the seats on
// sale in the event.
type NoAdjacentSeatsError struct {
	Largest   int
	Available int
}

func (e *NoAdjacentSeatsError) Error() string {
	return fmt.Sprintf("%v: at most %d together, %d on sale", ErrNoAdjacentSeats, e.Largest, e.Available)
}

// Is makes errors.Is(err, ErrNoAdjacentSeats) true.
func (e *NoAdjacentSeatsError) Is(target error) bool { return target == ErrNoAdjacentSeats }

// OrphanSeatError is ErrOrphanSeat: the seats the selection would leave
// single and a suggested selection of as many adjacent seats that leaves
// none. Nothing was locked.
type OrphanSeatError struct {
	Orphans   []string
	Suggested []string
}

func (e *OrphanSeatError) Error() string {
	return fmt.Sprintf("%v: %s (try %s)", ErrOrphanSeat, strings.Join(e.Orphans, ", "), strings.Join(e.Suggested, ", "))
}

// Is makes errors.Is(err, ErrOrphanSeat) true.
func (e *OrphanSeatError) Is(target error) bool { return target == ErrOrphanSeat }

// BestResult is the hold SelectBest made.
type BestResult struct {
	Seats    []string
	Deadline time.Time
	// Orphaned: the seats leave a single free seat, no other choice of as
	// many adjacent seats fitting.
	Orphaned bool
}

// SelectBest holds the best count adjacent seats for an admitted user, in
// the section named section ("" any), replacing their selection as
// LockSeats does. Errors: ErrInvalidArgument (count below 1),
// ErrTooManySeats (*TooManySeatsError), ErrSectionUnknown,
// ErrNoAdjacentSeats (*NoAdjacentSeatsError), ErrNotFound,
// ErrInvalidState, ErrHoldExpired, ErrEventNotFound.
func (s *Store) SelectBest(ctx context.Context, eventID, userID string, count int, section string) (BestResult, error) {
	return s.SelectBestVia(ctx, eventID, userID, "", false, count, section)
}

// SelectBestVia is SelectBest for a request through channel (the signed
// channel claim of the fan's token; "" none): the seats allocated to that
// channel or to the event's current phase come first, then general sale.
// accessible: the fan asks for accessibility seats; the seats allocated to
// ChannelWheelchair and ChannelCompanion come first.
func (s *Store) SelectBestVia(ctx context.Context, eventID, userID, channel string, accessible bool, count int, section string) (BestResult, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return BestResult{}, err
	}
	if err := checkChannel(channel); err != nil {
		return BestResult{}, err
	}
	if count < 1 {
		return BestResult{}, fmt.Errorf("%w: count must be at least 1", ErrInvalidArgument)
	}
	if count > MaxSeatsPerOrderLimit {
		return BestResult{}, &TooManySeatsError{Max: MaxSeatsPerOrderLimit}
	}
	if len(section) > MaxSectionNameLen || !utf8.ValidString(section) {
		return BestResult{}, ErrSectionUnknown
	}
	r, err := s.run(ctx, scriptSelectBest, eventID, userID, count, section, channel, flag(accessible))
	if err != nil {
		switch {
		case errors.Is(err, ErrNoAdjacentSeats):
			var left NoAdjacentSeatsError
			r.scan(&left.Largest, &left.Available)
			return BestResult{}, &left
		case errors.Is(err, ErrTooManySeats):
			var many TooManySeatsError
			r.scan(&many.Max)
			return BestResult{}, &many
		}
		return BestResult{}, fmt.Errorf("select best: %w", err)
	}
	var res BestResult
	var csv string
	r.scan(&csv, &res.Deadline, &res.Orphaned)
	res.Seats = SplitSeats(csv)
	return res, nil
}

// boolArg is a setting's flag as config keeps it.
func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}
