package booking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Holds and kills: operators keep seats off sale, held for a named
// purpose (production, artist, sponsor, accessibility) or killed (never
// for sale), and release them to sale (lua/mark_seats.lua). Such a seat's
// status byte is SeatCodeReserved or SeatCodeKilled; fans cannot select
// it (LockSeats answers a *SeatsNotForSaleError).

// SeatMark is what MarkSeats does to seats.
type SeatMark string

const (
	MarkHold    SeatMark = "hold"    // held for a purpose
	MarkKill    SeatMark = "kill"    // never for sale
	MarkRelease SeatMark = "release" // back on sale
	// MarkAllocate allocates seats to a channel (the purpose is the
	// channel): only requests through it may take them.
	MarkAllocate SeatMark = "allocate"
	// MarkKind sets the seats' accessibility kind (the purpose:
	// ChannelWheelchair or ChannelCompanion) or clears it (""), whatever
	// their status; their sale is not touched (SetSeatKind).
	MarkKind SeatMark = "set_kind"
)

// MaxMarkSeats bounds the seats of one MarkSeats call.
const MaxMarkSeats = 5000

// MaxPurposeLen bounds a hold's purpose, in bytes.
const MaxPurposeLen = 64

// ErrSeatNotForSale is the answer to a fan selecting a seat operators hold
// or killed.
var ErrSeatNotForSale = errors.New("seat is not for sale")

// SeatsNotForSaleError is ErrSeatNotForSale naming the seats of a
// selection that operators hold or killed (nothing was locked).
type SeatsNotForSaleError struct{ Seats []string }

func (e *SeatsNotForSaleError) Error() string {
	return fmt.Sprintf("%v: %s", ErrSeatNotForSale, strings.Join(e.Seats, ", "))
}

// Is makes errors.Is(err, ErrSeatNotForSale) true.
func (e *SeatsNotForSaleError) Is(target error) bool { return target == ErrSeatNotForSale }

// SeatRefusal is a seat MarkSeats refused and its status: SeatHeld or
// SeatSold (a fan's), or SeatAllocated (MarkKind: allocated to the
// channel of another kind).
type SeatRefusal struct {
	Seat   string     `json:"seat_id"`
	Status SeatStatus `json:"status"`
}

// SeatsRefusedError is ErrSeatUnavailable from MarkSeats: the seats it
// could not mark, each with its status; nothing changed.
type SeatsRefusedError struct{ Seats []SeatRefusal }

func (e *SeatsRefusedError) Error() string {
	parts := make([]string, len(e.Seats))
	for i, x := range e.Seats {
		parts[i] = x.Seat + " (" + string(x.Status) + ")"
	}
	return fmt.Sprintf("%v: %s", ErrSeatUnavailable, strings.Join(parts, ", "))
}

// Is makes errors.Is(err, ErrSeatUnavailable) true.
func (e *SeatsRefusedError) Is(target error) bool { return target == ErrSeatUnavailable }

// SeatsUnknownError is ErrSeatUnknown naming every seat of a MarkSeats
// call that is not in the event's map.
type SeatsUnknownError struct{ Seats []string }

func (e *SeatsUnknownError) Error() string {
	return fmt.Sprintf("%v: %s", ErrSeatUnknown, strings.Join(e.Seats, ", "))
}

// Is makes errors.Is(err, ErrSeatUnknown) true.
func (e *SeatsUnknownError) Is(target error) bool { return target == ErrSeatUnknown }

// CheckPurpose checks a hold's purpose: 1 to MaxPurposeLen bytes of
// UTF-8 text without control characters.
func CheckPurpose(p string) error {
	if strings.TrimSpace(p) == "" || len(p) > MaxPurposeLen || !utf8.ValidString(p) ||
		strings.ContainsFunc(p, unicode.IsControl) {
		return fmt.Errorf("%w: purpose must be 1-%d characters without control characters", ErrInvalidArgument, MaxPurposeLen)
	}
	return nil
}

var scriptMarkSeats = newScript("mark_seats")

// MarkSeats holds seatIDs for purpose (MarkHold), kills them (MarkKill)
// or releases them to sale (MarkRelease), all of them or none, at once
// (lua/mark_seats.lua). A hold or kill takes seats on sale or ones
// operators hold or killed already; a release takes seats operators hold
// or killed. It returns the seats that changed: a seat already as asked
// (for a release: on sale) is left, so a repeat returns none. Errors: ErrEventNotFound,
// ErrInvalidArgument (no seat, too many, a bad purpose),
// ErrSeatUnknown (*SeatsUnknownError), ErrSeatUnavailable
// (*SeatsRefusedError: seats a fan holds or bought; nothing changed).
func (s *Store) MarkSeats(ctx context.Context, eventID string, mark SeatMark, purpose string, seatIDs []string) ([]string, error) {
	return s.markSeats(ctx, eventID, mark, purpose, "", seatIDs)
}

