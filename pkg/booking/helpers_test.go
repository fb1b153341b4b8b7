package booking

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/redis/go-redis/v9"
)

// clock is a controllable time source shared by a test and its Store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_800_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is a Store on the real Redis under the test's own key prefix.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	rdb   redis.UniversalClient
	clock *clock
	s     *Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rdb := redistest.Client(t)
	return newFixtureOn(t, rdb)
}

func newFixtureOn(t *testing.T, rdb redis.UniversalClient) *fixture {
	c := newClock()
	prefix := strings.TrimSuffix(redistest.Prefix(t), ":")
	s := New(rdb, WithPrefix(prefix), WithClock(c.Now))
	t.Cleanup(s.Close)
	return &fixture{t: t, ctx: context.Background(), rdb: rdb, clock: c, s: s}
}

// event creates an event; fields of cfg override small test defaults.
func (f *fixture) event(cfg EventConfig) Event {
	f.t.Helper()
	if cfg.ID == "" {
		cfg.ID = "evt"
	}
	if len(cfg.Seats) == 0 && cfg.Rows == 0 && len(cfg.Sections) == 0 {
		cfg.Rows, cfg.SeatsPerRow = 2, 5
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = 2
	}
	e, err := f.s.CreateEvent(f.ctx, cfg)
	if err != nil {
		f.t.Fatalf("create event: %v", err)
	}
	return e
}

func (f *fixture) join(event, user string) JoinResult {
	f.t.Helper()
	r, err := f.s.Enqueue(f.ctx, event, user)
	if err != nil {
		f.t.Fatalf("enqueue %s: %v", user, err)
	}
	return r
}

func (f *fixture) state(event, user string) State {
	f.t.Helper()
	st, err := f.s.Position(f.ctx, event, user)
	if err != nil {
		f.t.Fatalf("position %s: %v", user, err)
	}
	return st.State
}

func (f *fixture) counts(event string) Counts {
	f.t.Helper()
	c, err := f.s.Counts(f.ctx, event)
	if err != nil {
		f.t.Fatalf("counts: %v", err)
	}
	return c
}

// seatStatus returns a map seat → status.
func (f *fixture) seats(event string) map[string]SeatStatus {
	f.t.Helper()
	all, err := f.s.Seats(f.ctx, event)
	if err != nil {
		f.t.Fatalf("seats: %v", err)
	}
	m := make(map[string]SeatStatus, len(all))
	for _, s := range all {
		m[s.ID] = s.Status
	}
	return m
}

// buy takes an admitted user through seat, payment and success.
func (f *fixture) buy(event, user, seat string) {
	f.t.Helper()
	if _, err := f.s.LockSeat(f.ctx, event, user, seat); err != nil {
		f.t.Fatalf("lock %s for %s: %v", seat, user, err)
	}
	pid := "pay-" + user
	if _, err := f.s.InitiatePayment(f.ctx, event, user, pid); err != nil {
		f.t.Fatalf("initiate %s: %v", user, err)
	}
	if r, err := f.s.PaymentSuccess(f.ctx, event, user, pid); err != nil || r.Outcome != OutcomeCompleted {
		f.t.Fatalf("success %s: %+v %v", user, r, err)
	}
}

