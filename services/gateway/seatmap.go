package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// The seat map (GET /api/seats/available) is anonymous and the largest
// answer the gateway gives (a byte per seat): it is a per-event snapshot
// (snapshot.go) read from Redis (Store.SeatStatuses: a plain GET of the
// event's status string) at most once per SeatMapMaxAge. The map may be
// up to a second old: selection is decided by the lock_seat script, so a
// stale seat only means a 409.

// defaultSeatMapMaxAge is how old a served snapshot may be.
const defaultSeatMapMaxAge = time.Second

// seatMapCache holds the seat map snapshots of one gateway instance.
type seatMapCache = snapshotCache[seatMapLayout]

// seatMapLayout is what a refresh reuses: the sections of the seat ids
// never change once an event exists (the ids themselves are not kept: a
// grid's sections name them in a few bytes).
type seatMapLayout struct {
	seats    int
	sections []booking.SeatSection
	// the event's priced sections and currency, read with the ids
	prices   []seatMapPrice
	currency string
}

// seatMapPrice is a priced section of the seat map: its name, price and
// the run of seats (start, len in display order) it covers. Each run of
// "sections" names its priced section by index ("section").
type seatMapPrice struct {
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Start      int    `json:"start"`
	Len        int    `json:"len"`
}

// seatMapResponse is the body of GET /api/seats/available (docs/http-api.md).
type seatMapResponse struct {
	EventID   string `json:"event_id"`
	Total     int    `json:"total"`
	Available int    `json:"available"`
	Held      int    `json:"held"`
	Sold      int    `json:"sold"`
	// Reserved and Killed are the seats operators hold for a purpose or
	// took off sale (seat_marks.go).
	Reserved int `json:"reserved"`
	Killed   int `json:"killed"`
	// Allocated: seats allocated to a channel (allocations.go), not
	// taken; on the page, not for a fan outside the channel.
	Allocated int `json:"allocated"`
	// Accessible: the wheelchair spaces and companion seats, by kind
	// ("wheelchair", "companion"; booking.Store.AccessibleSeats), whatever
	// their status, also once their allocation ended; absent when none.
	Accessible map[string][]string `json:"accessible,omitempty"`
	Sections   []seatMapSection    `json:"sections"`
	// The priced sections, once each (not per seat), and the
	// currency of their prices.
	Currency string         `json:"currency"`
	Prices   []seatMapPrice `json:"price_sections"`
}

// seatMapSection: seat i of the section is Row+(First+i), or Seats[i]
// when the ids do not follow that pattern; Status[i] is its status byte
// ('a' available, 'h' held, 's' sold, 'r' held for a purpose by the
// operators, 'k' killed: never for sale, 'c' allocated to a channel:
// only requests through it may take it).
type seatMapSection struct {
	Row    string   `json:"row,omitempty"`
	First  int      `json:"first,omitempty"`
	Seats  []string `json:"seats,omitempty"`
	Status string   `json:"status"`
	// Section is the index in price_sections of every seat of the run.
	Section int `json:"section"`
}

// readSeatMap reads the status string (and, the first time, the seat ids)
// and encodes the answer once for every reader.
func readSeatMap(ctx context.Context, store *booking.Store, eventID string, prev *snapshot[seatMapLayout], priced func(booking.Event) booking.Event) (*snapshot[seatMapLayout], error) {
	start := time.Now()
	status, err := store.SeatStatuses(ctx, eventID)
	if err != nil {
		return nil, err
	}
	snap := seatMapLayout{seats: len(status)}
	if prev != nil && prev.v.seats == len(status) {
		snap = prev.v
	} else {
		ids, err := store.SeatMapIDs(ctx, eventID)
		if err != nil {
			return nil, err
		}
		e, err := store.GetEvent(ctx, eventID)
		if err != nil {
			return nil, err
		}
		e = priced(e)
		snap.currency = e.Currency
		for _, p := range e.Sections {
			snap.prices = append(snap.prices, seatMapPrice{Name: p.Name, PriceCents: p.PriceCents, Start: p.Start, Len: p.Len})
		}
		snap.sections = splitRuns(booking.SeatSections(ids), e.Sections)
	}
	resp := seatMapResponse{EventID: eventID, Total: len(status), Sections: make([]seatMapSection, len(snap.sections)),
		Currency: snap.currency, Prices: snap.prices}
	for i := 0; i < len(status); i++ {
		switch status[i] {
		case booking.SeatCodeHeld:
			resp.Held++
		case booking.SeatCodeSold:
			resp.Sold++
		case booking.SeatCodeReserved:
			resp.Reserved++
		case booking.SeatCodeKilled:
			resp.Killed++
		case booking.SeatCodeAllocated:
			resp.Allocated++
		}
	}
	acc, err := store.AccessibleSeats(ctx, eventID) // once per snapshot
	if err != nil {
		return nil, err
	}
	for seat, kind := range acc {
		if resp.Accessible == nil {
			resp.Accessible = map[string][]string{}
		}
		resp.Accessible[kind] = append(resp.Accessible[kind], seat)
	}
	for _, seats := range resp.Accessible {
		slices.Sort(seats)
	}
	resp.Available = resp.Total - resp.Held - resp.Sold - resp.Reserved - resp.Killed - resp.Allocated
	for i, sec := range snap.sections {
		out := seatMapSection{Row: sec.Row, First: sec.First, Seats: sec.IDs, Section: priceIndex(snap.prices, sec.Start)}
		if sec.Start+sec.Len <= len(status) {
			out.Status = status[sec.Start : sec.Start+sec.Len]
		}
		resp.Sections[i] = out
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return newSnapshot(start, body, snap), nil
}

// seatsAvailable: GET /api/seats/available?event_id= — the event's seat
// map, compact: per section a string of one status byte per seat.
func (s *Server) seatsAvailable(c *fastserver.Ctx) {
	eventID, err := eventIDParam(c.Query("event_id"))
	if err != nil {
		c.Abort(http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
		return
	}
	maxAge := s.SeatMapMaxAge
	if maxAge <= 0 {
		maxAge = defaultSeatMapMaxAge
	}
	snap, err := s.seatMaps.get(c.Context(), eventID, maxAge, func(ctx context.Context, prev *snapshot[seatMapLayout]) (*snapshot[seatMapLayout], error) {
		return readSeatMap(ctx, s.Store, eventID, prev, func(e booking.Event) booking.Event {
			return s.priced(viewOf(e)).Event
		})
	})
	if err != nil {
		c.Fail(err)
		return
	}
	serveSnapshot(c, snap, maxAge)
}

// splitRuns cuts the runs of seat ids where a priced section starts, so
// that every run lies in one priced section.
func splitRuns(runs []booking.SeatSection, prices []booking.EventSection) []booking.SeatSection {
	var out []booking.SeatSection
	for _, r := range runs {
		for _, p := range prices {
			cut := p.Start - r.Start
			if cut <= 0 || cut >= r.Len {
				continue
			}
			head := r
			head.Len = cut
			if head.IDs != nil {
				head.IDs = r.IDs[:cut]
			}
			out = append(out, head)
			r.Start += cut
			r.Len -= cut
			if r.IDs != nil {
				r.IDs = r.IDs[cut:]
			} else {
				r.First += cut
			}
		}
		out = append(out, r)
	}
	return out
}

// priceIndex is the index of the priced section holding seat i (0 when
// none does).
func priceIndex(prices []seatMapPrice, i int) int {
	for k, p := range prices {
		if i >= p.Start && i < p.Start+p.Len {
			return k
		}
	}
	return 0
}
