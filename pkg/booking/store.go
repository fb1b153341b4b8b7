// Package booking is the booking engine: events and their seat maps, the
// waiting queue, the capacity-limited booking room, seat holds, payments
// and timeouts, all kept in Redis and changed only by the Lua scripts in
// lua/ (one per operation, each atomic). Store has one typed method per
// script; script reply codes become the sentinel errors in types.go.
//
// Every key of one event carries the hash tag {eventID} (keys.go), so the
// scripts run unchanged on Redis Cluster. Time is taken from the Store's
// clock and passed to the scripts, never read inside Redis, so tests
// control it. docs/booking-engine.md describes the key layout, the state
// machine and each script's contract.
package booking

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/redis/go-redis/v9"
)

// Scripts, loaded once per process: Run uses EVALSHA and falls back to EVAL
// when the server does not know the script yet (after a restart or on a new
// cluster node).
var (
	scriptCreateEvent     = redis.NewScript(lua.Script("create_event"))
	scriptUpdateEvent     = redis.NewScript(lua.Script("update_event"))
	scriptEnqueue         = redis.NewScript(lua.Script("enqueue"))
	scriptGetPosition     = redis.NewScript(lua.Script("get_position"))
	scriptPromote         = redis.NewScript(lua.Script("promote"))
	scriptLockSeat        = redis.NewScript(lua.Script("lock_seat"))
	scriptInitiatePayment = redis.NewScript(lua.Script("initiate_payment"))
	scriptPaymentSuccess  = redis.NewScript(lua.Script("payment_success"))
	scriptPaymentFailure  = redis.NewScript(lua.Script("payment_failure"))
	scriptHandleTimeout   = redis.NewScript(lua.Script("handle_timeout"))
	scriptCancel          = redis.NewScript(lua.Script("cancel"))
	scriptCounts          = redis.NewScript(lua.Script("counts"))
	scriptAckOutbox       = redis.NewScript(lua.Script("ack_outbox"))
	scriptTouch           = redis.NewScript(lua.Script("touch"))

	allScripts = []*redis.Script{scriptCreateEvent, scriptUpdateEvent, scriptEnqueue,
		scriptGetPosition, scriptPromote, scriptLockSeat, scriptInitiatePayment,
		scriptPaymentSuccess, scriptPaymentFailure, scriptHandleTimeout, scriptCancel,
		scriptCounts, scriptAckOutbox, scriptTouch}
)

// Defaults for EventConfig fields left zero.
const (
	DefaultCapacity  = 1000
	DefaultHold      = 600 * time.Second
	DefaultGrace     = 120 * time.Second
	DefaultBatchSize = 500
	MaxSeats         = 200_000
)

// Store runs the booking scripts against one Redis (or Redis Cluster).
// It is safe for concurrent use. All booking state is in Redis; the Store
// itself keeps only a cache of key names and the auto-pipelining
// goroutines, which Close stops.
type Store struct {
	pipe   *pipeliner // nil: every call is its own round trip
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time
	keys   sync.Map // event id → *keySet, so hot paths do not rebuild 17 keys per call
	cached atomic.Int64

	flushers int
}

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the key prefix (default "bo"); tests use their own.
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// WithAutoPipeline sets how many pipelines of concurrent script calls may
// be in flight at once (default 2); 0 sends every call on its own. See
// pipeline.go: under load, batching the calls of concurrent requests into
// one round trip saves most of the client's and Redis's syscalls.
func WithAutoPipeline(flushers int) Option { return func(s *Store) { s.flushers = flushers } }

// WithClock sets the clock the Store passes to the scripts.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns a Store over a go-redis client (*redis.Client,
// *redis.ClusterClient or a UniversalClient).
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: "bo", now: time.Now, flushers: 2}
	for _, o := range opts {
		o(s)
	}
	if s.flushers > 0 {
		s.pipe = newPipeliner(rdb, s.flushers)
	}
	return s
}

// Close stops the auto-pipelining goroutines. It does not close the Redis
// client. Calls after Close still work, one round trip each.
func (s *Store) Close() {
	if s.pipe != nil {
		s.pipe.close()
	}
}

// Prefix returns the key prefix.
func (s *Store) Prefix() string { return s.prefix }

