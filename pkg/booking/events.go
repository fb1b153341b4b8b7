package booking

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/ids"
)

// SeatIDs returns the seat ids of a rows × perRow map: rows lettered A…Z,
// AA, AB…, seats numbered from 1 (A1…A10, B1…).
func SeatIDs(rows, perRow int) []string {
	ids := make([]string, 0, rows*perRow)
	for r := 0; r < rows; r++ {
		name := rowName(r)
		for n := 1; n <= perRow; n++ {
			ids = append(ids, name+strconv.Itoa(n))
		}
	}
	return ids
}

func rowName(r int) string {
	name := ""
	for r >= 0 {
		name = string(rune('A'+r%26)) + name
		r = r/26 - 1
	}
	return name
}

// CreateEvent creates an event and its seat map. It fails with
// ErrEventExists if the id is taken by another configuration and
// ErrInvalidEvent on a bad config. It is idempotent: a retry with the same
// configuration (after a timeout, or a failed registration in the event
// index) returns the event and registers it.
func (s *Store) CreateEvent(ctx context.Context, c EventConfig) (Event, error) {
	seats, err := normalise(&c)
	if err != nil {
		return Event{}, err
	}
	args := []any{c.Name, c.Capacity, c.Hold.Milliseconds(), c.Grace.Milliseconds(),
		unixMS(c.SalesStart), unixMS(c.SalesEnd), c.BatchSize, c.Abandon.Milliseconds(),
		c.Rows, c.SeatsPerRow, s.nowMS()}
	more, err := orderArgs(c, len(seats))
	if err != nil {
		return Event{}, fmt.Errorf("create event: %w", err)
	}
	args = append(args, more...)
	for _, id := range seats {
		args = append(args, id)
	}
	_, err = s.run(ctx, scriptCreateEvent, c.ID, args...)
	if err != nil && !errors.Is(err, ErrEventExists) {
		return Event{}, fmt.Errorf("create event: %w", err)
	}
	if err == nil {
		if err := s.setDoor(ctx, c); err != nil {
			return Event{}, err
		}
	}
	// Registration is a second step (the index is outside the event's
	// slot). It runs on event_exists too, so a retry after a failed SADD
	// repairs the index; a retry with the same configuration succeeds.
	if err := s.rdb.SAdd(ctx, eventsIndexKey(s.prefix), c.ID).Err(); err != nil {
		return Event{}, fmt.Errorf("index event: %w", err)
	}
	e, gerr := s.GetEvent(ctx, c.ID)
	if err != nil {
		if gerr == nil && sameConfig(e, c, len(seats)) {
			if !sameDoor(e, c) && noDoor(e) {
				// the first create stopped before its door settings
				if err := s.setDoor(ctx, c); err != nil {
					return Event{}, err
				}
				return s.GetEvent(ctx, c.ID)
			}
			if sameDoor(e, c) {
				return e, nil
			}
		}
		return Event{}, fmt.Errorf("create event: %w", err)
	}
	return e, gerr
}

// sameConfig reports whether an existing event is what c (normalised, with
// total seats) would create: a retried CreateEvent.
func sameConfig(e Event, c EventConfig, total int) bool {
	return e.Name == c.Name && e.Capacity == c.Capacity && e.Hold == c.Hold && e.Grace == c.Grace &&
		e.SalesStart.Equal(ms(unixMS(c.SalesStart))) && e.SalesEnd.Equal(ms(unixMS(c.SalesEnd))) &&
		e.BatchSize == c.BatchSize && e.Abandon == c.Abandon && e.Rows == c.Rows && e.PerRow == c.SeatsPerRow &&
		e.Counts.Total == int64(total) && e.Currency == c.Currency && e.MaxSeatsPerOrder == c.MaxSeatsPerOrder
}

func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// normalise applies defaults and validates; it returns the seat ids.
func normalise(c *EventConfig) ([]string, error) {
	bad := func(format string, a ...any) ([]string, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidEvent, fmt.Sprintf(format, a...))
	}
	if !ids.ValidEvent(c.ID) {
		return bad("id must be %s", ids.EventRule)
	}
	if err := checkName("name", c.Name, MaxNameLen); err != nil {
		return bad("%v", err)
	}
	if c.Name == "" {
		c.Name = c.ID
	}
	if c.Capacity == 0 {
		c.Capacity = DefaultCapacity
	}
	if c.Hold == 0 {
		c.Hold = DefaultHold
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	switch {
	case c.Capacity < 0:
		return bad("capacity must not be negative")
	case c.Hold < time.Second:
		return bad("hold must be at least 1s")
	case c.Grace < 0 || c.Abandon < 0:
		return bad("grace and abandon must not be negative")
	case c.BatchSize < 0:
		return bad("batch_size must not be negative")
	case !c.SalesEnd.IsZero() && !c.SalesEnd.After(c.SalesStart):
		return bad("sales_end must be after sales_start")
	case c.Capacity > MaxCapacity:
		return bad("capacity must be at most %d", MaxCapacity)
	case c.BatchSize > MaxBatchSize:
		return bad("batch_size must be at most %d", MaxBatchSize)
	}
	if err := normaliseDoor(c); err != nil {
		return bad("%v", err)
	}
	for _, err := range []error{checkWindow("hold", c.Hold, time.Second), checkWindow("grace", c.Grace, time.Second),
		checkWindow("abandon", c.Abandon, 0), checkSalesTime("sales_start", c.SalesStart), checkSalesTime("sales_end", c.SalesEnd)} {
		if err != nil {
			return bad("%v", err)
		}
	}
	if err := normaliseOrders(c); err != nil {
		return nil, err
	}
	seats := c.Seats
	if len(c.Sections) > 0 {
		var err error
		if seats, err = sectionSeats(c); err != nil {
			return nil, err
		}
	} else if len(seats) == 0 {
		if c.Rows <= 0 || c.SeatsPerRow <= 0 {
			return bad("give seat ids or rows and seats per row")
		}
		if c.Rows*c.SeatsPerRow > MaxSeats {
			return bad("at most %d seats", MaxSeats)
		}
		seats = SeatIDs(c.Rows, c.SeatsPerRow)
	} else {
		c.Rows, c.SeatsPerRow = 0, 0
	}
	if len(seats) == 0 {
		return bad("no seats")
	}
	if len(seats) > MaxSeats {
		return bad("at most %d seats", MaxSeats)
	}
	seen := make(map[string]bool, len(seats))
	for _, id := range seats {
		if !ids.Valid(id) || strings.IndexByte(id, ',') >= 0 {
			return bad("bad seat id %q", id)
		}
		if seen[id] {
			return bad("duplicate seat id %q", id)
		}
		seen[id] = true
	}
	return seats, nil
}

