package main

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// The seat map (GET /api/seats/available) is anonymous and the largest
// answer the gateway gives (a byte per seat), so its cost must not grow
// with the number of readers. Each gateway instance keeps a snapshot per
// event: it is read from Redis (Store.SeatStatuses: a plain GET of the
// event's status string) at most once per SeatMapMaxAge, with one read in
// flight per event however many clients ask (singleflight); every reader
// in between gets the same encoded bytes. The answer carries an ETag and
// Cache-Control, so browsers revalidate with a 304 and a CDN in front
// absorbs the rest. The map may be up to a second old: selection is
// decided by the lock_seat script, so a stale seat only means a 409.

// defaultSeatMapMaxAge is how old a served snapshot may be.
const defaultSeatMapMaxAge = time.Second

// maxSeatMapEvents bounds the snapshots kept (only existing events are
// kept, and events are created by admins, so this is a backstop).
const maxSeatMapEvents = 10_000

// seatMapCache holds the per-event snapshots of one gateway instance.
type seatMapCache struct {
	flights singleflight.Group
	mu      sync.Mutex
	snaps   map[string]*seatSnapshot
}

// seatSnapshot is one encoded seat map and what a refresh reuses: the
// sections of the seat ids never change once an event exists (the ids
// themselves are not kept: a grid's sections name them in a few bytes).
type seatSnapshot struct {
	at       time.Time
	body     []byte
	etag     string
	seats    int
	sections []booking.SeatSection
}

// seatMapResponse is the body of GET /api/seats/available (docs/http-api.md).
type seatMapResponse struct {
	EventID   string           `json:"event_id"`
	Total     int              `json:"total"`
	Available int              `json:"available"`
	Held      int              `json:"held"`
	Sold      int              `json:"sold"`
	Sections  []seatMapSection `json:"sections"`
}

// seatMapSection: seat i of the section is Row+(First+i), or Seats[i]
// when the ids do not follow that pattern; Status[i] is its status byte
// ('a' available, 'h' held, 's' sold).
type seatMapSection struct {
	Row    string   `json:"row,omitempty"`
	First  int      `json:"first,omitempty"`
	Seats  []string `json:"seats,omitempty"`
	Status string   `json:"status"`
}

func (m *seatMapCache) cached(eventID string) *seatSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snaps[eventID]
}

// get returns a snapshot no older than maxAge, reading Redis at most once
// at a time per event.
func (m *seatMapCache) get(ctx context.Context, store *booking.Store, eventID string, maxAge time.Duration) (*seatSnapshot, error) {
	if s := m.cached(eventID); s != nil && time.Since(s.at) < maxAge {
		return s, nil
	}
	v, err, _ := m.flights.Do(eventID, func() (any, error) {
		prev := m.cached(eventID)
		if prev != nil && time.Since(prev.at) < maxAge {
			return prev, nil // refreshed while this caller waited
		}
		// not the first caller's context: one caller going away must not
		// fail the read the others wait for
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		snap, err := readSeatMap(rctx, store, eventID, prev)
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		if m.snaps == nil {
			m.snaps = map[string]*seatSnapshot{}
		}
		if _, ok := m.snaps[eventID]; ok || len(m.snaps) < maxSeatMapEvents {
			m.snaps[eventID] = snap
		}
		m.mu.Unlock()
		return snap, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*seatSnapshot), nil
}

// readSeatMap reads the status string (and, the first time, the seat ids)
// and encodes the answer once for every reader.
func readSeatMap(ctx context.Context, store *booking.Store, eventID string, prev *seatSnapshot) (*seatSnapshot, error) {
	start := time.Now()
	status, err := store.SeatStatuses(ctx, eventID)
	if err != nil {
		return nil, err
	}
	snap := &seatSnapshot{at: start, seats: len(status)}
	if prev != nil && prev.seats == len(status) {
		snap.sections = prev.sections
	} else {
		ids, err := store.SeatMapIDs(ctx, eventID)
		if err != nil {
			return nil, err
		}
		snap.sections = booking.SeatSections(ids)
	}
	resp := seatMapResponse{EventID: eventID, Total: len(status), Sections: make([]seatMapSection, len(snap.sections))}
	for i := 0; i < len(status); i++ {
		switch status[i] {
		case booking.SeatCodeHeld:
			resp.Held++
		case booking.SeatCodeSold:
			resp.Sold++
		}
	}
	resp.Available = resp.Total - resp.Held - resp.Sold
	for i, sec := range snap.sections {
		out := seatMapSection{Row: sec.Row, First: sec.First, Seats: sec.IDs}
		if sec.Start+sec.Len <= len(status) {
			out.Status = status[sec.Start : sec.Start+sec.Len]
		}
		resp.Sections[i] = out
	}
	if snap.body, err = json.Marshal(resp); err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write(snap.body)
	snap.etag = `"` + strconv.FormatUint(h.Sum64(), 36) + `"`
	return snap, nil
}

// seatsAvailable: GET /api/seats/available?event_id= — the event's seat
// map, compact: per section a string of one status byte per seat.
func (s *Server) seatsAvailable(c *httpapi.FastCtx) {
	eventID, err := eventIDParam(c.Query("event_id"))
	if err != nil {
		c.Abort(http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
		return
	}
	maxAge := s.SeatMapMaxAge
	if maxAge <= 0 {
		maxAge = defaultSeatMapMaxAge
	}
	snap, err := s.seatMaps.get(c.Context(), s.Store, eventID, maxAge)
	if err != nil {
		c.Fail(err)
		return
	}
	h := &c.Response.Header
	h.Set("ETag", snap.etag)
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(max(1, int(maxAge/time.Second))))
	if etagMatches(c.Header("If-None-Match"), snap.etag) {
		c.SetStatusCode(http.StatusNotModified)
		return
	}
	c.WriteJSON(http.StatusOK, snap.body)
}

// etagMatches reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