// Now returns the Store's clock reading.
func (s *Store) Now() time.Time { return s.now() }

// Load loads every script into Redis (every master on a cluster) so the
// first requests do not pay for EVAL. Optional: Run falls back anyway.
func (s *Store) Load(ctx context.Context) error {
	for _, sc := range allScripts {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load script: %w", err)
		}
	}
	return nil
}

// run executes a script for an event and decodes its array reply. A Redis
// error is returned wrapped; a script's error code becomes its sentinel.
func (s *Store) run(ctx context.Context, sc *redis.Script, eventID string, args ...any) (reply, error) {
	var v any
	var err error
	ks := s.eventKeySet(eventID)
	if s.pipe != nil {
		v, err = s.pipe.do(ctx, sc, ks, args)
	} else {
		v, err = sc.Run(ctx, s.rdb, ks.keys, args...).Result()
	}
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	r, err := asReply(v)
	if err != nil {
		return nil, err
	}
	return r, r.err()
}

func (s *Store) nowMS() int64 { return s.now().UnixMilli() }

// eventKeys returns keysFor(prefix, eventID), cached. Callers must not
// modify the slice. Only ids that passed ValidID reach here, and unknown
// events are cached too, which is bounded by what clients send: the cache
// is capped to avoid growing without limit on garbage ids.
func (s *Store) eventKeys(eventID string) []string { return s.eventKeySet(eventID).keys }

// keySet is an event's keys as strings and, boxed once, as the arguments
// of a command (a script call on the hot path then boxes only its own
// ARGV, not 17 keys).
type keySet struct {
	keys []string
	args []any
}

func (s *Store) eventKeySet(eventID string) *keySet {
	if k, ok := s.keys.Load(eventID); ok {
		return k.(*keySet)
	}
	ks := &keySet{keys: keysFor(s.prefix, eventID)}
	ks.args = make([]any, len(ks.keys))
	for i, k := range ks.keys {
		ks.args[i] = k
	}
	if s.cached.Add(1) <= maxCachedEvents {
		s.keys.Store(eventID, ks)
	}
	return ks
}

const maxCachedEvents = 10_000

// ValidID reports whether s may be used as an event, user, seat or payment
// id: 1 to 128 printable ASCII characters without spaces, braces or '|'
// (braces would break the hash tag, '|' the outbox encoding).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || c == '{' || c == '}' || c == '|' {
			return false
		}
	}
	return true
}

