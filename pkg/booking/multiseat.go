package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/ids"
)

// Orders of several seats in priced sections.
//
// A hold is one or more seats: useat keeps their ids joined by ',' (one
// seat: just its id, as before), and every SeatID of a result (Status,
// Expiry, TimeoutResult, CancelResult, OutboxEntry, PaymentHold,
// PaymentResult) is that joined list; SplitSeats splits it. Seat ids never
// hold ','.
//
// An event's seat map is made of sections, each a contiguous run of the
// map with one price. The config hash keeps them twice: 'prices'
// ('<len>:<cents>,...', read by lua/lib/seats.lua seat_price to price an order
// inside the scripts) and 'sections' (JSON, read back by GetEvent).

// Bounds of the multi-seat settings.
const (
	DefaultMaxSeatsPerOrder = 4
	MaxSeatsPerOrderLimit   = 10
	MaxSections             = 100
	MaxSectionNameLen       = 100
	// MaxPriceCents bounds one seat's price (10,000,000.00 in the currency).
	MaxPriceCents = 1_000_000_000
	// DefaultCurrency is an event's currency when none is given.
	DefaultCurrency = "EUR"
	// DefaultSectionName names the one section of an event created with
	// the old rows/seats_per_row or seats forms.
	DefaultSectionName = "General"
)

// ErrTooManySeats is a selection of more seats than the event's
// max_seats_per_order.
var ErrTooManySeats = errors.New("too many seats for one order")

// Section is a priced part of an event's seat map, as an operator gives
// it: Rows × SeatsPerRow (rows lettered on from the previous section's,
// so ids stay unique: A…J for the first ten rows, K… for the next
// section), or explicit Seats.
type Section struct {
	Name        string   `json:"name"`
	Rows        int      `json:"rows,omitempty"`
	SeatsPerRow int      `json:"seats_per_row,omitempty"`
	Seats       []string `json:"seats,omitempty"`
	PriceCents  int64    `json:"price_cents"`
}

// EventSection is a section of a created event: the run of the seat map
// (Start, Len in SeatMapIDs order) it covers and its price.
type EventSection struct {
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Start      int    `json:"start"`
	Len        int    `json:"len"`
}

// SplitSeats splits a SeatID field (seat ids joined by ',') into ids.
func SplitSeats(csv string) []string {
	if csv == "" {
		return nil
	}
	return strings.Split(csv, ",")
}

// LockSeats holds seatIDs for an admitted user, all of them or none: when
// any is held or sold by another user the error is a *SeatsTakenError
// naming them and nothing changed. Selecting again while the hold lasts
// replaces the selection atomically. Errors: ErrNotFound, ErrInvalidState,
// ErrHoldExpired, ErrSeatUnknown (*SeatUnknownError), ErrSeatUnavailable,
// ErrSeatNotForSale (*SeatsNotForSaleError: seats operators hold or killed),
// ErrOrphanSeat (*OrphanSeatError: the no-orphan rule, bestavail.go),
// ErrTooManySeats (*TooManySeatsError), ErrInvalidArgument (no seat, or
// one twice), ErrEventNotFound, ErrSalesEnded (holds end with the sale,
// window.go).
func (s *Store) LockSeats(ctx context.Context, eventID, userID string, seatIDs []string) (time.Time, error) {
	return s.LockSeatsVia(ctx, eventID, userID, "", false, seatIDs)
}