// checkInvariants verifies what must hold after any interleaving: counters
// match the seat map, every held or sold seat belongs to a user whose state
// agrees, no user has two seats, and the live room is within capacity.
func (f *fixture) checkInvariants(event string) {
	f.t.Helper()
	k := keysFor(f.s.prefix, event)
	seats, err := f.rdb.HGetAll(f.ctx, k[kSeats]).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	states, _ := f.rdb.HGetAll(f.ctx, k[kState]).Result()
	useat, _ := f.rdb.HGetAll(f.ctx, k[kUseat]).Result()
	var held, sold, reserved, killed, allocated int64
	kind := map[string]string{} // user → "h:" or "s:": one hold or one order
	for seat, v := range seats {
		if v == "" {
			continue
		}
		switch v[:2] { // operators' marks name no user
		case "r:":
			reserved++
			continue
		case "k:":
			killed++
			continue
		case "c:":
			allocated++
			continue
		}
		user := v[2:]
		if prev, ok := kind[user]; ok && prev != v[:2] {
			f.t.Errorf("user %s both holds and bought seats (%s)", user, seat)
		}
		kind[user] = v[:2]
		switch v[:2] {
		case "h:":
			held++
			if st := State(states[user]); st != StateSeatSelected && st != StatePaymentPending {
				f.t.Errorf("seat %s held by %s in state %s", seat, user, st)
			}
		case "s:":
			sold++
			if st := State(states[user]); st != StateCompleted {
				f.t.Errorf("seat %s sold to %s in state %s", seat, user, st)
			}
		}
		if !slices.Contains(SplitSeats(useat[user]), seat) {
			f.t.Errorf("seat %s owned by %s whose seats are %q", seat, user, useat[user])
		}
	}
	// a selection is all held or none: every seat of a user in
	// seat_selected or payment_pending is held by them, every seat of a
	// completed order sold to them
	for user, st := range states {
		want := map[State]string{StateSeatSelected: "h:", StatePaymentPending: "h:", StateCompleted: "s:"}[State(st)]
		if want == "" {
			continue
		}
		for _, seat := range SplitSeats(useat[user]) {
			if seats[seat] != want+user {
				f.t.Errorf("user %s (%s) has seat %s whose value is %q", user, st, seat, seats[seat])
			}
		}
	}
	f.checkSeatStatus(event, seats)
	f.checkRuns(event)
	c := f.counts(event)
	if c.Held != held || c.Sold != sold {
		f.t.Errorf("counters held=%d sold=%d, seat map held=%d sold=%d", c.Held, c.Sold, held, sold)
	}
	if c.Reserved != reserved || c.Killed != killed {
		f.t.Errorf("counters reserved=%d killed=%d, seat map reserved=%d killed=%d", c.Reserved, c.Killed, reserved, killed)
	}
	if c.Allocated != allocated {
		f.t.Errorf("counter allocated=%d, seat map allocated=%d", c.Allocated, allocated)
	}
	if c.Available != c.Total-held-sold-reserved-killed-allocated || c.Available < 0 {
		f.t.Errorf("available %d of %d with %d held %d sold %d reserved %d killed", c.Available, c.Total, held, sold,
			reserved, killed)
	}
	ev, _ := f.s.GetEvent(f.ctx, event)
	// deadlines are on the hold clock (lua/lib/holds.lua hold_clock)
	pause := f.rdb.HMGet(f.ctx, k[kConfig], "hold_pause_ms", "hold_paused_at").Val()
	num := func(v any) int64 { s, _ := v.(string); n, _ := strconv.ParseInt(s, 10, 64); return n }
	hnow := f.clock.Now().UnixMilli() - num(pause[0])
	if since := num(pause[1]); since > 0 {
		hnow = since - num(pause[0])
	}
	live, _ := f.rdb.ZCount(f.ctx, k[kActive], fmt.Sprintf("(%d", hnow), "+inf").Result()
	// The room is sized in users, bounded at admission by the seats left;
	// with orders of several seats a sale may leave fewer seats
	// than users inside, so only the configured capacity bounds it.
	limit := int64(ev.Capacity)
	if ev.OfferSeconds > 0 {
		// waitlist offers hold returned seats outside the room's capacity
		// (waitlist.go): one hold per offer, each at least one seat
		limit += held
	}
	if live > limit {
		f.t.Errorf("%d live holds in a room of %d", live, limit)
	}
	// everyone in the room is in a room state, and vice versa
	active, _ := f.rdb.ZRange(f.ctx, k[kActive], 0, -1).Result()
	inRoom := map[string]bool{}
	for _, u := range active {
		inRoom[u] = true
		if !State(states[u]).InRoom() {
			f.t.Errorf("user %s in room with state %s", u, states[u])
		}
	}
	// a waiting user is only a member of waiting: no state field, and a
	// useq field only when pre-queued or drawn by a later phase's draw
	// (its score is a draw key or a place, not its sequence: above
	// pq_lo, the lowest base of such a draw)
	waiting, _ := f.rdb.ZRangeWithScores(f.ctx, k[kWaiting], 0, -1).Result()
	useq, _ := f.rdb.HGetAll(f.ctx, k[kUseq]).Result()
	pqLo, err := f.rdb.HGet(f.ctx, k[kConfig], "pq_lo").Float64()
	if err != nil {
		pqLo = math.Inf(1)
	}
	for _, z := range waiting {
		u := z.Member.(string)
		if st, ok := states[u]; ok {
			f.t.Errorf("user %s waiting with the state field %q", u, st)
		}
		if _, ok := useq[u]; ok != (z.Score < 1) && (!ok || z.Score <= pqLo) {
			f.t.Errorf("user %s waiting with score %v: useq field %q", u, z.Score, useq[u])
		}
	}
	// a later phase's pre-queued user: in its open or closed list, not
	// waiting, with its sequence
	for u, st := range states {
		if st != "prequeued" {
			continue
		}
		open, _ := f.rdb.ZScore(f.ctx, k[kPq], u).Result()
		closed, _ := f.rdb.ZScore(f.ctx, k[kPqdraw], u).Result()
		if open == 0 && closed == 0 {
			f.t.Errorf("user %s prequeued in no pre-queue", u)
		}
	}
	for u, st := range states {
		if State(st).InRoom() && !inRoom[u] {
			f.t.Errorf("user %s in state %s but not in the room", u, st)
		}
		if State(st) == StateWaiting {
			f.t.Errorf("user %s has the state field waiting", u)
		}
		if _, ok := useq[u]; !ok {
			f.t.Errorf("user %s in state %s without a sequence", u, st)
		}
	}
}

// checkSeatStatus verifies that the status string (the seat map's read
// model) mirrors the authoritative seats hash byte for byte.
func (f *fixture) checkSeatStatus(event string, seats map[string]string) {
	f.t.Helper()
	k := keysFor(f.s.prefix, event)
	ids, _ := f.rdb.LRange(f.ctx, k[kSeatmap], 0, -1).Result()
	status, err := f.rdb.Get(f.ctx, k[kStatus]).Result()
	if err != nil {
		f.t.Fatalf("status string: %v", err)
	}
	if len(status) != len(ids) {
		f.t.Fatalf("status string has %d bytes for %d seats", len(status), len(ids))
	}
	for i, id := range ids {
		want := SeatCodeAvailable
		if v := seats[id]; len(v) >= 2 {
			want = map[string]byte{"h:": SeatCodeHeld, "s:": SeatCodeSold, "r:": SeatCodeReserved, "k:": SeatCodeKilled,
				"c:": SeatCodeAllocated}[v[:2]]
		}
		if status[i] != want {
			f.t.Errorf("seat %s: status byte %q, seats hash %q", id, status[i], seats[id])
		}
	}
}
