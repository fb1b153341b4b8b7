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
		c.Rows, c.SeatsPerRow}
	more, err := orderArgs(c, len(seats))
	if err != nil {
		return Event{}, fmt.Errorf("create event: %w", err)
	}
	args = append(args, more...)
	// the door, sales window and waitlist settings go with the config: no
	// join finds the event without them, even if this process stops here
	door := doorFields(c, true)
	args = append(append(args, len(door)/2), door...)
	for _, id := range seats {
		args = append(args, id)
	}
	_, err = s.run(ctx, scriptCreateEvent, c.ID, args...)
	if err != nil && !errors.Is(err, ErrEventExists) {
		return Event{}, fmt.Errorf("create event: %w", err)
	}
	// Registration is a second step (the index is outside the event's
	// slot). It runs on event_exists too, so a retry after a failed SADD
	// repairs the index; a retry with the same configuration succeeds.
	if err := s.rdb.SAdd(ctx, eventsIndexKey(s.prefix), c.ID).Err(); err != nil {
		return Event{}, fmt.Errorf("index event: %w", err)
	}
	e, gerr := s.GetEvent(ctx, c.ID)
	if err != nil {
		if gerr == nil && sameConfig(e, c, len(seats)) && sameDoor(e, c) {
			return e, nil
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
	if _, err := phaseLeaveArg(c.OnPhaseChange); err != nil {
		return bad("%v", err)
	}
	c.OnPhaseChange = orKeep(c.OnPhaseChange)
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
	r, err := s.run(ctx, scriptCounts, eventID)
	if err != nil {
		return Event{}, fmt.Errorf("get event: %w", err)
	}
	var kv reply
	var live Counts
	var now time.Time // Redis's clock
	var phasePrequeued int64
	r.scan(&kv, &live.Waiting, &live.Active, &live.AdmittedLastMinute, &now, &phasePrequeued)
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
		DrawCommit:     cfg["draw_commit"], Prequeued: n("prequeued"), PhasePrequeued: phasePrequeued,
		Challenge:           challengeOf(cfg),
		HoldsPausedSince:    ms(n("hold_paused_at")),
		ProviderOutageEnded: ms(n("hold_outage_ended_at")),
		NoOrphanRule:        cfg["no_orphans"] == "1",
		Phase:               cfg["phase"], Audience: cfg["audience"],
		OfferSeconds: int(n("offer_ms") / 1000), WaitlistEarly: cfg["waitlist_early"] == "1",
	}
	if e.Audience == "" {
		e.Audience = AudiencePublic
	}
	if e.DrawCommit != "" && !now.Before(e.SalesStart) {
		e.DrawSeed = cfg["draw_seed"] // revealed once the sale started
	}
	e.Counts = Counts{
		Total: n("total"), Held: n("held"), Sold: n("sold"), Served: n("served"),
		Reserved: n("reserved"), Killed: n("killed"), Allocated: n("allocated"),
		Waiting: live.Waiting, Active: live.Active, AdmittedLastMinute: live.AdmittedLastMinute,
	}
	e.Counts.Available = e.Counts.Total - e.Counts.Held - e.Counts.Sold - e.Counts.Reserved - e.Counts.Killed -
		e.Counts.Allocated
	if err := applyOrderConfig(&e, cfg); err != nil {
		return Event{}, fmt.Errorf("get event: %w", err)
	}
	applyWindow(&e, cfg, now)
	e.OnPhaseChange = phaseChangeOf(cfg)
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
// the next promotion; a smaller one lets current holds finish. A new
// sales start after the beacon round the pre-queue's draw is committed to
// is refused (ErrBeaconRoundEarly, checkBeaconStart).
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
	if u.SalesStart != nil {
		if err := s.checkBeaconStart(ctx, eventID, "", *u.SalesStart); err != nil {
			return Event{}, err
		}
	}
	if u.Revision != 0 {
		args = append(args, "settings_rev", u.Revision)
	}
	if _, err := s.run(ctx, scriptUpdateEvent, eventID, args...); err != nil {
		return Event{}, fmt.Errorf("update event: %w", err)
	}
	return s.GetEvent(ctx, eventID)
}