func checkIDs(ids ...string) error {
	for _, id := range ids {
		if !ValidID(id) {
			return fmt.Errorf("%w: bad id %q", ErrInvalidArgument, id)
		}
	}
	return nil
}

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
	if !ValidEventID(c.ID) {
		return bad("id must be %s", EventIDRule)
	}
	if len(c.Name) > MaxNameLen {
		return bad("name must be at most %d bytes", MaxNameLen)
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
		return bad("capacity must be positive")
	case c.Hold < time.Second:
		return bad("hold must be at least 1s")
	case c.Grace < 0 || c.Abandon < 0:
		return bad("grace and abandon must not be negative")
	case c.BatchSize < 0:
		return bad("batch size must be positive")
	case !c.SalesEnd.IsZero() && !c.SalesEnd.After(c.SalesStart):
		return bad("sales end must be after sales start")
	case c.Capacity > MaxCapacity:
		return bad("capacity must be at most %d", MaxCapacity)
	case c.BatchSize > MaxBatchSize:
		return bad("batch size must be at most %d", MaxBatchSize)
	}
	if err := checkAdmitPerMinute(c.AdmitPerMinute); err != nil {
		return bad("%v", err)
	}
	if err := checkEarlyJoin(c.EarlyJoin); err != nil {
		return bad("%v", err)
	}
	for _, err := range []error{checkWindow("hold", c.Hold, time.Second), checkWindow("grace", c.Grace, time.Second),
		checkWindow("abandon", c.Abandon, 0), checkSalesTime("sales start", c.SalesStart), checkSalesTime("sales end", c.SalesEnd)} {
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
		if !ValidID(id) || strings.IndexByte(id, ',') >= 0 {
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
		return Event{}, ErrEventNotFound
	}
	r, err := s.run(ctx, scriptCounts, eventID, s.nowMS())
	if err != nil {
		return Event{}, fmt.Errorf("get event: %w", err)
	}
	cfg := map[string]string{}
	kv := r.list(1)
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv.str(i)] = kv.str(i + 1)
	}
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
		DrawCommit:     cfg["draw_commit"], Prequeued: n("prequeued"),
	}
	if e.DrawCommit != "" && !s.now().Before(e.SalesStart) {
		e.DrawSeed = cfg["draw_seed"] // revealed once the sale started
	}
	e.Counts = Counts{
		Total: n("total"), Held: n("held"), Sold: n("sold"), Served: n("served"),
		Waiting: r.int(2), Active: r.int(3), AdmittedLastMinute: r.int(4),
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
	var args []any
	if u.Paused != nil {
		v := 0
		if *u.Paused {
			v = 1
		}
		args = append(args, "paused", v)
	}
	if u.Capacity != nil {
		if *u.Capacity < 0 || *u.Capacity > MaxCapacity {
			return Event{}, fmt.Errorf("%w: capacity must be from 0 to %d", ErrInvalidArgument, MaxCapacity)
		}
		args = append(args, "capacity", *u.Capacity)
	}
	if u.Hold != nil {
		if err := checkWindow("hold", *u.Hold, time.Second); err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
		}
		args = append(args, "hold_ms", u.Hold.Milliseconds())
	}
	if u.Abandon != nil {
		if err := checkWindow("abandon", *u.Abandon, 0); err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
		}
		args = append(args, "abandon_ms", u.Abandon.Milliseconds())
	}
	more, err := u.moreArgs()
	if err != nil {
		return Event{}, err
	}
	args = append(args, more...)
	if err := checkIDs(eventID); err != nil {
		return Event{}, ErrEventNotFound
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

// Enqueue joins a user to an event's queue, or admits them at once when the
// room has a free slot and nobody waits. Joining again returns the current
// entry unchanged (Created false). Errors: ErrEventNotFound,
// ErrSalesNotStarted, ErrSalesEnded, ErrSoldOut, ErrInvalidArgument.
func (s *Store) Enqueue(ctx context.Context, eventID, userID string) (JoinResult, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return JoinResult{}, err
	}
	now := s.nowMS()
	r, err := s.run(ctx, scriptEnqueue, eventID, userID, now)
	if err != nil {
		return JoinResult{}, fmt.Errorf("enqueue: %w", err)
	}
	res := JoinResult{State: State(r.str(1)), Sequence: r.int(2), Position: r.int(3),
		ExpireAt: ms(r.int(4)), Created: r.int(5) == 1, PrequeuedUntil: ms(r.int(6))}
	if res.Created {
		res.Outbox = []OutboxEntry{{Kind: "joined", UserID: userID, Sequence: res.Sequence, At: ms(now)}}
		if res.State == StateActive {
			res.Outbox = append(res.Outbox, outboxFor([]Admission{{UserID: userID, Sequence: res.Sequence, ExpireAt: res.ExpireAt}}, nil, now)...)
		}
	}
	return res, nil
}

// Position reports where a user stands. A waiting user's call also counts
// as presence for abandonment. Errors: ErrEventNotFound, ErrNotFound (the
// returned Status still carries SoldOut and Counts).
func (s *Store) Position(ctx context.Context, eventID, userID string) (Status, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return Status{}, err
	}
	r, err := s.run(ctx, scriptGetPosition, eventID, userID, s.nowMS())
	if errors.Is(err, ErrNotFound) {
		return Status{SoldOut: r.int(1) == 1, AdmitPerMinute: r.int(5), SalesStart: ms(r.int(6)),
			Counts: Counts{Served: r.int(2), Waiting: r.int(3), AdmittedLastMinute: r.int(4)}}, err
	}
	if err != nil {
		return Status{}, fmt.Errorf("position: %w", err)
	}
	return Status{State: State(r.str(1)), Sequence: r.int(2), Position: r.int(3),
		SeatID: r.str(4), PaymentID: r.str(5), ExpireAt: ms(r.int(6)), SoldOut: r.int(7) == 1, AdmitPerMinute: r.int(11), SalesStart: ms(r.int(12)),
		Counts: Counts{Served: r.int(8), Waiting: r.int(9), AdmittedLastMinute: r.int(10)}}, nil
}