// markSeats is MarkSeats with the allocation's release time (ARGV 3 of
// mark_seats.lua: unix ms, "0" none, "" unchanged).
func (s *Store) markSeats(ctx context.Context, eventID string, mark SeatMark, purpose, releaseAt string, seatIDs []string) ([]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	switch mark {
	case MarkHold:
		if err := CheckPurpose(purpose); err != nil {
			return nil, err
		}
	case MarkAllocate:
		if purpose == "" {
			return nil, fmt.Errorf("%w: no channel", ErrInvalidArgument)
		}
		if err := checkChannel(purpose); err != nil {
			return nil, err
		}
	case MarkKill, MarkRelease:
		purpose = ""
	case MarkKind:
		if purpose != "" && purpose != ChannelWheelchair && purpose != ChannelCompanion {
			return nil, fmt.Errorf("%w: kind %q", ErrInvalidArgument, purpose)
		}
	default:
		return nil, fmt.Errorf("%w: mark %q", ErrInvalidArgument, mark)
	}
	if len(seatIDs) == 0 || len(seatIDs) > MaxMarkSeats {
		return nil, fmt.Errorf("%w: 1-%d seats", ErrInvalidArgument, MaxMarkSeats)
	}
	if err := checkIDs(seatIDs...); err != nil {
		return nil, err
	}
	args := make([]any, 0, 3+len(seatIDs))
	args = append(args, string(mark), purpose, releaseAt)
	for _, id := range seatIDs {
		args = append(args, id)
	}
	r, err := s.run(ctx, scriptMarkSeats, eventID, args...)
	switch {
	case errors.Is(err, ErrSeatUnknown):
		var unknown SeatsUnknownError
		r.scan(&unknown.Seats)
		return nil, &unknown
	case errors.Is(err, ErrSeatUnavailable):
		var refused SeatsRefusedError
		var l reply
		r.scan(&l)
		l.records(2, func(x reply) {
			refused.Seats = append(refused.Seats, SeatRefusal{Seat: x.str(0), Status: SeatStatus(x.str(1))})
		})
		return nil, &refused
	case err != nil:
		return nil, fmt.Errorf("mark seats: %w", err)
	}
	var changed []string
	r.scan(nil, &changed)
	return changed, nil
}

// MarkedSeat is a seat operators hold (Mark MarkHold, with its Purpose) or
// killed (MarkKill), as the ledger records it.
type MarkedSeat struct {
	SeatID  string
	Mark    SeatMark
	Purpose string
}

// applyMarks marks a rebuilt event's seats as the ledger has them, a call
// per mark and purpose; a seat the rebuild sold (or that is not in the
// map) is left out, and returned.
func (s *Store) applyMarks(ctx context.Context, eventID string, marks []MarkedSeat) ([]string, error) {
	type group struct {
		mark    SeatMark
		purpose string
	}
	var order []group
	seats := map[group][]string{}
	for _, m := range marks {
		g := group{m.Mark, m.Purpose}
		if _, ok := seats[g]; !ok {
			order = append(order, g)
		}
		seats[g] = append(seats[g], m.SeatID)
	}
	var left []string
	for _, g := range order {
		list := seats[g]
		for len(list) > 0 {
			n := min(len(list), MaxMarkSeats)
			_, err := s.MarkSeats(ctx, eventID, g.mark, g.purpose, list[:n])
			var refused *SeatsRefusedError
			var unknown *SeatsUnknownError
			switch {
			case errors.As(err, &refused):
				drop := map[string]bool{}
				for _, x := range refused.Seats {
					drop[x.Seat] = true
				}
				list, left = without(list, drop, left)
				continue
			case errors.As(err, &unknown):
				drop := map[string]bool{}
				for _, x := range unknown.Seats {
					drop[x] = true
				}
				list, left = without(list, drop, left)
				continue
			case err != nil:
				return left, err
			}
			list = list[n:]
		}
	}
	return left, nil
}

// without returns list without the seats of drop, and left with them.
func without(list []string, drop map[string]bool, left []string) ([]string, []string) {
	keep := list[:0:0]
	for _, id := range list {
		if drop[id] {
			left = append(left, id)
		} else {
			keep = append(keep, id)
		}
	}
	return keep, left
}