// SettleSettings tells Redis the ledger's settings revision of an event
// (committed, read with the event's row locked, so no change is under
// way): the last change made with a later EventUpdate.Revision was rolled
// back in the ledger after Redis took it, and its fields go back to the
// values they had, each only if it still has the value that change gave
// it. It returns the fields put back (none when the ledger has the
// change). ErrEventNotFound when Redis has no such event.
func (s *Store) SettleSettings(ctx context.Context, eventID string, committed int64) ([]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	r, err := s.run(ctx, scriptUpdateEvent, eventID, "settings_committed", committed)
	if err != nil {
		return nil, fmt.Errorf("settle settings: %w", err)
	}
	undone := make([]string, 0, len(r)-1)
	for i := 1; i < len(r); i++ {
		undone = append(undone, r.str(i))
	}
	return undone, nil
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

// EventConfig is what an operator gives to create an event.
type EventConfig struct {
	ID   string
	Name string
	// Seats lists explicit seat ids. When empty, Rows × SeatsPerRow gives
	// A1…A<n>, B1… (rows lettered A–Z, then AA, AB…).
	Seats       []string
	Rows        int
	SeatsPerRow int
	// Capacity is the booking room's size: how many users may hold a slot at
	// once. Default 1000.
	Capacity int
	// Hold is how long an admitted user has to pick a seat and pay. Default 600 s.
	Hold time.Duration
	// Grace is given once to a hold that times out while its payment is
	// pending. Default 120 s.
	Grace time.Duration
	// SalesStart and SalesEnd bound when users may join. Zero start means
	// open now; zero end means no end.
	SalesStart time.Time
	SalesEnd   time.Time
	// BatchSize bounds how many users one promotion admits. Default 500.
	BatchSize int
	// Abandon drops a waiting user who has not been seen (joined, polled or
	// connected) for this long when their turn comes. Zero disables it.
	Abandon time.Duration
	// Sections, instead of Seats or Rows × SeatsPerRow, give the seat map
	// as priced sections (multiseat.go). The old forms are one section,
	// DefaultSectionName, at PriceCents.
	Sections   []Section
	PriceCents int64
	// Currency is the ISO 4217 code of the prices. Default DefaultCurrency.
	Currency string
	// MaxSeatsPerOrder bounds the seats of one hold: 1 to
	// MaxSeatsPerOrderLimit, default DefaultMaxSeatsPerOrder.
	MaxSeatsPerOrder int
	// AdmitPerMinute caps admissions (promotions and immediate admissions)
	// over any 60 s, on top of Capacity. Zero: no cap (frontdoor.go).
	AdmitPerMinute int
	// EarlyJoin opens the pre-queue this long before SalesStart (frontdoor.go, prequeue.go);
	// zero: joins before the start are refused.
	EarlyJoin time.Duration
	// Challenge is ChallengePoW when a join must carry a solved
	// proof-of-work challenge (checked by the gateway), or ChallengeNone
	// (also the empty string).
	Challenge string
	// NoOrphanRule refuses a manual selection that leaves a single free
	// seat in a row while another choice would not (bestavail.go).
	NoOrphanRule bool
	// HoldsEndWithSale ends the holds of users in the room at SalesEnd
	// (the admin API's finish_after_end false); false: they finish within
	// their hold (window.go).
	HoldsEndWithSale bool
	// RefundableUntil is until when a fan may cancel their own sold order
	// (window.go); zero: fans cannot.
	RefundableUntil time.Time
	// OfferTime is how long a waitlist offer holds its seats (zero: no
	// waitlist); WaitlistEarly lets fans join before the sell-out
	// (waitlist.go). Set by the waitlist's settings, not at creation;
	// the ledger keeps them and a rebuild restores them (doorFields).
	OfferTime     time.Duration
	WaitlistEarly bool
	// OnPhaseChange is what a scheduled phase's end does to the users
	// waiting (PhaseChangeKeep, also "", or PhaseChangeLeave; phases.go).
	OnPhaseChange string
}

// Event is an event's configuration and live counts.
type Event struct {
	ID         string        `json:"id"`
	Name       string        `json:"name"`
	Capacity   int           `json:"capacity"`
	Hold       time.Duration `json:"-"`
	Grace      time.Duration `json:"-"`
	SalesStart time.Time     `json:"sales_start,omitzero"`
	SalesEnd   time.Time     `json:"sales_end,omitzero"`
	BatchSize  int           `json:"batch_size"`
	Abandon    time.Duration `json:"-"`
	Paused     bool          `json:"paused"`
	Rows       int           `json:"rows,omitempty"`
	PerRow     int           `json:"seats_per_row,omitempty"`
	// Orders of several seats in priced sections (multiseat.go).
	Currency         string         `json:"currency,omitempty"`
	MaxSeatsPerOrder int            `json:"max_seats_per_order"`
	Sections         []EventSection `json:"sections,omitempty"`
	PriceMinCents    int64          `json:"price_min_cents"`
	PriceMaxCents    int64          `json:"price_max_cents"`
	// AdmitPerMinute is the rate cap (0 = none).
	AdmitPerMinute int           `json:"admit_per_minute"`
	EarlyJoin      time.Duration `json:"-"`
	// DrawCommit is hex SHA-256 of the pre-queue's draw seed, published
	// from creation; DrawSeed (hex) is revealed once the sale started.
	DrawCommit string `json:"draw_commit,omitempty"`
	DrawSeed   string `json:"draw_seed,omitempty"`
	// Prequeued counts the joins into the pre-queue.
	Prequeued int64 `json:"prequeued,omitempty"`
	// PhasePrequeued is how many fans wait in a later phase's open
	// pre-queue (docs/booking-engine.md "A later phase's pre-queue").
	PhasePrequeued int64 `json:"phase_prequeued,omitempty"`
	// Challenge: "pow" when joining needs a solved proof-of-work
	// challenge, else "none".
	Challenge string `json:"challenge"`
	// Phase is the sale's current phase ("" none) and Audience who may
	// join in it (AudiencePublic, AudienceCode: SetPhase).
	Phase    string `json:"phase,omitempty"`
	Audience string `json:"audience"`
	// NoOrphanRule: manual selections are held to the no-orphan rule.
	NoOrphanRule bool   `json:"no_orphan_rule"`
	Counts       Counts `json:"counts"`
	// HoldsPausedSince is when the payment provider was declared degraded
	// and the hold clocks stopped (provider.go); zero while they run.
	HoldsPausedSince time.Time `json:"-"`
	// ProviderOutageEnded is when the hold clocks restarted because the
	// outage lasted longer than the maximum (Store.EndProviderOutage),
	// zero unless that was the last change.
	ProviderOutageEnded time.Time `json:"-"`
	// The sales window (window.go): FinishAfterEnd, users in the room at
	// SalesEnd finish within their hold; SalesEnded, SalesEnd has passed
	// at At, Redis's clock when the event was read; RefundableUntil, until
	// when a fan may cancel their own order (zero: never).
	FinishAfterEnd  bool      `json:"finish_after_end"`
	SalesEnded      bool      `json:"sales_ended"`
	RefundableUntil time.Time `json:"refundable_until,omitzero"`
	At              time.Time `json:"-"`
	// OfferSeconds is how long a waitlist offer holds its seats (0: no
	// waitlist); WaitlistEarly lets fans join it before the sell-out
	// (waitlist.go).
	OfferSeconds  int  `json:"offer_seconds"`
	WaitlistEarly bool `json:"waitlist_early"`
	// OnPhaseChange: what a scheduled phase's end does to the users
	// waiting, PhaseChangeKeep or PhaseChangeLeave (phases.go).
	OnPhaseChange string `json:"on_phase_change"`
}

// EventUpdate changes a live event; nil fields are left alone.
type EventUpdate struct {
	Paused   *bool
	Capacity *int
	Hold     *time.Duration
	Abandon  *time.Duration
	// Every other setting can be repaired too (eventbounds.go has the bounds).
	Name       *string
	Grace      *time.Duration
	BatchSize  *int
	SalesStart *time.Time // the zero time: open now
	SalesEnd   *time.Time // the zero time: no end
	// MaxSeatsPerOrder applies to selections made after the change.
	MaxSeatsPerOrder *int
	// AdmitPerMinute changes the rate cap (0 = off), at once.
	AdmitPerMinute *int
	// EarlyJoin changes the pre-queue's opening for joins from now on
	// (frontdoor.go: who is pre-queued stays, the committed seed never changes).
	EarlyJoin *time.Duration
	// Challenge switches the proof-of-work challenge ("pow" or "none").
	Challenge *string
	// NoOrphanRule switches the no-orphan rule for manual selections on
	// or off, for selections from now on.
	NoOrphanRule *bool
	// FinishAfterEnd: whether users in the room at the sales end finish
	// within their hold; RefundableUntil: until when fans may cancel their
	// own orders (the zero time: never). window.go.
	FinishAfterEnd  *bool
	RefundableUntil *time.Time
	// OfferTime (zero: no waitlist) and WaitlistEarly are the waitlist's
	// settings (waitlist.go), for offers made from now on.
	OfferTime     *time.Duration
	WaitlistEarly *bool
	// OnPhaseChange sets what a scheduled phase's end does to the users
	// waiting (PhaseChangeKeep or PhaseChangeLeave), from the next end on.
	OnPhaseChange *string
	// Revision, when the ledger records the change (ledger.Ledger.UpdateEvent,
	// in a transaction holding the event's row), is the settings revision
	// the change has once committed; 0: a change of Redis alone. Redis
	// keeps what the change replaced until SettleSettings or the event's
	// next such change learns whether the ledger has it, and undoes it if
	// not (lua/update_event.lua).
	Revision int64
}

// Counts are an event's live numbers.
type Counts struct {
	Total     int64 `json:"total"`
	Available int64 `json:"available"`
	Held      int64 `json:"held"`
	Sold      int64 `json:"sold"`
	// Reserved and Killed are the seats operators hold for a purpose and
	// took off sale (MarkSeats).
	Reserved int64 `json:"reserved"`
	Killed   int64 `json:"killed"`
	// Allocated: seats allocated to a channel, not taken (allocations.go).
	Allocated int64 `json:"allocated"`
	Waiting   int64 `json:"waiting"`
	Active    int64 `json:"active"`
	// Served is the highest join sequence admitted so far: a waiting user
	// with sequence s has at most s-Served-1 users ahead.
	Served int64 `json:"served"`
	// AdmittedLastMinute is how many users were admitted in the last 60 s,
	// the basis of the ETA.
	AdmittedLastMinute int64 `json:"admitted_last_minute"`
}

// Seat is one seat and its status.
type Seat struct {
	ID     string     `json:"seat_id"`
	Status SeatStatus `json:"status"`
}