// Promote reclaims expired holds and admits waiting users into every free
// slot of the room, in join order, at most max users (0: the event's batch
// size). Every admission and expiry is also written to the event's outbox;
// the caller announces them and then calls AckOutbox.
func (s *Store) Promote(ctx context.Context, eventID string, max int) (PromoteResult, error) {
	if err := checkIDs(eventID); err != nil {
		return PromoteResult{}, err
	}
	now := s.nowMS()
	r, err := s.run(ctx, scriptPromote, eventID, now, max)
	if err != nil {
		return PromoteResult{}, fmt.Errorf("promote: %w", err)
	}
	res := PromoteResult{Reason: r.str(1)}
	p := r.list(2)
	for i := 0; i+2 < len(p); i += 3 {
		res.Promoted = append(res.Promoted, Admission{UserID: p.str(i), Sequence: p.int(i + 1), ExpireAt: ms(p.int(i + 2))})
	}
	x := r.list(3)
	for i := 0; i+4 < len(x); i += 5 {
		res.Expired = append(res.Expired, Expiry{UserID: x.str(i), Sequence: x.int(i + 1), SeatID: x.str(i + 2), PaymentID: x.str(i + 3),
			At: ms(x.int(i + 4))})
	}
	a := r.list(4)
	var abandoned []OutboxEntry
	for i := 0; i+1 < len(a); i += 2 {
		res.Abandoned = append(res.Abandoned, a.str(i))
		abandoned = append(abandoned, OutboxEntry{Kind: "cancelled", UserID: a.str(i), Sequence: a.int(i + 1),
			From: FromAbandoned, At: ms(now)})
	}
	res.Outbox = append(outboxFor(res.Promoted, res.Expired, now), abandoned...)
	return res, nil
}

// LockSeat holds one seat for an admitted user (replacing the seats they
// already hold): LockSeats with one seat. Errors: ErrNotFound,
// ErrInvalidState, ErrHoldExpired, ErrSeatUnknown, ErrSeatUnavailable,
// ErrEventNotFound.
func (s *Store) LockSeat(ctx context.Context, eventID, userID, seatID string) (time.Time, error) {
	return s.LockSeats(ctx, eventID, userID, []string{seatID})
}

// InitiatePayment moves a user's held seat to payment_pending under
// paymentID, or returns the payment already initiated (Created false).
// Errors: ErrNotFound, ErrInvalidState, ErrHoldExpired, ErrEventNotFound.
func (s *Store) InitiatePayment(ctx context.Context, eventID, userID, paymentID string) (PaymentHold, error) {
	if err := checkIDs(eventID, userID, paymentID); err != nil {
		return PaymentHold{}, err
	}
	r, err := s.run(ctx, scriptInitiatePayment, eventID, userID, paymentID, s.nowMS())
	if err != nil {
		return PaymentHold{}, fmt.Errorf("initiate payment: %w", err)
	}
	return PaymentHold{PaymentID: r.str(1), SeatID: r.str(2), SeatIDs: SplitSeats(r.str(2)), ExpireAt: ms(r.int(3)),
		Created: r.int(4) == 1, Sequence: r.int(5), At: ms(r.int(6)), AmountCents: r.int(7), Currency: r.str(8)}, nil
}