// LockSeatsVia is LockSeats for a request through channel (the signed
// channel claim of the fan's token; "" none): seats allocated to that
// channel, or to the event's current phase, may be taken too (marks.go,
// "Allocations"); a seat allocated to another channel is refused with a
// *SeatsNotForSaleError. accessible: the fan asks for accessibility
// seats (no proof), so the seats allocated to ChannelWheelchair and
// ChannelCompanion may be taken too.
func (s *Store) LockSeatsVia(ctx context.Context, eventID, userID, channel string, accessible bool, seatIDs []string) (time.Time, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return time.Time{}, err
	}
	if err := checkChannel(channel); err != nil {
		return time.Time{}, err
	}
	if len(seatIDs) == 0 {
		return time.Time{}, fmt.Errorf("%w: no seat", ErrInvalidArgument)
	}
	if len(seatIDs) > MaxSeatsPerOrderLimit {
		return time.Time{}, &TooManySeatsError{Max: MaxSeatsPerOrderLimit}
	}
	seen := make(map[string]bool, len(seatIDs))
	for _, id := range seatIDs {
		if !ids.Valid(id) || strings.IndexByte(id, ',') >= 0 {
			return time.Time{}, &SeatUnknownError{Seat: id}
		}
		if seen[id] {
			return time.Time{}, fmt.Errorf("%w: seat %q given twice", ErrInvalidArgument, id)
		}
		seen[id] = true
	}
	r, err := s.run(ctx, scriptLockSeat, eventID, userID, strings.Join(seatIDs, ","), channel, flag(accessible))
	if err != nil {
		switch {
		case errors.Is(err, ErrOrphanSeat):
			var orphan OrphanSeatError
			r.scan(&orphan.Orphans, &orphan.Suggested)
			return time.Time{}, &orphan
		case errors.Is(err, ErrSeatNotForSale):
			var kept SeatsNotForSaleError
			r.scan(&kept.Seats)
			return time.Time{}, &kept
		case errors.Is(err, ErrSeatUnavailable):
			var taken SeatsTakenError
			r.scan(&taken.Seats)
			return time.Time{}, &taken
		case errors.Is(err, ErrSeatUnknown):
			var unknown SeatUnknownError
			r.scan(&unknown.Seat)
			return time.Time{}, &unknown
		case errors.Is(err, ErrTooManySeats):
			var many TooManySeatsError
			r.scan(&many.Max)
			return time.Time{}, &many
		}
		return time.Time{}, fmt.Errorf("lock seats: %w", err)
	}
	var deadline time.Time
	r.scan(nil, &deadline) // the seats (as given), the hold's deadline
	return deadline, nil
}

// sectionSeats applies the sections form of c: it returns the seat ids of
// every section in order, and sets c.Rows and c.SeatsPerRow when the
// sections together are one grid (every section rows × the same seats
// per row), so seat positions are computed from ids (no seat index).
func sectionSeats(c *EventConfig) ([]string, error) {
	bad := func(format string, a ...any) ([]string, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidEvent, fmt.Sprintf(format, a...))
	}
	if len(c.Seats) > 0 || c.Rows != 0 || c.SeatsPerRow != 0 {
		return bad("give sections or rows/seats_per_row or seats, not both")
	}
	if len(c.Sections) > MaxSections {
		return bad("at most %d sections", MaxSections)
	}
	var seats []string
	rows, perRow, grid := 0, c.Sections[0].SeatsPerRow, true
	names := map[string]bool{}
	for i, sec := range c.Sections {
		if sec.Name == "" || len(sec.Name) > MaxSectionNameLen {
			return bad("section %d: name must be 1 to %d bytes", i+1, MaxSectionNameLen)
		}
		if err := checkName(fmt.Sprintf("section %d: name", i+1), sec.Name, MaxSectionNameLen); err != nil {
			return bad("%v", err)
		}
		if names[sec.Name] {
			return bad("section %q given twice", sec.Name)
		}
		names[sec.Name] = true
		if sec.PriceCents < 0 || sec.PriceCents > MaxPriceCents {
			return bad("section %q: price_cents must be from 0 to %d", sec.Name, MaxPriceCents)
		}
		if len(sec.Seats) > 0 {
			if sec.Rows != 0 || sec.SeatsPerRow != 0 {
				return bad("section %q: give seats or rows and seats_per_row, not both", sec.Name)
			}
			grid = false
			seats = append(seats, sec.Seats...)
		} else {
			if sec.Rows <= 0 || sec.SeatsPerRow <= 0 {
				return bad("section %q: give seats or rows and seats_per_row", sec.Name)
			}
			if sec.SeatsPerRow != perRow {
				grid = false
			}
			if len(seats)+sec.Rows*sec.SeatsPerRow > MaxSeats {
				return bad("at most %d seats", MaxSeats)
			}
			for r := rows; r < rows+sec.Rows; r++ {
				name := rowName(r)
				for n := 1; n <= sec.SeatsPerRow; n++ {
					seats = append(seats, name+strconv.Itoa(n))
				}
			}
			rows += sec.Rows
		}
		if len(seats) > MaxSeats {
			return bad("at most %d seats", MaxSeats)
		}
	}
	if grid {
		c.Rows, c.SeatsPerRow = rows, perRow
	}
	return seats, nil
}