// GetEvent returns an event's configuration and live counts.
func (s *Store) GetEvent(ctx context.Context, eventID string) (Event, error) {
	if err := checkIDs(eventID); err != nil {
		return Event{}, err
	}
	r, err := s.run(ctx, scriptCounts, eventID, s.nowMS())
	if err != nil {
		return Event{}, fmt.Errorf("get event: %w", err)
	}
	var kv reply
	var live Counts
	r.scan(&kv, &live.Waiting, &live.Active, &live.AdmittedLastMinute)
	cfg := map[string]string{}
	kv.records(2, func(f reply) { cfg[f.str(0)] = f.str(1) })
	n := func(k string) int64 { v, _ := strconv.ParseInt(cfg[k], 10, 64); return v }
	e := Event{
		ID: eventID, Name: cfg["name"], Capacity: int(n("capacity")),
		Hold:       time.Duration(n("hold_ms")) * time.Millisecond,
		Grace:      time.Duration(n("grace_ms")) * time.Millisecond,
		SalesStart: ms(n("sales_start_ms")), SalesEnd: ms(n("sales_end_ms")),
		BatchSize: int(n("batch")), Abandon: time.Duration(n("abandon_ms")) * time.Millisecond,
		Paused: cfg["paused"] == "1", Rows: int(n("rows")), PerRow: int(n("per_row")),
		AdmitPerMinute: int(n("admit_per_minute")),
		EarlyJoin:      time.Duration(n("early_join_ms")) * time.Millisecond,
		DrawCommit:     cfg["draw_commit"], Prequeued: n("prequeued"), Challenge: challengeOf(cfg),
	}
	if e.DrawCommit != "" && !s.now().Before(e.SalesStart) {
		e.DrawSeed = cfg["draw_seed"] // revealed once the sale started
	}
	e.Counts = Counts{
		Total: n("total"), Held: n("held"), Sold: n("sold"), Served: n("served"),
		Waiting: live.Waiting, Active: live.Active, AdmittedLastMinute: live.AdmittedLastMinute,
	}
	e.Counts.Available = e.Counts.Total - e.Counts.Held - e.Counts.Sold
	applyOrderConfig(&e, cfg)
	return e, nil
}

// ListEvents returns every event, sorted by id.
func (s *Store) ListEvents(ctx context.Context) ([]Event, error) {
	ids, err := s.rdb.SMembers(ctx, eventsIndexKey(s.prefix)).Result()
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	sort.Strings(ids)
	out := make([]Event, 0, len(ids))
	for _, id := range ids {
		e, err := s.GetEvent(ctx, id)
		if errors.Is(err, ErrEventNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// EventIDs returns the ids of every event (for the safety-net tick).
func (s *Store) EventIDs(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, eventsIndexKey(s.prefix)).Result()
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	sort.Strings(ids)
	return ids, nil
}

// UpdateEvent pauses or resumes admission and changes capacity, hold window
// or abandonment timeout of a live event. A larger capacity takes effect at
// the next promotion; a smaller one lets current holds finish.
func (s *Store) UpdateEvent(ctx context.Context, eventID string, u EventUpdate) (Event, error) {
	args, err := u.args()
	if err != nil {
		return Event{}, err
	}
	if err := checkIDs(eventID); err != nil {
		return Event{}, err
	}
	if u.SalesStart != nil || u.SalesEnd != nil {
		if err := s.checkSalesWindow(ctx, eventID, u); err != nil {
			return Event{}, err
		}
	}
	if len(args) > 0 {
		args = append(args, "now_ms", s.nowMS())
	}
	if _, err := s.run(ctx, scriptUpdateEvent, eventID, args...); err != nil {
		return Event{}, fmt.Errorf("update event: %w", err)
	}
	return s.GetEvent(ctx, eventID)
}

// Seats returns every seat of an event with its status, in display order,
// from the seat map and the status string (no script).
func (s *Store) Seats(ctx context.Context, eventID string) ([]Seat, error) {
	status, err := s.SeatStatuses(ctx, eventID)
	if err != nil {
		return nil, err
	}
	ids, err := s.SeatMapIDs(ctx, eventID)
	if err != nil {
		return nil, err
	}
	out := make([]Seat, len(ids))
	for i, id := range ids {
		st := SeatAvailable
		if i < len(status) {
			st = SeatStatusOf(status[i])
		}
		out[i] = Seat{ID: id, Status: st}
	}
	return out, nil
}

// Counts returns an event's live numbers.
func (s *Store) Counts(ctx context.Context, eventID string) (Counts, error) {
	e, err := s.GetEvent(ctx, eventID)
	return e.Counts, err
}