// PaymentSuccess completes a booking: the seat is sold for good. A repeat
// is OutcomeDuplicate. A payment whose hold had already ended (released,
// failed, or its user joined again since) returns ErrLatePayment, with the
// seat and sequence of the hold it paid for, At and Duplicate in the
// result, and must be refunded; a repeat answers the same. Every payment id
// ever issued for the event is classified so, for the event's lifetime.
// Errors: ErrNotFound (unknown user), ErrPaymentMismatch (the id was not
// issued to this user).
func (s *Store) PaymentSuccess(ctx context.Context, eventID, userID, paymentID string) (PaymentResult, error) {
	if err := checkIDs(eventID, userID, paymentID); err != nil {
		return PaymentResult{}, err
	}
	r, err := s.run(ctx, scriptPaymentSuccess, eventID, userID, paymentID, s.nowMS())
	if errors.Is(err, ErrLatePayment) {
		return PaymentResult{SeatID: r.str(1), SeatIDs: SplitSeats(r.str(1)), Sequence: r.int(2), At: ms(r.int(3)),
			Duplicate: r.int(4) == 1, AmountCents: r.int(5), SeatPrices: splitPrices(r.str(6))}, ErrLatePayment
	}
	if err != nil {
		return PaymentResult{}, fmt.Errorf("payment success: %w", err)
	}
	return PaymentResult{Outcome: Outcome(r.str(1)), SeatID: r.str(2), SeatIDs: SplitSeats(r.str(2)), Sequence: r.int(3),
		At: ms(r.int(4)), SoldOutAt: ms(r.int(5)), AmountCents: r.int(6), SeatPrices: splitPrices(r.str(7))}, nil
}

// PaymentFailure releases the hold of a declined payment (OutcomeFailed),
// or does nothing for a repeat (OutcomeDuplicate) or a hold already ended
// (OutcomeNoHold: expired, cancelled, its user joined again, or its success
// was classified as a refund). Errors: ErrNotFound, ErrPaymentMismatch,
// ErrAlreadyCompleted.
func (s *Store) PaymentFailure(ctx context.Context, eventID, userID, paymentID string) (PaymentResult, error) {
	if err := checkIDs(eventID, userID, paymentID); err != nil {
		return PaymentResult{}, err
	}
	r, err := s.run(ctx, scriptPaymentFailure, eventID, userID, paymentID, s.nowMS())
	if err != nil {
		return PaymentResult{}, fmt.Errorf("payment failure: %w", err)
	}
	return PaymentResult{Outcome: Outcome(r.str(1)), SeatID: r.str(2), SeatIDs: SplitSeats(r.str(2)), Sequence: r.int(3),
		At: ms(r.int(4))}, nil
}

// HandleTimeout processes a hold's timeout: OutcomeReleased (free the slot),
// OutcomeExtended (payment pending: grace given once; schedule again for
// ExpireAt), OutcomeNotDue (deadline later: schedule again), OutcomeNoHold
// (nothing to do; AlreadyExpired asks to republish the expiry's effects).
// A release writes the expiry's outbox entry in the same step; it comes
// back in Outbox (and with AlreadyExpired while not fully announced):
// announce it and then AckOutbox.
func (s *Store) HandleTimeout(ctx context.Context, eventID, userID string) (TimeoutResult, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return TimeoutResult{}, err
	}
	r, err := s.run(ctx, scriptHandleTimeout, eventID, userID, s.nowMS())
	if err != nil {
		return TimeoutResult{}, fmt.Errorf("handle timeout: %w", err)
	}
	res := TimeoutResult{Outcome: Outcome(r.str(1)), Sequence: r.int(2), SeatID: r.str(3),
		PaymentID: r.str(4), ExpireAt: ms(r.int(5)), AlreadyExpired: r.int(6) == 1}
	if v := r.str(7); v != "" {
		if e, ok := parseOutbox(outboxField('x', res.Sequence, userID), v); ok {
			res.Outbox = []OutboxEntry{e}
		}
	}
	return res, nil
}

// Cancel takes a user out of the queue (From "queue") or the room (From
// "active", freeing their seat). The cancellation's outbox entry comes back
// in Outbox: announce it (booking_cancelled; slot-released when From is
// "active") and AckOutbox. Cancelling again is not an error: Duplicate is
// set and Outbox holds the entry if it was never announced. Errors:
// ErrCannotCancel during payment, ErrNotFound, ErrInvalidState when the
// booking finished otherwise.
func (s *Store) Cancel(ctx context.Context, eventID, userID string) (CancelResult, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return CancelResult{}, err
	}
	r, err := s.run(ctx, scriptCancel, eventID, userID, s.nowMS())
	if err != nil {
		return CancelResult{}, fmt.Errorf("cancel: %w", err)
	}
	res := CancelResult{From: r.str(1), SeatID: r.str(2), Sequence: r.int(3), Duplicate: r.int(4) == 1}
	if e, ok := parseOutbox(outboxField('c', res.Sequence, userID), r.str(5)); ok {
		res.Outbox = []OutboxEntry{e}
	}
	return res, nil
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