// normaliseOrders checks and defaults the currency and seats per order.
func normaliseOrders(c *EventConfig) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidEvent, fmt.Sprintf(format, a...))
	}
	if c.Currency == "" {
		c.Currency = DefaultCurrency
	}
	if !ValidCurrency(c.Currency) {
		return bad("currency must be an ISO 4217 code (three letters A-Z)")
	}
	if c.MaxSeatsPerOrder == 0 {
		c.MaxSeatsPerOrder = DefaultMaxSeatsPerOrder
	}
	if c.MaxSeatsPerOrder < 1 || c.MaxSeatsPerOrder > MaxSeatsPerOrderLimit {
		return bad("max_seats_per_order must be from 1 to %d", MaxSeatsPerOrderLimit)
	}
	if c.PriceCents < 0 || c.PriceCents > MaxPriceCents {
		return bad("price_cents must be from 0 to %d", MaxPriceCents)
	}
	return nil
}

// ValidCurrency reports whether code looks like an ISO 4217 code.
func ValidCurrency(code string) bool {
	if len(code) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if code[i] < 'A' || code[i] > 'Z' {
			return false
		}
	}
	return true
}

// layoutOf returns the sections of a normalised config of total seats:
// its sections in order, or one DefaultSectionName section at PriceCents.
func layoutOf(c EventConfig, total int) []EventSection {
	if len(c.Sections) == 0 {
		return []EventSection{{Name: DefaultSectionName, PriceCents: c.PriceCents, Start: 0, Len: total}}
	}
	out := make([]EventSection, 0, len(c.Sections))
	start := 0
	for _, sec := range c.Sections {
		n := len(sec.Seats)
		if n == 0 {
			n = sec.Rows * sec.SeatsPerRow
		}
		out = append(out, EventSection{Name: sec.Name, PriceCents: sec.PriceCents, Start: start, Len: n})
		start += n
	}
	return out
}

// orderArgs are create_event.lua's ARGV 11-14 for a normalised config.
func orderArgs(c EventConfig, total int) ([]any, error) {
	layout := layoutOf(c, total)
	var prices strings.Builder
	for i, sec := range layout {
		if i > 0 {
			prices.WriteByte(',')
		}
		fmt.Fprintf(&prices, "%d:%d", sec.Len, sec.PriceCents)
	}
	js, err := json.Marshal(layout)
	if err != nil {
		return nil, err
	}
	return []any{c.Currency, c.MaxSeatsPerOrder, prices.String(), string(js)}, nil
}

// applyOrderConfig fills an event's multi-seat fields from its config hash.
// An event created before sections (no sections field) has one section at
// price 0 (the caller's default price applies) and the default maximum.
// Sections that cannot be read are an error: one section would misprice
// and misplace every seat.
func applyOrderConfig(e *Event, cfg map[string]string) error {
	e.Currency = cfg["currency"]
	e.MaxSeatsPerOrder, _ = strconv.Atoi(cfg["max_seats"])
	if e.MaxSeatsPerOrder == 0 {
		e.MaxSeatsPerOrder = DefaultMaxSeatsPerOrder
	}
	if js := cfg["sections"]; js != "" {
		if err := json.Unmarshal([]byte(js), &e.Sections); err != nil {
			return fmt.Errorf("event %s: sections: %w", e.ID, err)
		}
	}
	if len(e.Sections) == 0 {
		e.Sections = []EventSection{{Name: DefaultSectionName, Len: int(e.Counts.Total)}}
	}
	for i, sec := range e.Sections {
		if i == 0 || sec.PriceCents < e.PriceMinCents {
			e.PriceMinCents = sec.PriceCents
		}
		if sec.PriceCents > e.PriceMaxCents {
			e.PriceMaxCents = sec.PriceCents
		}
	}
	return nil
}

// SectionAt returns the section of the seat at position i of the seat
// map (SeatMapIDs order), or false.
func (e Event) SectionAt(i int) (EventSection, bool) {
	for _, sec := range e.Sections {
		if i >= sec.Start && i < sec.Start+sec.Len {
			return sec, true
		}
	}
	return EventSection{}, false
}

// splitPrices parses a script's ','-joined seat prices.
func splitPrices(csv string) []int64 {
	if csv == "" {
		return nil
	}
	parts := strings.Split(csv, ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		out[i], _ = strconv.ParseInt(p, 10, 64)
	}
	return out
}