// Touch records that waiting users are present (connected to the notifier),
// so abandonment does not drop them: one script call for many users. Users
// not waiting are left alone; while abandonment is off it does nothing.
// Errors: ErrEventNotFound.
func (s *Store) Touch(ctx context.Context, eventID string, userIDs ...string) error {
	if len(userIDs) == 0 {
		return nil
	}
	if err := checkIDs(eventID); err != nil {
		return err
	}
	args := make([]any, 0, len(userIDs)+1)
	args = append(args, s.nowMS())
	for _, u := range userIDs {
		args = append(args, u)
	}
	if _, err := s.run(ctx, scriptTouch, eventID, args...); err != nil {
		return fmt.Errorf("touch: %w", err)
	}
	return nil
}

// OutboxReadMax bounds the entries one Outbox call returns, so that a
// sweep after a long broker outage (every join of the outage still
// unannounced) works through the backlog in bounded steps instead of
// reading millions of entries at once.
const OutboxReadMax = 10_000

// Outbox returns the event's unannounced entries written at least olderThan
// ago (0: all), at most OutboxReadMax of them, in join-sequence order (a
// joined entry before the promotion of the same sequence). A crashed
// announcer's entries are picked up by the safety net this way; announcing
// twice is harmless. It reads the hash with HSCAN, never all at once.
func (s *Store) Outbox(ctx context.Context, eventID string, olderThan time.Duration) ([]OutboxEntry, error) {
	key := s.eventKeys(eventID)[kOutbox]
	cutoff := s.now().Add(-olderThan)
	var out []OutboxEntry
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			e, ok := parseOutbox(kv[i], kv[i+1])
			if !ok || (olderThan > 0 && e.At.After(cutoff)) {
				continue
			}
			out = append(out, e)
		}
		cursor = next
		if cursor == 0 || len(out) >= OutboxReadMax {
			break
		}
	}
	// HSCAN may return a field twice
	seen := make(map[string]bool, len(out))
	uniq := out[:0]
	for _, e := range out {
		if f := e.field(); !seen[f] {
			seen[f] = true
			uniq = append(uniq, e)
		}
	}
	out = uniq
	sort.Slice(out, func(i, j int) bool {
		if out[i].Sequence != out[j].Sequence {
			return out[i].Sequence < out[j].Sequence
		}
		return kindOrder(out[i].Kind) < kindOrder(out[j].Kind)
	})
	if len(out) > OutboxReadMax {
		out = out[:OutboxReadMax]
	}
	return out, nil
}

// kindOrder orders the entries of one join sequence as they happened.
func kindOrder(kind string) int {
	switch kind {
	case "joined":
		return 0
	case "promoted":
		return 1
	}
	return 2
}

// parseOutbox decodes "p:<seq>:<user>" / "x:<seq>:<user>" →
// "seq|deadline_ms|seat|at_ms", "c:<seq>:<user>" → "seq|from|seat|at_ms" and
// "j:<seq>" → "seq|user||at_ms", each value with an optional fifth part
// "r" or "k" (the side announced already; lua/lib.lua has the table).
// Fields written before they carried the sequence ("p:<user>") still parse
// (LegacyKey).
func parseOutbox(field, val string) (OutboxEntry, bool) {
	kind, rest, ok := strings.Cut(field, ":")
	parts := strings.Split(val, "|")
	if !ok || len(parts) < 4 || len(parts) > 5 {
		return OutboxEntry{}, false
	}
	e := OutboxEntry{SeatID: parts[2]}
	if len(parts) == 5 {
		switch parts[4] {
		case "r":
			e.RabbitDone = true
		case "k":
			e.KafkaDone = true
		default:
			return OutboxEntry{}, false
		}
	}
	user := parts[1]
	if kind != "j" {
		// "<seq>:<user>": the sequence never holds ':', a user id may
		if seq, u, ok := strings.Cut(rest, ":"); ok && seq == parts[0] {
			user = u
		} else {
			user, e.LegacyKey = rest, true
		}
	}
	e.UserID = user
	e.Sequence, _ = strconv.ParseInt(parts[0], 10, 64)
	dl, _ := strconv.ParseInt(parts[1], 10, 64)
	at, _ := strconv.ParseInt(parts[3], 10, 64)
	e.At = ms(at)
	switch kind {
	case "p":
		e.Kind, e.ExpireAt = "promoted", ms(dl)
	case "x":
		e.Kind, e.ExpireAt = "expired", ms(dl) // the deadline that passed (zero in older entries)
	case "c":
		e.Kind, e.From = "cancelled", parts[1]
	case "j":
		e.Kind = "joined"
	default:
		return OutboxEntry{}, false
	}
	return e, true
}

// outboxField is the outbox field of a fact of user's join seq.
func outboxField(kind byte, seq int64, user string) string {
	return string(kind) + ":" + strconv.FormatInt(seq, 10) + ":" + user
}

func (e OutboxEntry) field() string {
	var k byte
	switch e.Kind {
	case "joined":
		return "j:" + strconv.FormatInt(e.Sequence, 10)
	case "expired":
		k = 'x'
	case "cancelled":
		k = 'c'
	default:
		k = 'p'
	}
	if e.LegacyKey {
		return string(k) + ":" + e.UserID
	}
	return outboxField(k, e.Sequence, e.UserID)
}

func (e OutboxEntry) value() string {
	dl := ""
	switch e.Kind {
	case "promoted":
		dl = strconv.FormatInt(e.ExpireAt.UnixMilli(), 10)
	case "expired":
		if !e.ExpireAt.IsZero() {
			dl = strconv.FormatInt(e.ExpireAt.UnixMilli(), 10)
		}
	case "cancelled":
		dl = e.From
	case "joined":
		dl = e.UserID
	}
	v := strconv.FormatInt(e.Sequence, 10) + "|" + dl + "|" + e.SeatID + "|" + strconv.FormatInt(e.At.UnixMilli(), 10)
	switch {
	case e.RabbitDone && !e.KafkaDone:
		v += "|r"
	case e.KafkaDone && !e.RabbitDone:
		v += "|k"
	}
	return v
}

// outboxFor returns the outbox entries a promotion (or an immediate
// admission) wrote at now, so the caller can announce and acknowledge them
// without reading the outbox back.
func outboxFor(promoted []Admission, expired []Expiry, nowMS int64) []OutboxEntry {
	at := ms(nowMS)
	var out []OutboxEntry
	for _, a := range promoted {
		out = append(out, OutboxEntry{Kind: "promoted", UserID: a.UserID, Sequence: a.Sequence, ExpireAt: a.ExpireAt, At: at})
	}
	for _, x := range expired {
		out = append(out, OutboxEntry{Kind: "expired", UserID: x.UserID, Sequence: x.Sequence, SeatID: x.SeatID, ExpireAt: x.At, At: at})
	}
	return out
}

// AckOutbox removes announced entries, each only if unchanged since read.
func (s *Store) AckOutbox(ctx context.Context, eventID string, entries ...OutboxEntry) error {
	return s.settleOutbox(ctx, eventID, entries, func(OutboxEntry) string { return "" })
}

// MarkOutbox records that one side of each entry was announced: the
// RabbitMQ side (rabbit true) or the Kafka side. Each entry is rewritten
// only if unchanged since read; an entry whose other side was done already
// is removed. A later sweep then redoes only the side still missing.
func (s *Store) MarkOutbox(ctx context.Context, eventID string, rabbit bool, entries ...OutboxEntry) error {
	return s.settleOutbox(ctx, eventID, entries, func(e OutboxEntry) string {
		if rabbit {
			e.RabbitDone = true
		} else {
			e.KafkaDone = true
		}
		if e.RabbitDone && e.KafkaDone {
			return ""
		}
		return e.value()
	})
}

func (s *Store) settleOutbox(ctx context.Context, eventID string, entries []OutboxEntry, next func(OutboxEntry) string) error {
	if len(entries) == 0 {
		return nil
	}
	args := make([]any, 0, 3*len(entries))
	for _, e := range entries {
		args = append(args, e.field(), e.value(), next(e))
	}
	if _, err := s.run(ctx, scriptAckOutbox, eventID, args...); err != nil {
		return fmt.Errorf("ack outbox: %w", err)
	}
	return nil
}
