package admission_test

// Model-based test of the booking engine: a seeded random
// sequence of operations runs against the real scripts on the real Redis,
// and a small Go reference model of lua/*.lua predicts every reply and the
// whole state after every step. Each step is taken by one of three stores
// whose process clocks are right, 30 s ahead and 30 s behind (the scripts
// read Redis's clock, the model's). Operators hold, kill, release and
// allocate seats to channels (a partner, wheelchair, companion; with a
// release time or none) and end allocations, at once or when due; fans
// select, by hand and best available, through no channel, a channel's
// token, the sale's phase or asking for accessibility seats. Besides agreeing with the model (seats, counters,
// each seat's channel, release times, the seats' accessibility kinds),
// every step checks the properties directly:
//
//   - a seat is sold at most once;
//   - every payment id whose success webhook arrived is classified once,
//     as exactly one completed order or exactly one refund, and stays so;
//   - an admission never fills the room past its capacity (live holds plus
//     overdue holds that will get their grace);
//   - admission follows join order (abandoned users aside);
//   - every outbox fact is announced exactly once per id: one Kafka event
//     and one copy of each RabbitMQ message, through Kafka and RabbitMQ
//     outages (checked whenever an event is retired, and at the end).
//
// Every other event starts rebuilt from the ledger (Store.RestoreEvent)
// with its join sequences above 10^15 (now_ms × 1000, as pkg/ledger picks
// them), where Lua writes a number joined with .. in exponent form: every
// sequence the engine stores (the outbox, useq, the payment registry, the
// served counter of the progress document) and every fact must carry it
// whole, which the state check and the retirement's fact check compare
// with the model's.
//
// The publishers are in memory (the Announcer's Kafka and RabbitMQ sides
// fail on demand); the integration tests beside this file cover the real
// brokers. A failure logs its seed; replay it with BOXOFFICE_TEST_SEED=<seed>
// (pkg/testseed); run longer with
// BOOKING_MODEL_STEPS=<n> (default 10,000).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/testseed"
)

const (
	modelSeats    = 6
	modelHold     = 60 * time.Second
	modelGrace    = 20 * time.Second
	modelAbandon  = 45 * time.Second
	modelUsers    = 5
	modelMaxCap   = 3
	modelEventMax = 400 // steps before an event is retired and a new one starts
)

// memPub is an in-memory RabbitMQ publisher counting message ids.
type memPub struct {
	mu   sync.Mutex
	sent map[string]int
	down bool
}

func (p *memPub) record(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return errors.New("rabbitmq down")
	}
	p.sent[id]++
	return nil
}

func (p *memPub) Publish(_ context.Context, _, _ string, msg amqpx.Message) error {
	return p.record(msg.ID)
}

func (p *memPub) PublishDelayed(_ context.Context, _, _ string, msg amqpx.Message, _ time.Duration) error {
	return p.record(msg.ID)
}

// mUser is the model of one user's booking (the state, useq, useat, upay,
// ugrace and seen keys, and the user's entry in active).
type mUser struct {
	state    booking.State // "" never joined
	seq      int64
	seat     string
	pid      string
	deadline int64 // ms, while in the room
	graced   bool
	seen     int64 // presence entry (ms), 0 none
	pids     []string
}

type mPay struct {
	user   string
	seq    int64
	seat   string
	status string // pending, completed, failed, refund
}

type model struct {
	now                                             int64
	capacity, total, sold, held                     int
	holdMS, graceMS, abandonMS, abandonSince, seqNo int64
	served                                          int64 // the highest sequence admitted (the base after a rebuild)
	paused                                          bool
	salesEnd                                        int64 // ms, 0 none
	holdsEnd                                        bool  // finish_after_end off: holds end with the sale
	users                                           map[string]*mUser
	seats                                           map[string]string
	pays                                            map[string]*mPay
	facts                                           map[string]int      // "type|user|seq" announced facts expected
	graceFull                                       int                 // joins refused only for overdue holds in grace
	early                                           bool                // waitlist_early: the waitlist opens before the sell-out
	offerMS                                         int64               // the waitlist's offer time, 0 no waitlist
	wl                                              map[string][2]int64 // waitlisted user -> {sequence, seats wanted}
	offers                                          map[string]int64    // user -> the open offer's sequence
	offerLog                                        []int64             // sequences offered, in order (waitlist order)
	// allocations (mark_seats.lua): seat -> channel (alloc, also while a
	// fan of the channel holds or bought it), channel -> release time
	// (config ra:<channel>), seat -> wheelchair | companion (alloc ' a:'),
	// and the seats allocated, not taken (config allocated)
	alloc     map[string]string
	releaseAt map[string]int64
	kinds     map[string]string
	allocated int
	phase     string              // the current phase (set_phase.lua), a channel of every request
	rows      map[string]bool     // channels whose allocation has rows (alloc ' r:<channel>'; one row here)
	lastEnd   map[string][]string // channel -> the seats its last end put on sale (alloc ' e:<channel>')
	sch       *mSchedule          // scheduled phases (model_phases_test.go), nil none
	joinCode  string              // the code digest of the join being run ("" none)
}

func newModel(now int64, capacity int) *model {
	m := &model{now: now, capacity: capacity, total: modelSeats, holdMS: modelHold.Milliseconds(),
		graceMS: modelGrace.Milliseconds(), users: map[string]*mUser{}, seats: map[string]string{},
		pays: map[string]*mPay{}, facts: map[string]int{}, wl: map[string][2]int64{}, offers: map[string]int64{},
		alloc: map[string]string{}, releaseAt: map[string]int64{}, kinds: map[string]string{}, rows: map[string]bool{}, lastEnd: map[string][]string{}}
	for _, s := range booking.SeatIDs(1, modelSeats) {
		m.seats[s] = ""
	}
	return m
}

func (m *model) user(u string) *mUser {
	if m.users[u] == nil {
		m.users[u] = &mUser{}
	}
	return m.users[u]
}

func (m *model) fact(typ, user string, seq int64) {
	m.facts[typ+"|"+user+"|"+strconv.FormatInt(seq, 10)]++
}

func (m *model) roomCap() int { return min(m.capacity, m.total-m.sold) }

// ended mirrors lua/lib/room.lua sales_ended.
func (m *model) ended() bool { return m.salesEnd > 0 && m.now > m.salesEnd }

// holdOpen mirrors lua/lib/room.lua hold_open_after_end.
func (m *model) holdOpen() bool { return !m.holdsEnd || !m.ended() }

// sorted returns the users matching keep, ordered by less.
func (m *model) sorted(keep func(*mUser) bool, less func(a, b string) bool) []string {
	var out []string
	for name, u := range m.users {
		if keep(u) {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func (m *model) waiting() []string {
	return m.sorted(func(u *mUser) bool { return u.state == booking.StateWaiting },
		func(a, b string) bool { return m.users[a].seq < m.users[b].seq })
}

func (m *model) active() []string {
	return m.sorted(func(u *mUser) bool { return u.state.InRoom() }, func(a, b string) bool {
		ua, ub := m.users[a], m.users[b]
		if ua.deadline != ub.deadline {
			return ua.deadline < ub.deadline
		}
		return a < b
	})
}

// graceDeadline mirrors lua/lib/holds.lua grace_deadline.
func (m *model) graceDeadline(u *mUser) (int64, bool) {
	if m.graceMS > 0 && u.deadline+m.graceMS > m.now && u.state == booking.StatePaymentPending && !u.graced {
		return u.deadline + m.graceMS, true
	}
	return 0, false
}

// live is the number of holds whose deadline has not passed.
func (m *model) live() int {
	n := 0
	for _, name := range m.active() {
		if m.users[name].deadline > m.now {
			n++
		}
	}
	return n
}

// counted is what an admission counts against the room (lua/lib/holds.lua holds_counted).
func (m *model) counted() int {
	n := 0
	for _, name := range m.active() {
		u := m.users[name]
		if u.deadline > m.now {
			n++
		} else if _, ok := m.graceDeadline(u); ok {
			n++
		}
	}
	return n
}

func (m *model) admit(name string) {
	u := m.users[name]
	u.state, u.deadline = booking.StateActive, m.now+m.holdMS
	m.served = max(m.served, u.seq)
	m.fact(events.TopicUserPromoted, name, u.seq)
}

// freeSeat mirrors lua/lib/seats.lua free_seat: a seat a fan gives back
// returns to the channel it is allocated to, else on sale (true).
func (m *model) freeSeat(id string) bool {
	if ch, ok := m.alloc[id]; ok {
		m.seats[id] = "c:" + ch
		m.allocated++
		return false
	}
	m.seats[id] = ""
	return true
}

func (m *model) release(name string, final booking.State) string {
	u := m.users[name]
	seat := u.seat // every seat of the hold, joined by ','
	for _, id := range booking.SplitSeats(seat) {
		if m.seats[id] == "h:"+name {
			m.freeSeat(id)
			m.held--
		}
	}
	u.deadline, u.graced, u.state = 0, false, final
	return seat
}

// expireDue mirrors lua/lib/holds.lua expire_due; it reports whether it released.
func (m *model) expireDue(name string) bool {
	u := m.users[name]
	if d, ok := m.graceDeadline(u); ok {
		u.deadline, u.graced = d, true
		return false
	}
	seats := m.release(name, booking.StateExpired)
	delete(m.offers, name)
	m.waitlistOffer(booking.SplitSeats(seats))
	return true
}

// waitlistOffer mirrors lua/lib/waitlist.lua waitlist_offer: the free
// seats of freed go to the waitlist's head, in order.
func (m *model) waitlistOffer(freed []string) int {
	if len(freed) == 0 || len(m.wl) == 0 || m.offerMS <= 0 || m.ended() {
		return 0
	}
	var free []string
	for _, id := range freed {
		if v, ok := m.seats[id]; ok && v == "" {
			free = append(free, id)
		}
	}
	made := 0
	for i := 0; i < len(free); {
		head := ""
		for n, w := range m.wl {
			if head == "" || w[0] < m.wl[head][0] {
				head = n
			}
		}
		if head == "" {
			break
		}
		w := m.wl[head]
		delete(m.wl, head)
		u := m.user(head)
		switch u.state {
		case booking.StateWaiting, booking.StateActive, booking.StateSeatSelected, booking.StatePaymentPending, booking.StateCompleted:
			continue
		}
		var ids []string
		for i < len(free) && int64(len(ids)) < max(1, w[1]) {
			m.seats[free[i]] = "h:" + head
			m.held++
			ids = append(ids, free[i])
			i++
		}
		u.state, u.seq, u.seat, u.pid, u.graced = booking.StateSeatSelected, w[0], strings.Join(ids, ","), "", false
		u.deadline = m.now + m.offerMS
		m.offers[head] = w[0]
		m.offerLog = append(m.offerLog, w[0])
		made++
	}
	return made
}

func (m *model) available() int {
	n := 0
	for _, v := range m.seats {
		if v == "" {
			n++
		}
	}
	return n
}

// joinWaitlist mirrors join_waitlist.lua: state, sequence, created, err.
func (m *model) joinWaitlist(name string, want int) (string, int64, bool, error) {
	u := m.user(name)
	if s, ok := m.offers[name]; ok {
		return booking.Offered, s, false, nil
	}
	if w, ok := m.wl[name]; ok {
		return booking.Waitlisted, w[0], false, nil
	}
	switch {
	case m.offerMS <= 0:
		return "", 0, false, booking.ErrWaitlistDisabled
	case want < 1 || want > booking.DefaultMaxSeatsPerOrder:
		return "", 0, false, booking.ErrInvalidArgument
	case m.ended():
		return "", 0, false, booking.ErrSalesEnded
	case u.state == booking.StateCompleted:
		return "", 0, false, booking.ErrAlreadyCompleted
	case u.state == booking.StateWaiting || u.state.InRoom():
		return "", 0, false, booking.ErrInvalidState
	case m.available() > 0 && !m.early:
		return "", 0, false, booking.ErrNotSoldOut
	}
	m.seqNo++
	m.wl[name] = [2]int64{m.seqNo, int64(want)}
	return booking.Waitlisted, m.seqNo, true, nil
}

// answerOpen mirrors answer_offer.lua for an open offer (ok: there is one).
func (m *model) answerOpen(name string, seq int64, accept bool) (out string, ok bool, err error) {
	if s, open := m.offers[name]; !open || s != seq {
		return "", false, nil
	}
	u := m.users[name]
	if u.deadline <= m.now {
		return "", true, booking.ErrOfferExpired
	}
	delete(m.offers, name)
	if accept {
		return booking.OfferAccepted, true, nil
	}
	seats := m.release(name, booking.StateCancelled)
	m.waitlistOffer(booking.SplitSeats(seats))
	return booking.OfferDeclined, true, nil
}

// mirror of enqueue.lua: state, created, err
func (m *model) join(name string) (booking.State, bool, error) {
	u := m.user(name)
	switch u.state {
	case booking.StateWaiting:
		if m.abandonMS > 0 {
			u.seen = m.now
		}
		return u.state, false, nil
	case booking.StateActive, booking.StateSeatSelected, booking.StatePaymentPending, booking.StateCompleted:
		return u.state, false, nil
	}
	if m.ended() {
		return "", false, booking.ErrSalesEnded
	}
	if m.sold >= m.total {
		return "", false, booking.ErrSoldOut
	}
	if err := m.phaseGate(name, m.joinCode); err != nil {
		return "", false, err
	}
	m.seqNo++
	u.seq = m.seqNo
	m.fact(events.TopicBookingRequest, name, u.seq)
	if u.state != "" {
		u.seat, u.pid, u.graced = "", "", false
	}
	if !m.paused && len(m.waiting()) == 0 {
		room := m.roomCap()
		admit := len(m.active()) < room
		if !admit && room > 0 {
			admit = m.counted() < room
			if !admit && m.live() < room {
				m.graceFull++ // the case ordering 6 is about
			}
		}
		if admit {
			m.admit(name)
			return booking.StateActive, true, nil
		}
	}
	u.state = booking.StateWaiting
	if m.abandonMS > 0 {
		u.seen = m.now
	}
	return booking.StateWaiting, true, nil
}

// mirror of promote.lua (max = batch, never reached here)
func (m *model) promote() (promoted, expired, abandoned []string, reason string) {
	for _, name := range m.active() {
		// the fact names the hold that ended: the freed seats may go
		// to the same fan's waitlist place, another sequence
		seq := m.users[name].seq
		if m.users[name].deadline <= m.now && m.expireDue(name) {
			expired = append(expired, name)
			m.fact(events.TopicBookingExpired, name, seq)
		}
	}
	if m.sold >= m.total {
		return promoted, expired, abandoned, "sold_out"
	}
	if m.ended() {
		return promoted, expired, abandoned, "sales_ended"
	}
	if m.paused {
		return promoted, expired, abandoned, "paused"
	}
	free := m.roomCap() - len(m.active())
	if free <= 0 {
		return promoted, expired, abandoned, "room_full"
	}
	for _, name := range m.waiting() {
		if len(promoted) == free {
			break
		}
		u := m.users[name]
		absent := false
		if m.abandonMS > 0 {
			absent = max(u.seen, m.abandonSince) < m.now-m.abandonMS
			u.seen = 0
		}
		if absent {
			u.state = booking.StateAbandoned
			m.fact(events.TopicBookingCancelled, name, u.seq)
			abandoned = append(abandoned, name)
			continue
		}
		m.admit(name)
		promoted = append(promoted, name)
	}
	return promoted, expired, abandoned, ""
}

// lockSeat mirrors lock_seat.lua: every seat or none; a new
// selection replaces the one held. channels: the request's (the token's
// claim; both accessibility channels for a fan who asks for them): a
// seat allocated to another channel is not for sale unless its
// allocation is due.
func (m *model) lockSeat(name string, want []string, channels map[string]bool) error {
	u := m.user(name)
	switch {
	case u.state == "":
		return booking.ErrNotFound
	case u.state != booking.StateActive && u.state != booking.StateSeatSelected:
		return booking.ErrInvalidState
	case u.deadline <= m.now:
		return booking.ErrHoldExpired
	case !m.holdOpen():
		return booking.ErrSalesEnded
	case len(want) > booking.DefaultMaxSeatsPerOrder:
		return booking.ErrTooManySeats
	}
	taken, kept := false, false
	for _, seat := range want {
		v, ok := m.seats[seat]
		if !ok {
			return booking.ErrSeatUnknown
		}
		switch {
		case strings.HasPrefix(v, "c:"):
			at, set := m.releaseAt[v[2:]]
			if !channels[v[2:]] && !(set && at <= m.now) {
				kept = true
			}
		case strings.HasPrefix(v, "r:") || strings.HasPrefix(v, "k:"):
			kept = true
		case v != "" && v != "h:"+name:
			taken = true
		}
	}
	if kept {
		return booking.ErrSeatNotForSale
	}
	if taken {
		return booking.ErrSeatUnavailable
	}
	var freed []string
	for _, prev := range booking.SplitSeats(u.seat) {
		if !slices.Contains(want, prev) && m.seats[prev] == "h:"+name {
			if m.freeSeat(prev) {
				freed = append(freed, prev)
			}
			m.held--
		}
	}
	defer func() { delete(m.offers, name); m.waitlistOffer(freed) }()
	for _, seat := range want {
		v := m.seats[seat]
		if v == "" || strings.HasPrefix(v, "c:") {
			if v != "" {
				m.allocated--
				if !channels[v[2:]] { // a due allocation's seat is on general sale
					delete(m.alloc, seat)
				}
			}
			m.seats[seat] = "h:" + name
			m.held++
		}
	}
	u.seat, u.state = strings.Join(want, ","), booking.StateSeatSelected
	return nil
}

// mark is an operator's hold ("r:<purpose>"), kill ("k:"), release
// ("") or allocation to the channel purpose ("c:<channel>", with the
// channel's release time at, 0 unchanged): all the seats or none; a seat
// a fan holds or bought refuses the whole call. It returns the seats
// that changed.
func (m *model) mark(action booking.SeatMark, purpose string, at int64, seats []string) ([]string, error) {
	target := map[booking.SeatMark]string{booking.MarkHold: "r:" + purpose, booking.MarkKill: "k:", booking.MarkRelease: "",
		booking.MarkAllocate: "c:" + purpose}[action]
	var todo []string
	refused := false
	for _, id := range seats {
		v, ok := m.seats[id]
		if !ok {
			return nil, booking.ErrSeatUnknown
		}
		if strings.HasPrefix(v, "h:") || strings.HasPrefix(v, "s:") {
			refused = true
		} else if v != target && !slices.Contains(todo, id) {
			todo = append(todo, id)
		}
	}
	if refused {
		return nil, booking.ErrSeatUnavailable
	}
	allocate := action == booking.MarkAllocate
	if allocate && (purpose == booking.ChannelWheelchair || purpose == booking.ChannelCompanion) {
		for _, id := range seats {
			m.kinds[id] = purpose // the seat's kind, for good
		}
	}
	for _, id := range todo {
		if strings.HasPrefix(m.seats[id], "c:") {
			m.allocated--
			delete(m.alloc, id)
		}
		m.seats[id] = target
		if allocate {
			m.allocated++
			m.alloc[id] = purpose
		}
	}
	if allocate && at > 0 {
		m.releaseAt[purpose] = at
	}
	if allocate {
		delete(m.lastEnd, purpose)
	}
	if allocate && len(todo) > 0 {
		m.rows[purpose] = true
	}
	if action == booking.MarkRelease {
		m.waitlistOffer(todo)
	}
	return todo, nil
}

// pickInRow mirrors lib/select.lua pick_in_row on a row's status bytes
// ('a' free): the first seat's offset of the c adjacent free seats
// nearest the row's centre (clean: leaving no single free seat beside
// them); -1 when none.
func pickInRow(row string, c int, clean bool) int {
	best, bestd := -1, -1
	for a := 0; a < len(row); {
		if row[a] != 'a' {
			a++
			continue
		}
		b := a
		for b+1 < len(row) && row[b+1] == 'a' {
			b++
		}
		if n := b - a + 1; n >= c && (!clean || n == c || n >= c+2) {
			for o := a; o <= b-c+1; o++ {
				left, right := o-a, b-o-c+1
				if !clean || (left != 1 && right != 1) {
					d := 2*o + c - 1 - (len(row) - 1)
					if d < 0 {
						d = -d
					}
					if bestd < 0 || d < bestd {
						best, bestd = o, d
					}
				}
			}
		}
		a = b + 1
	}
	return best
}

// selectBest mirrors select_best.lua in the model's one row: the seats
// of the request's channels (with free ones) first, clean then any, then
// general sale, clean then any; held as lockSeat holds them. It returns
// the seats and whether they leave a single free seat.
func (m *model) selectBest(name string, count int, channels map[string]bool) ([]string, bool, error) {
	u := m.user(name)
	switch {
	case u.state == "":
		return nil, false, booking.ErrNotFound
	case u.state != booking.StateActive && u.state != booking.StateSeatSelected:
		return nil, false, booking.ErrInvalidState
	case u.deadline <= m.now:
		return nil, false, booking.ErrHoldExpired
	case !m.holdOpen():
		return nil, false, booking.ErrSalesEnded
	case count > booking.DefaultMaxSeatsPerOrder:
		return nil, false, booking.ErrTooManySeats
	}
	ids := booking.SeatIDs(1, modelSeats)
	general, mine := make([]byte, len(ids)), make([]byte, len(ids))
	hasRows, hasC := false, false
	for ch := range channels {
		hasRows = hasRows || (channels[ch] && m.rows[ch])
	}
	for i, id := range ids {
		v := m.seats[id]
		general[i], mine[i] = 'x', 'x'
		switch {
		case v == "":
			general[i], mine[i] = 'a', 'a'
		case strings.HasPrefix(v, "c:"):
			hasC = true
			if channels[v[2:]] {
				mine[i] = 'a'
			}
		}
	}
	pos, orphaned := -1, false
	if hasRows && hasC {
		if pos = pickInRow(string(mine), count, true); pos < 0 {
			pos, orphaned = pickInRow(string(mine), count, false), true
		}
	}
	if pos < 0 || orphaned {
		p2, o2 := pickInRow(string(general), count, true), false
		if p2 < 0 {
			p2, o2 = pickInRow(string(general), count, false), true
		}
		if p2 >= 0 && (pos < 0 || !o2) {
			pos, orphaned = p2, o2
		}
	}
	if pos < 0 { // the most adjacent seats below count still free together, and the seats on sale
		left := &booking.NoAdjacentSeatsError{Available: strings.Count(string(general), "a")}
		for _, run := range strings.FieldsFunc(string(general), func(c rune) bool { return c != 'a' }) {
			left.Largest = max(left.Largest, min(len(run), count-1))
		}
		return nil, false, left
	}
	want := ids[pos : pos+count]
	if err := m.lockSeat(name, want, channels); err != nil {
		panic(fmt.Sprintf("best available picked seats it may not hold: %v %v", want, err))
	}
	return want, orphaned, nil
}

// endAllocation mirrors mark_seats.lua end_allocation up to its offer to
// the waitlist: the channel's unsold seats go on sale, the others lose
// their channel; due, only once its release time has passed (else
// ErrAllocationNotDue and the time, 0 for none). It returns the seats
// put on sale, sorted (the caller offers them in the engine's order).
func (m *model) endAllocation(ch string, due bool) (booking.AllocationEnd, int64, error) {
	at, owned := m.releaseAt[ch], false
	for _, owner := range m.alloc {
		owned = owned || owner == ch
	}
	if at <= 0 && !m.rows[ch] && !owned {
		// nothing to end: a repeat answers the last end's seats
		return booking.AllocationEnd{Repeat: true, Before: m.lastEnd[ch]}, 0, nil
	}
	if due && (at <= 0 || at > m.now) {
		return booking.AllocationEnd{}, at, booking.ErrAllocationNotDue
	}
	var released []string
	for id, owner := range m.alloc {
		if owner != ch {
			continue
		}
		delete(m.alloc, id)
		if m.seats[id] == "c:"+ch {
			m.seats[id] = ""
			m.allocated--
			released = append(released, id)
		}
	}
	delete(m.releaseAt, ch)
	delete(m.rows, ch)
	slices.Sort(released)
	m.lastEnd[ch] = released
	return booking.AllocationEnd{Released: released}, 0, nil
}

// accessible mirrors booking.Store.AccessibleSeats: the seats of a kind,
// but for one allocated to another channel.
func (m *model) accessible() map[string]string {
	out := map[string]string{}
	for id, kind := range m.kinds {
		if ch, ok := m.alloc[id]; !ok || ch == kind {
			out[id] = kind
		}
	}
	return out
}

func (m *model) initiate(name, pid string) (string, error) {
	u := m.user(name)
	switch {
	case u.state == "":
		return "", booking.ErrNotFound
	case u.state == booking.StatePaymentPending:
		return u.pid, nil
	case u.state != booking.StateSeatSelected:
		return "", booking.ErrInvalidState
	case u.deadline <= m.now:
		return "", booking.ErrHoldExpired
	case !m.holdOpen():
		return "", booking.ErrSalesEnded
	case m.pays[pid] != nil:
		return "", booking.ErrInvalidArgument
	}
	u.pid, u.state = pid, booking.StatePaymentPending
	delete(m.offers, name)
	u.pids = append(u.pids, pid)
	m.pays[pid] = &mPay{user: name, seq: u.seq, seat: u.seat, status: "pending"}
	return pid, nil
}

func (m *model) record(name, pid string) (*mPay, error) {
	p := m.pays[pid]
	if p == nil {
		if m.user(name).state == "" {
			return nil, booking.ErrNotFound
		}
		return nil, booking.ErrPaymentMismatch
	}
	if p.user != name {
		return nil, booking.ErrPaymentMismatch
	}
	return p, nil
}

// success mirrors payment_success.lua: outcome completed/duplicate, or
// ErrLatePayment (dup says a repeat of a refund).
func (m *model) success(name, pid string) (out booking.Outcome, dup bool, p *mPay, err error) {
	p, err = m.record(name, pid)
	if err != nil {
		return "", false, nil, err
	}
	u := m.users[name]
	switch {
	case p.status == "completed":
		return booking.OutcomeDuplicate, false, p, nil
	case p.status == "refund":
		return "", true, p, booking.ErrLatePayment
	case p.status == "pending" && u.state == booking.StatePaymentPending && u.pid == pid && m.holdOpen():
		for _, id := range booking.SplitSeats(u.seat) {
			m.seats[id] = "s:" + name
			m.held--
			m.sold++
		}
		u.deadline, u.graced, u.state = 0, false, booking.StateCompleted
		p.status = "completed"
		return booking.OutcomeCompleted, false, p, nil
	}
	p.status = "refund"
	return "", false, p, booking.ErrLatePayment
}

// releaseSold mirrors release_sold.lua (an operator's cancellation of
// sold seats): each seat still sold to name, whose payment is pid,
// becomes available; the user keeps the other seats.
func (m *model) releaseSold(name, pid string, seats []string) (released int64, left []string) {
	u := m.user(name)
	gone := map[string]bool{}
	for _, id := range seats {
		if u.pid == pid && m.seats[id] == "s:"+name {
			m.freeSeat(id)
			m.sold--
			released++
			gone[id] = true
		} else {
			left = append(left, id)
		}
	}
	if released > 0 {
		var keep []string
		for _, id := range booking.SplitSeats(u.seat) {
			if !gone[id] {
				keep = append(keep, id)
			}
		}
		u.seat = strings.Join(keep, ",")
		var back []string
		for _, id := range seats {
			if gone[id] && !slices.Contains(back, id) {
				back = append(back, id)
			}
		}
		m.waitlistOffer(back)
	}
	return released, left
}

func (m *model) failure(name, pid string) (booking.Outcome, error) {
	p, err := m.record(name, pid)
	if err != nil {
		return "", err
	}
	u := m.users[name]
	switch p.status {
	case "completed":
		return "", booking.ErrAlreadyCompleted
	case "failed":
		return booking.OutcomeDuplicate, nil
	case "refund", "nohold":
		return booking.OutcomeNoHold, nil
	}
	if u.state == booking.StatePaymentPending && u.pid == pid {
		p.status = "failed"
		m.waitlistOffer(booking.SplitSeats(m.release(name, booking.StateFailed)))
		return booking.OutcomeFailed, nil
	}
	// a failure that released no hold: its repeats answer no_hold too
	p.status = "nohold"
	return booking.OutcomeNoHold, nil
}

func (m *model) timeout(name string) booking.Outcome {
	u := m.user(name)
	if u.state == "" || !u.state.InRoom() {
		return booking.OutcomeNoHold
	}
	if u.deadline > m.now {
		return booking.OutcomeNotDue
	}
	if seq := u.seq; m.expireDue(name) {
		// handle_timeout.lua writes the expiry's outbox entry, of the
		// hold that ended (not of an offer its seats made the same fan)
		m.fact(events.TopicBookingExpired, name, seq)
		return booking.OutcomeReleased
	}
	return booking.OutcomeExtended
}

func (m *model) cancel(name string) (dup bool, err error) {
	u := m.user(name)
	switch u.state {
	case "":
		return false, booking.ErrNotFound
	case booking.StateWaiting:
		u.seen, u.state = 0, booking.StateCancelled
		m.fact(events.TopicBookingCancelled, name, u.seq)
		return false, nil
	case booking.StateActive, booking.StateSeatSelected:
		// cancel.lua's entry names the hold cancelled, though its seats
		// may be offered to the same fan's waitlist place in the step
		seq := u.seq
		seats := m.release(name, booking.StateCancelled)
		delete(m.offers, name)
		m.waitlistOffer(booking.SplitSeats(seats))
		m.fact(events.TopicBookingCancelled, name, seq)
		return false, nil
	case booking.StateCancelled:
		return true, nil
	case booking.StatePaymentPending:
		return false, booking.ErrCannotCancel
	}
	return false, booking.ErrInvalidState
}

func (m *model) touch(names ...string) {
	if m.abandonMS <= 0 {
		return
	}
	for _, n := range names {
		if u := m.users[n]; u != nil && u.state == booking.StateWaiting {
			u.seen = m.now
		}
	}
}

// modelRun is one run: the world, the model, and the properties' own books.
type modelRun struct {
	t       *testing.T
	ctx     context.Context
	rng     *rand.Rand
	step    int
	store   *booking.Store
	rdb     redis.UniversalClient
	ann     *admission.Announcer
	kafka   *events.Recorder
	pub     *memPub
	clockMu sync.Mutex
	clock   time.Time
	event   string
	events  int
	m       *model
	log     []string
	// property books
	soldTo   map[string]string // event|seat -> user
	payClass map[string]string // event|pid -> "completed" | "refund"
	kafkaUp  bool
	stats    map[string]int // operation and first word of its result -> count
	// hosts: the stores whose turn it may be; store and ann are the
	// current step's
	hosts []modelHost
	// the seats Redis had free after the last step, and the highest
	// sequence offered so far (offers go in waitlist order)
	freeBefore  map[string]bool
	offered     map[int64]bool
	lastOffered int64
}

// modelHost is a store and its announcer on a host whose clock is skew
// off Redis's.
type modelHost struct {
	skew  time.Duration
	store *booking.Store
	ann   *admission.Announcer
}

func (r *modelRun) now() time.Time {
	r.clockMu.Lock()
	defer r.clockMu.Unlock()
	return r.clock
}

func (r *modelRun) advance(d time.Duration) {
	r.clockMu.Lock()
	r.clock = r.clock.Add(d)
	r.clockMu.Unlock()
	r.m.now = r.clock.UnixMilli()
}

func (r *modelRun) fatalf(format string, a ...any) {
	r.t.Helper()
	tail := r.log
	if len(tail) > 25 {
		tail = tail[len(tail)-25:]
	}
	r.t.Fatalf("step %d (event %s): %s\nlast steps:\n  %s", // testseed logs the seed
		r.step, r.event, fmt.Sprintf(format, a...), strings.Join(tail, "\n  "))
}

func (r *modelRun) logf(format string, a ...any) {
	line := fmt.Sprintf(format, a...)
	if f := strings.Fields(line); len(f) > 0 {
		k := f[0]
		if i := strings.Index(line, "-> "); i >= 0 {
			k += " " + strings.Fields(line[i+3:] + " .")[0]
		}
		r.stats[k]++
	}
	r.log = append(r.log, line)
	if len(r.log) > 200 {
		r.log = r.log[100:]
	}
}

// errKey is a short name of err for the log: "" for nil, else its last part.
func errKey(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return strings.ReplaceAll(msg, " ", "_")
}

func sameErr(got, want error) bool {
	if want == nil {
		return got == nil
	}
	return errors.Is(got, want)
}

func (r *modelRun) newEvent() {
	defer r.setWaitlist()
	r.events++
	r.event = "m" + strconv.Itoa(r.events)
	capacity := 1 + r.rng.IntN(2)
	cfg := booking.EventConfig{ID: r.event, Rows: 1, SeatsPerRow: modelSeats, Capacity: capacity, Hold: modelHold, Grace: modelGrace}
	r.m = newModel(r.now().UnixMilli(), capacity)
	if r.events%2 == 0 {
		// rebuilt from the ledger: the sequence base as pkg/ledger's
		// Restorer picks it (now_ms × ledger.SeqBaseFactor), past 10^15
		def, err := booking.NormalizeEvent(cfg)
		if err != nil {
			r.fatalf("normalize: %v", err)
		}
		base := r.now().UnixMilli()*1000 + r.rng.Int64N(1000)
		res, err := r.store.RestoreEvent(r.ctx, booking.RestoreInput{Config: def, SeqBase: base})
		if err != nil || res.SeqBase != base {
			r.fatalf("restore event: %+v %v", res, err)
		}
		r.m.seqNo, r.m.served = base, base
		r.m.fact(events.TopicEventRestored, events.RestoredBy, base) // the outbox sweep publishes it
		r.logf("new event %s capacity %d, rebuilt with sequences after %d", r.event, capacity, base)
		return
	}
	phased := r.scheduled(&cfg)
	if _, err := r.store.CreateEvent(r.ctx, cfg); err != nil {
		r.fatalf("create event: %v", err)
	}
	r.logf("new event %s capacity %d", r.event, capacity)
	if phased {
		r.setPhases(cfg)
	}
}

// setWaitlist gives two events of three a waitlist, offers holding
// their seats 30 s; one of them opens it before the sell-out.
func (r *modelRun) setWaitlist() {
	r.freeBefore, r.offered, r.lastOffered = nil, map[int64]bool{}, 0
	if r.events%3 == 0 {
		return
	}
	r.m.offerMS, r.m.early = (30 * time.Second).Milliseconds(), r.events%3 == 1
	if err := r.store.SetWaitlist(r.ctx, r.event, booking.WaitlistSettings{OfferTime: 30 * time.Second, Early: r.m.early}); err != nil {
		r.fatalf("set waitlist: %v", err)
	}
}

// announce hands entries to the Announcer as the services do; a failure
// leaves them in the outbox for a sweep.
func (r *modelRun) announce(entries []booking.OutboxEntry) {
	err := r.ann.Announce(r.ctx, r.event, entries)
	if err != nil && r.kafkaUp && !r.pub.down {
		r.fatalf("announce with both brokers up: %v", err)
	}
}

// retire announces everything left (both brokers up) and checks that every
// fact of the event was announced exactly once.
func (r *modelRun) retire() {
	r.kafkaUp, r.pub.down = true, false
	r.kafka.FailWith(nil)
	if _, err := r.ann.SweepOutbox(r.ctx, r.event, 0); err != nil {
		r.fatalf("final sweep: %v", err)
	}
	if left, _ := r.store.Outbox(r.ctx, r.event, 0); len(left) != 0 {
		r.fatalf("outbox not empty after the final sweep: %+v", left)
	}
	got := map[string]int{}
	ids := map[string]int{}
	for _, ev := range r.kafka.Events() {
		if ev.EventID != r.event {
			continue
		}
		ids[ev.ID]++
		switch ev.Type {
		case events.TopicBookingRequest, events.TopicUserPromoted, events.TopicBookingExpired, events.TopicBookingCancelled,
			events.TopicEventRestored:
			got[ev.Type+"|"+ev.UserID+"|"+strconv.FormatInt(ev.Sequence, 10)]++
		}
	}
	for id, n := range ids {
		if n != 1 {
			r.fatalf("kafka event %s published %d times", id, n)
		}
	}
	for k, n := range r.m.facts {
		if n != 1 || got[k] != 1 {
			r.fatalf("fact %s: model %d, kafka %d", k, n, got[k])
		}
	}
	if len(got) != len(r.m.facts) {
		r.fatalf("kafka has %d facts, the model %d", len(got), len(r.m.facts))
	}
	// the progress document's numbers (the gateway serves GetEvent's)
	if e, err := r.store.GetEvent(r.ctx, r.event); err != nil || e.Counts.Served != r.m.served || e.Counts.Sold != int64(r.m.sold) {
		r.fatalf("event counts %+v %v, model served %d sold %d", e.Counts, err, r.m.served, r.m.sold)
	}
	r.pub.mu.Lock()
	defer r.pub.mu.Unlock()
	for id, n := range r.pub.sent {
		if n != 1 {
			r.fatalf("rabbitmq message %s published %d times", id, n)
		}
	}
}

func TestBookingModel(t *testing.T) {
	seed := testseed.Seed(t)
	steps := 10_000
	if s := os.Getenv("BOOKING_MODEL_STEPS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("BOOKING_MODEL_STEPS: %q", s)
		}
		steps = v
	}
	t.Logf("%d steps; %s", steps, testseed.Replay(t, seed))
	r := &modelRun{t: t, ctx: context.Background(), rng: testseed.New(seed),
		kafka: &events.Recorder{}, pub: &memPub{sent: map[string]int{}}, clock: time.UnixMilli(1_900_000_000_000),
		soldTo: map[string]string{}, payClass: map[string]string{}, kafkaUp: true, stats: map[string]int{}}
	r.rdb = redistest.Client(t)
	// three stores (and their announcers) on one Redis, as on three hosts
	// whose clocks are right, 30 s ahead and 30 s behind: every step is
	// taken by one of them at random, and the scripts judge by Redis's
	// clock (the model's) whichever it is
	prefix := redistest.Prefix(t)
	for _, skew := range []time.Duration{0, 30 * time.Second, -30 * time.Second} {
		process := func() time.Time { return r.now().Add(skew) }
		s := booking.New(r.rdb, booking.WithPrefix(prefix), booking.WithClock(r.now),
			booking.WithProcessClock(process), booking.WithAutoPipeline(0))
		r.hosts = append(r.hosts, modelHost{skew: skew, store: s,
			ann: admission.New(s, r.pub, r.kafka, nil, admission.WithClock(process))})
	}
	pick := testseed.New(seed + 1) // apart from r.rng: the same steps as without skew
	r.store, r.ann = r.hosts[0].store, r.hosts[0].ann
	r.newEvent()
	sinceNew := 0
	for r.step = 1; r.step <= steps; r.step++ {
		h := r.hosts[pick.IntN(len(r.hosts))]
		r.store, r.ann = h.store, h.ann
		r.stats[fmt.Sprintf("~host %+ds", int(h.skew.Seconds()))]++
		r.randomStep()
		r.check()
		if len(r.m.waiting()) == 0 {
			r.stats["~queue empty"]++
		}
		for _, n := range r.m.active() {
			if u := r.m.users[n]; u.deadline <= r.m.now && u.state == booking.StatePaymentPending && !u.graced {
				r.stats["~overdue pending"]++
			}
		}
		sinceNew++
		if sinceNew >= modelEventMax || r.m.sold >= r.m.total {
			r.stats["join refused: room full of grace holds"] += r.m.graceFull
			r.retire()
			r.newEvent()
			sinceNew = 0
		}
	}
	r.retire()
	refunds, completed := 0, 0
	for _, c := range r.payClass {
		if c == "refund" {
			refunds++
		} else {
			completed++
		}
	}
	t.Logf("%d events, %d payments completed, %d refunded; steps by outcome: %v", r.events, completed, refunds, r.stats)
}

func (r *modelRun) anyUser() string { return "u" + strconv.Itoa(r.rng.IntN(modelUsers)) }

// userIn returns, most of the time, a user the operation applies to: one in
// one of states, or (with payments) one who has a payment id.
func (r *modelRun) userIn(payments bool, states ...booking.State) string {
	if r.rng.IntN(5) == 0 {
		return r.anyUser()
	}
	var fit []string
	for i := range modelUsers {
		name := "u" + strconv.Itoa(i)
		u := r.m.user(name)
		if slices.Contains(states, u.state) || (payments && len(u.pids) > 0) {
			fit = append(fit, name)
		}
	}
	if len(fit) == 0 {
		return r.anyUser()
	}
	return fit[r.rng.IntN(len(fit))]
}

// anyPid: mostly one of the user's own payment ids (the current one, or an
// older one: a late or duplicate webhook), sometimes another user's or an
// unknown one.
func (r *modelRun) anyPid(name string) string {
	u := r.m.user(name)
	switch k := r.rng.IntN(10); {
	case k < 7 && len(u.pids) > 0:
		if k < 4 && u.pid != "" {
			return u.pid
		}
		return u.pids[r.rng.IntN(len(u.pids))]
	case k < 9:
		var all []string
		for pid := range r.m.pays {
			all = append(all, pid)
		}
		if len(all) > 0 {
			slices.Sort(all)
			return all[r.rng.IntN(len(all))]
		}
	}
	return "pnone" + strconv.Itoa(r.rng.IntN(3))
}

func (r *modelRun) randomStep() {
	if r.m.sch != nil && r.rng.IntN(6) == 0 { // a scheduled event's own steps (model_phases_test.go)
		r.phaseStep()
		return
	}
	m, ctx, ev := r.m, r.ctx, r.event
	name := r.anyUser()
	switch op := r.rng.IntN(100); {
	case op < 11: // join (or rejoin)
		r.join(r.userIn(false, "", booking.StateCancelled, booking.StateExpired, booking.StateFailed, booking.StateAbandoned))
	case op < 13: // join the waitlist (sold out, or not yet)
		name = r.userIn(false, "", booking.StateCancelled, booking.StateExpired, booking.StateFailed, booking.StateAbandoned)
		want := 1 + r.rng.IntN(3)
		if r.rng.IntN(10) == 0 {
			want = 5
		}
		st, seq, created, wantErr := m.joinWaitlist(name, want)
		res, err := r.store.JoinWaitlist(ctx, ev, name, want)
		r.logf("waitlist %s %d -> %s %d created=%v %s", name, want, res.State, res.Sequence, res.Created, errKey(err))
		if !sameErr(err, wantErr) || (err == nil && (res.State != st || res.Sequence != seq || res.Created != created)) {
			r.fatalf("waitlist %s %d: got %+v %v, model %s %d created=%v %v", name, want, res, err, st, seq, created, wantErr)
		}
	case op < 14: // a fan answers an offer: theirs (accept, decline, late), someone else's or an old one
		var offered []string
		for n := range m.offers {
			offered = append(offered, n)
		}
		slices.Sort(offered)
		seq := int64(1 + r.rng.IntN(3))
		if len(offered) > 0 && r.rng.IntN(4) > 0 {
			name = offered[r.rng.IntN(len(offered))]
			seq = m.offers[name]
			if r.rng.IntN(5) == 0 {
				name = r.anyUser() // maybe not theirs
			}
		} else if u := m.user(name); u.seq > 0 {
			seq = u.seq
		}
		accept := r.rng.IntN(2) == 0
		owner := ""
		for n, s := range m.offers {
			if s == seq {
				owner = n
			}
		}
		out, open, wantErr := m.answerOpen(name, seq, accept)
		res, err := r.store.AnswerOffer(ctx, ev, name, seq, accept)
		r.logf("answer %s %d accept=%v -> %s dup=%v %s", name, seq, accept, res.Outcome, res.Duplicate, errKey(err))
		switch {
		case open:
			if !sameErr(err, wantErr) || (err == nil && (res.Outcome != out || res.Duplicate)) {
				r.fatalf("answer %s %d: got %+v %v, model %s %v", name, seq, res, err, out, wantErr)
			}
		case owner != "" && owner != name:
			if !errors.Is(err, booking.ErrNotYourOffer) {
				r.fatalf("answer %s %d (%s's offer): got %+v %v", name, seq, owner, res, err)
			}
		default: // no open offer: nothing changes (the state check), a repeat or a refusal
			if err == nil && !res.Duplicate {
				r.fatalf("answer %s %d with no open offer: got %+v", name, seq, res)
			}
		}
	case op < 22: // promotion (slot-released message or safety net)
		before := m.waiting()
		promoted, expired, abandoned, _ := m.promote()
		res, err := r.store.Promote(ctx, ev, 0)
		if err != nil {
			r.fatalf("promote: %v", err)
		}
		var gotP, gotX []string
		for _, a := range res.Promoted {
			gotP = append(gotP, a.UserID)
		}
		for _, x := range res.Expired {
			gotX = append(gotX, x.UserID)
		}
		r.logf("promote -> promoted %v expired %v abandoned %v (%s)", gotP, gotX, res.Abandoned, res.Reason)
		if !slices.Equal(gotP, promoted) || !slices.Equal(gotX, expired) || !slices.Equal(res.Abandoned, abandoned) {
			r.fatalf("promote: got promoted %v expired %v abandoned %v, model %v %v %v", gotP, gotX, res.Abandoned,
				promoted, expired, abandoned)
		}
		r.checkOrder(before, gotP, res.Abandoned)
		if len(gotP) > 0 && m.ended() {
			r.fatalf("promote admitted %v after the sales end", gotP)
		}
		if len(gotP) > 0 {
			r.checkRoom("promote")
		}
		r.announce(res.Outbox)
	case op < 34: // select a seat
		name = r.userIn(false, booking.StateActive, booking.StateSeatSelected)
		// 1 to 5 distinct seats (A7 does not exist; more than 4 is too many)
		var seats []string
		for _, n := range r.rng.Perm(modelSeats + 1)[:1+r.rng.IntN(5)] {
			seats = append(seats, "A"+strconv.Itoa(1+n))
		}
		seat := strings.Join(seats, ",")
		// through no channel mostly, a channel's token now and then, or
		// asking for accessibility seats
		claim, accessible := "", false
		switch k := r.rng.IntN(6); k {
		case 1, 2:
			claim = modelChannels[r.rng.IntN(len(modelChannels))]
		case 3:
			accessible = true
		}
		channels := map[string]bool{claim: claim != "", m.phase: m.phase != ""}
		if accessible {
			channels[booking.ChannelWheelchair], channels[booking.ChannelCompanion] = true, true
		}
		allocated := false
		for _, id := range seats {
			allocated = allocated || strings.HasPrefix(m.seats[id], "c:")
		}
		want := m.lockSeat(name, seats, channels)
		_, err := r.store.LockSeatsVia(ctx, ev, name, claim, accessible, seats)
		r.logf("lock %s %s via %q accessible=%v -> %s", name, seat, claim, accessible, errKey(err))
		if !sameErr(err, want) {
			r.fatalf("lock %s %s via %q accessible=%v: got %v, model %v", name, seat, claim, accessible, err, want)
		}
		if errors.Is(err, booking.ErrSeatNotForSale) {
			r.stats["lock refused: not for sale"]++
		}
		if allocated {
			r.stats["~lock of an allocated seat "+errKey(err)]++
		}
		if err == nil && !m.holdOpen() {
			r.fatalf("lock %s %s: a hold went on after the sales end (holds end with the sale)", name, seat)
		}
		if r.rng.IntN(2) == 0 { // and best available, through the same channels
			r.selectBest(r.userIn(false, booking.StateActive, booking.StateSeatSelected), claim, accessible, channels)
		}
	case op < 44: // initiate payment (now and then with a reused id)
		name = r.userIn(false, booking.StateSeatSelected)
		pid := "p" + strconv.Itoa(r.step)
		if r.rng.IntN(10) == 0 && len(m.pays) > 0 {
			pid = r.anyPid(name)
		}
		wasSelected := m.user(name).state == booking.StateSeatSelected
		want, wantErr := m.initiate(name, pid)
		h, err := r.store.InitiatePayment(ctx, ev, name, pid)
		if err == nil && wasSelected && !m.holdOpen() {
			r.fatalf("initiate %s %s: a payment started after the sales end (holds end with the sale)", name, pid)
		}
		r.logf("initiate %s %s -> %s %s", name, pid, errKey(err), h.PaymentID)
		if !sameErr(err, wantErr) || (err == nil && (h.PaymentID != want || h.Sequence != m.users[name].seq)) {
			r.fatalf("initiate %s %s: got %+v %v, model %s (sequence %d) %v", name, pid, h, err, want, m.user(name).seq, wantErr)
		}
	case op < 54: // success webhook: current, duplicate, late, someone else's
		name = r.userIn(true)
		pid := r.anyPid(name)
		out, dup, p, wantErr := m.success(name, pid)
		res, err := r.store.PaymentSuccess(ctx, ev, name, pid)
		if late := (*booking.LatePaymentError)(nil); errors.As(err, &late) {
			res = late.Payment
		}
		r.logf("success %s %s -> %s%s dup=%v", name, pid, res.Outcome, errKey(err), res.Duplicate)
		if !sameErr(err, wantErr) || res.Outcome != out || res.Duplicate != dup {
			r.fatalf("success %s %s: got %+v %v, model %s dup=%v %v", name, pid, res, err, out, dup, wantErr)
		}
		if p != nil && (res.SeatID != p.seat || res.Sequence != p.seq) {
			r.fatalf("success %s %s: seat %s seq %d, the payment was for %s seq %d", name, pid, res.SeatID, res.Sequence, p.seat, p.seq)
		}
		r.classify(pid, res, err)
		if err == nil && res.Outcome == booking.OutcomeCompleted && !m.holdOpen() {
			r.fatalf("success %s %s: sold after the sales end (holds end with the sale)", name, pid)
		}
	case op < 57: // failure webhook
		name = r.userIn(true)
		pid := r.anyPid(name)
		want, wantErr := m.failure(name, pid)
		res, err := r.store.PaymentFailure(ctx, ev, name, pid)
		r.logf("failure %s %s -> %s%s", name, pid, res.Outcome, errKey(err))
		if !sameErr(err, wantErr) || res.Outcome != want {
			r.fatalf("failure %s %s: got %+v %v, model %s %v", name, pid, res, err, want, wantErr)
		}
	case op < 60: // a payment in flight over its deadline, and someone joins
		var paying []string
		for _, n := range m.active() {
			if m.users[n].state == booking.StatePaymentPending && m.users[n].deadline > m.now {
				paying = append(paying, n)
			}
		}
		if len(paying) > 0 {
			d := m.users[paying[r.rng.IntN(len(paying))]].deadline - m.now + 1000
			r.advance(time.Duration(d) * time.Millisecond)
			r.logf("advance %dms (past a payment's deadline)", d)
		}
		r.join(r.userIn(false, "", booking.StateCancelled, booking.StateExpired, booking.StateFailed, booking.StateAbandoned))
	case op < 61: // cross-path: a signed failure posted as a success is refused before the store
		wh := payment.Webhook{UserID: name, EventID: ev, PaymentID: r.anyPid(name), Status: payment.StatusFailure}
		if err := wh.CheckStatus(payment.StatusFor(payment.PathSuccess)); err == nil {
			r.fatalf("a failure body passed as a success")
		}
		r.logf("cross-path %s refused", name)
	case op < 66: // timeout message
		name = r.userIn(false, booking.StateActive, booking.StateSeatSelected, booking.StatePaymentPending)
		want := m.timeout(name)
		res, err := r.store.HandleTimeout(ctx, ev, name)
		r.logf("timeout %s -> %s %v", name, res.Outcome, err)
		if err != nil || res.Outcome != want {
			r.fatalf("timeout %s: got %+v %v, model %s", name, res, err, want)
		}
		r.announce(res.Outbox)
	case op < 72: // cancel
		dup, wantErr := m.cancel(name)
		res, err := r.store.Cancel(ctx, ev, name)
		r.logf("cancel %s -> dup=%v %v", name, res.Duplicate, err)
		if !sameErr(err, wantErr) || (err == nil && res.Duplicate != dup) {
			r.fatalf("cancel %s: got %+v %v, model dup=%v %v", name, res, err, dup, wantErr)
		}
		r.announce(res.Outbox)
	case op < 75: // position poll (presence)
		if u := m.users[name]; u != nil && u.state == booking.StateWaiting && m.abandonMS > 0 {
			u.seen = m.now
		}
		st, err := r.store.Position(ctx, ev, name)
		r.logf("position %s -> %s %v", name, st.State, err)
		if want := m.user(name).state; (want == "" && !errors.Is(err, booking.ErrNotFound)) || (want != "" && st.State != want) {
			r.fatalf("position %s: %+v %v, model %s", name, st, err, want)
		}
	case op < 77: // connected users touched by the notifier
		names := []string{name, r.anyUser(), r.anyUser()}
		m.touch(names...)
		if err := r.store.Touch(ctx, ev, names...); err != nil {
			r.fatalf("touch: %v", err)
		}
		r.logf("touch %v", names)
	case op < 86: // time passes
		d := []time.Duration{time.Second, 10 * time.Second, 30 * time.Second, modelHold + time.Second,
			modelHold + modelGrace + time.Second}[r.rng.IntN(5)]
		if room := m.active(); len(room) > 0 && r.rng.IntN(3) > 0 {
			// just past a hold's deadline (mostly one in payment): overdue
			pick := room[r.rng.IntN(len(room))]
			for _, n := range room {
				if m.users[n].state == booking.StatePaymentPending && r.rng.IntN(2) == 0 {
					pick = n
				}
			}
			dl := m.users[pick].deadline
			if dl >= m.now {
				d = time.Duration(dl-m.now)*time.Millisecond + time.Duration(1+r.rng.IntN(5))*time.Second
			}
		}
		r.advance(d)
		r.logf("advance %s", d)
	case op < 87: // the operator sets the sales end (soon, or already past) or lifts it
		var end time.Time
		if r.rng.IntN(3) > 0 {
			end = r.now().Add([]time.Duration{-time.Second, time.Second, 10 * time.Second, 90 * time.Second}[r.rng.IntN(4)])
		}
		finish := r.rng.IntN(2) == 0
		if _, err := r.store.UpdateEvent(ctx, ev, booking.EventUpdate{SalesEnd: &end, FinishAfterEnd: &finish}); err != nil {
			r.fatalf("sales end: %v", err)
		}
		m.salesEnd, m.holdsEnd = 0, !finish
		if !end.IsZero() {
			m.salesEnd = end.UnixMilli()
		}
		r.logf("sales end %d finish_after_end=%v", m.salesEnd, finish)
	case op < 91: // an operator holds, kills, releases or allocates seats (now and then one a fan holds or bought, or unknown), or ends an allocation
		k := r.rng.IntN(9)
		if k == 8 { // the sale's phase is the partner's (its fans' seats are anyone's), or none
			p := []string{"", "partner"}[r.rng.IntN(2)]
			if _, _, err := r.store.SetPhase(ctx, ev, booking.PhaseState{Phase: p, Audience: booking.AudiencePublic}); err != nil {
				r.fatalf("set phase %q: %v", p, err)
			}
			m.phase = p
			if m.sch != nil { // stands until the schedule's next boundary (model_phases_test.go)
				m.sch.phase, m.sch.audience = p, booking.AudiencePublic
			}
			r.logf("phase %q", p)
			break
		}
		if k >= 6 {
			r.endAllocation()
			break
		}
		action := []booking.SeatMark{booking.MarkHold, booking.MarkKill, booking.MarkRelease, booking.MarkRelease,
			booking.MarkAllocate, booking.MarkAllocate}[k]
		purpose := ""
		switch action {
		case booking.MarkHold:
			purpose = []string{"production", "sponsor"}[r.rng.IntN(2)]
		case booking.MarkAllocate:
			purpose = modelChannels[r.rng.IntN(len(modelChannels))]
		}
		var seats []string
		for _, n := range r.rng.Perm(modelSeats + 1)[:1+r.rng.IntN(3)] {
			seats = append(seats, "A"+strconv.Itoa(1+n))
		}
		var at time.Time // an allocation's release time: none, past, soon or later
		if action == booking.MarkAllocate {
			if d := []time.Duration{0, -time.Second, 10 * time.Second, 90 * time.Second}[r.rng.IntN(4)]; d != 0 {
				at = r.now().Add(d)
			}
		}
		var atMS int64
		if !at.IsZero() {
			atMS = at.UnixMilli()
		}
		want, wantErr := m.mark(action, purpose, atMS, seats)
		var got []string
		var err error
		if action == booking.MarkAllocate {
			got, err = r.store.AllocateSeats(ctx, ev, purpose, at, seats)
		} else {
			got, err = r.store.MarkSeats(ctx, ev, action, purpose, seats)
		}
		r.logf("mark %s %q %v -> %v %s", action, purpose, seats, got, errKey(err))
		if !sameErr(err, wantErr) || !slices.Equal(got, want) {
			r.fatalf("mark %s %v: got %v %v, model %v %v", action, seats, got, err, want, wantErr)
		}
		r.stats["mark "+string(action)+" "+errKey(err)]++
	case op < 93: // capacity raised or lowered live
		c := 1 + r.rng.IntN(modelMaxCap)*r.rng.IntN(2)
		if r.rng.IntN(8) == 0 {
			c = 0
		}
		m.capacity = c
		if _, err := r.store.UpdateEvent(ctx, ev, booking.EventUpdate{Capacity: &c}); err != nil {
			r.fatalf("capacity: %v", err)
		}
		r.logf("capacity %d", c)
	case op < 94: // pause / resume
		p := r.rng.IntN(4) == 0
		m.paused = p
		if _, err := r.store.UpdateEvent(ctx, ev, booking.EventUpdate{Paused: &p}); err != nil {
			r.fatalf("pause: %v", err)
		}
		r.logf("paused %v", p)
	case op < 95: // abandonment toggled live
		a := time.Duration(0)
		if m.abandonMS == 0 {
			a = modelAbandon
			m.abandonSince = m.now
		}
		m.abandonMS = a.Milliseconds()
		if _, err := r.store.UpdateEvent(ctx, ev, booking.EventUpdate{Abandon: &a}); err != nil {
			r.fatalf("abandon: %v", err)
		}
		r.logf("abandon %s", a)
	case op < 97: // a broker goes down or comes back
		if r.rng.IntN(3) == 0 {
			r.pub.mu.Lock()
			r.pub.down = !r.pub.down
			r.pub.mu.Unlock()
			r.logf("rabbitmq down=%v", r.pub.down)
		} else {
			r.kafkaUp = !r.kafkaUp
			if r.kafkaUp {
				r.kafka.FailWith(nil)
			} else {
				r.kafka.FailWith(errors.New("kafka unavailable"))
			}
			r.logf("kafka up=%v", r.kafkaUp)
		}
	case op < 98: // an operator cancels sold seats: the whole order, some of it, again, or not the buyer's
		name = r.userIn(false, booking.StateCompleted)
		u := m.user(name)
		pid := u.pid
		if pid == "" || r.rng.IntN(6) == 0 {
			pid = r.anyPid(name)
		}
		seats := booking.SplitSeats(u.seat)
		if len(seats) > 1 && r.rng.IntN(2) == 0 {
			seats = seats[:1+r.rng.IntN(len(seats)-1)]
		}
		if len(seats) == 0 || r.rng.IntN(6) == 0 {
			seats = append(seats, booking.SeatIDs(1, modelSeats)[r.rng.IntN(modelSeats)])
		}
		before := u.seat
		released, left := m.releaseSold(name, pid, seats)
		res, err := r.store.ReleaseSold(ctx, ev, name, pid, seats)
		r.logf("release sold %s %s %v -> %d left %v %v", name, pid, seats, res.Released, res.Left, err)
		if err != nil || res.Released != released || !slices.Equal(res.Left, left) {
			r.fatalf("release sold %s %s %v: got %+v %v, model %d left %v", name, pid, seats, res, err, released, left)
		}
		if released > 0 {
			// the seats may be sold again; the order keeps the others
			delete(r.soldTo, ev+"|"+before)
			if u.seat != "" {
				r.soldTo[ev+"|"+u.seat] = pid
			}
			r.stats["release sold"]++
		}
	default: // safety-net sweep of the outbox
		_, err := r.ann.SweepOutbox(ctx, ev, 0)
		r.logf("sweep -> %s", errKey(err))
		if err != nil && r.kafkaUp && !r.pub.down {
			r.fatalf("sweep with both brokers up: %v", err)
		}
	}
}

// selectBest runs best available for name through the request's
// channels and checks it against the model.
func (r *modelRun) selectBest(name, claim string, accessible bool, channels map[string]bool) {
	count := 1 + r.rng.IntN(3)
	if r.rng.IntN(10) == 0 {
		count = 5
	}
	want, orphaned, wantErr := r.m.selectBest(name, count, channels)
	res, err := r.store.SelectBestVia(r.ctx, r.event, name, claim, accessible, count, "")
	r.logf("best %s %d via %q accessible=%v -> %v orphaned=%v %s", name, count, claim, accessible, res.Seats, res.Orphaned, errKey(err))
	var left, wantLeft *booking.NoAdjacentSeatsError
	if errors.As(wantErr, &wantLeft) {
		if !errors.As(err, &left) || *left != *wantLeft {
			r.fatalf("best %s %d: got %v, model %+v", name, count, err, *wantLeft)
		}
		wantErr = booking.ErrNoAdjacentSeats
	}
	if !sameErr(err, wantErr) || !slices.Equal(res.Seats, want) || res.Orphaned != orphaned {
		r.fatalf("best %s %d via %q accessible=%v: got %+v %v, model %v orphaned=%v %v", name, count, claim, accessible,
			res, err, want, orphaned, wantErr)
	}
	for _, id := range want {
		if r.m.alloc[id] != "" {
			r.stats["~best available took a seat of its channel"]++
			break
		}
	}
}

// modelChannels are the channels seats are allocated to and fans come
// through: a partner and the two accessibility channels.
var modelChannels = []string{"partner", booking.ChannelWheelchair, booking.ChannelCompanion}

// endAllocation ends a channel's allocation as the operator does (now) or
// as the sweep does at its release time (due), and checks it against the
// model; the seats put on sale go to the waitlist first, in the order the
// engine gives them.
func (r *modelRun) endAllocation() {
	m := r.m
	ch, due := modelChannels[r.rng.IntN(len(modelChannels))], r.rng.IntN(2) == 0
	want, at, wantErr := m.endAllocation(ch, due)
	got, err := r.store.ReleaseAllocation(r.ctx, r.event, ch, due)
	r.logf("end allocation %s due=%v -> %+v %s", ch, due, got, errKey(err))
	r.stats[fmt.Sprintf("~end allocation: %d seats on sale, repeat %v %s", len(got.Released), got.Repeat, errKey(err))]++
	var early *booking.AllocationNotDueError
	switch {
	case !sameErr(err, wantErr) || !slices.Equal(sorted(got.Released), want.Released) || got.Repeat != want.Repeat ||
		!slices.Equal(sorted(got.Before), sorted(want.Before)):
		r.fatalf("end allocation %s due=%v: got %v %v, model %v %v", ch, due, got, err, want, wantErr)
	case errors.As(err, &early) && early.At.UnixMilli() != at && !(at == 0 && early.At.IsZero()):
		r.fatalf("end allocation %s not due: at %v, model %d", ch, early.At, at)
	}
	if m.waitlistOffer(got.Released) > 0 {
		r.stats["~end allocation: offered to the waitlist"]++
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// join runs a join (or a rejoin) of name and checks it against the model.
func (r *modelRun) join(name string) {
	m, ctx, ev := r.m, r.ctx, r.event
	st, created, wantErr := m.join(name)
	res, err := r.store.Enqueue(ctx, ev, name)
	r.logf("join %s -> %s created=%v err=%v", name, res.State, res.Created, err)
	if !sameErr(err, wantErr) || (err == nil && (res.State != st || res.Created != created)) {
		r.fatalf("join %s: got %+v %v, model %s created=%v %v", name, res, err, st, created, wantErr)
	}
	if err == nil && res.Sequence != m.users[name].seq {
		r.fatalf("join %s: sequence %d, model %d", name, res.Sequence, m.users[name].seq)
	}
	if created && st == booking.StateActive {
		r.checkRoom("join")
	}
	if err == nil && res.Created && m.ended() {
		r.fatalf("join %s: joined (%s) after the sales end", name, res.State)
	}
	r.announce(res.Outbox)
}

// classify keeps the book of what each payment id's success became.
func (r *modelRun) classify(pid string, res booking.PaymentResult, err error) {
	key := r.event + "|" + pid
	class := ""
	switch {
	case errors.Is(err, booking.ErrLatePayment):
		class = "refund"
	case err == nil && (res.Outcome == booking.OutcomeCompleted || res.Outcome == booking.OutcomeDuplicate):
		class = "completed"
	default:
		return
	}
	first := res.Outcome == booking.OutcomeCompleted || (class == "refund" && !res.Duplicate)
	prev, seen := r.payClass[key]
	switch {
	case first && seen:
		r.fatalf("payment %s classified twice: %s then %s", pid, prev, class)
	case !first && !seen:
		r.fatalf("payment %s repeated as %s before it was classified", pid, class)
	case !first && prev != class:
		r.fatalf("payment %s was %s, now %s", pid, prev, class)
	}
	r.payClass[key] = class
	if res.Outcome == booking.OutcomeCompleted {
		seat := r.event + "|" + res.SeatID
		if who, sold := r.soldTo[seat]; sold {
			r.fatalf("seat %s sold twice: to %s and to %s", res.SeatID, who, pid)
		}
		r.soldTo[seat] = pid
	}
}

// checkRoom: right after an admission, the room holds at most its capacity.
func (r *modelRun) checkRoom(what string) {
	if n, c := r.m.counted(), r.m.roomCap(); n > c {
		r.fatalf("%s admitted into a full room: %d holds counted, capacity %d", what, n, c)
	}
}

// checkOrder: promoted users are the first waiting ones in join order,
// skipping only those dropped as abandoned.
func (r *modelRun) checkOrder(before, promoted, abandoned []string) {
	skip := map[string]bool{}
	for _, a := range abandoned {
		skip[a] = true
	}
	i := 0
	for _, w := range before {
		if i == len(promoted) {
			break
		}
		if skip[w] {
			continue
		}
		if promoted[i] != w {
			r.fatalf("admission out of join order: promoted %v, waiting %v", promoted, before)
		}
		i++
	}
	if i != len(promoted) {
		r.fatalf("promoted %v who were not waiting %v", promoted, before)
	}
}

// check compares the whole Redis state of the event with the model.
func (r *modelRun) check() {
	ctx, m, c := r.ctx, r.m, r.rdb
	keys := booking.EventKeys(r.store.Prefix(), r.event)
	states, err := c.HGetAll(ctx, keys[9]).Result()
	if err != nil {
		r.fatalf("read states: %v", err)
	}
	// a waiting user has no state field: membership of waiting is the state
	queued, _ := c.ZRange(ctx, keys[3], 0, -1).Result()
	for _, u := range queued {
		if st, ok := states[u]; ok {
			r.fatalf("user %s: waiting, but with the state field %q", u, st)
		}
		states[u] = string(booking.StateWaiting)
	}
	for name, u := range m.users {
		if u.state != "" && states[name] != string(u.state) {
			r.fatalf("user %s: redis state %q, model %q", name, states[name], u.state)
		}
	}
	if n := len(states); n != r.countJoined() {
		r.fatalf("redis has %d users, model %d", n, r.countJoined())
	}
	seats, _ := c.HGetAll(ctx, keys[1]).Result()
	for s, v := range m.seats {
		if seats[s] != v {
			r.fatalf("seat %s: redis %q, model %q", s, seats[s], v)
		}
	}
	active, _ := c.ZRangeWithScores(ctx, keys[4], 0, -1).Result()
	want := m.active()
	if len(active) != len(want) {
		r.fatalf("room: redis %v, model %v", active, want)
	}
	for i, z := range active {
		if z.Member != want[i] || int64(z.Score) != m.users[want[i]].deadline {
			r.fatalf("room: redis %v, model %v", active, want)
		}
	}
	waiting, _ := c.ZRange(ctx, keys[3], 0, -1).Result()
	if !slices.Equal(waiting, m.waiting()) {
		r.fatalf("queue: redis %v, model %v", waiting, m.waiting())
	}
	cfg, _ := c.HMGet(ctx, keys[0], "held", "sold", "served", "allocated").Result()
	if fmt.Sprint(cfg[0]) != strconv.Itoa(m.held) || fmt.Sprint(cfg[1]) != strconv.Itoa(m.sold) ||
		fmt.Sprint(cfg[2]) != strconv.FormatInt(m.served, 10) {
		r.fatalf("counters held=%v sold=%v served=%v, model %d %d %d", cfg[0], cfg[1], cfg[2], m.held, m.sold, m.served)
	}
	if n, _ := strconv.Atoi(fmt.Sprint(cfg[3])); n != m.allocated {
		r.fatalf("counter allocated=%v, model %d", cfg[3], m.allocated)
	}
	r.checkAllocations(keys)
	r.checkNumbers(keys)
	r.checkWaitlist(keys, seats)
}

// checkWaitlist compares the waitlist and the open offers with the
// model's and checks the waitlist's properties on Redis's state: offers
// go in waitlist order, a seat is in one open offer at a time and held
// for its fan, and while fans wait on the list (and the sale goes on) no
// seat that came back is on general sale.
func (r *modelRun) checkWaitlist(keys []string, seats map[string]string) {
	ctx, m, c := r.ctx, r.m, r.rdb
	wl, _ := c.ZRangeWithScores(ctx, keys[20], 0, -1).Result()
	if len(wl) != len(m.wl) {
		r.fatalf("waitlist: redis %v, model %v", wl, m.wl)
	}
	for _, z := range wl {
		if w, ok := m.wl[z.Member.(string)]; !ok || int64(z.Score) != w[0] {
			r.fatalf("waitlist: redis %v, model %v", wl, m.wl)
		}
	}
	offers, _ := c.HGetAll(ctx, keys[21]).Result()
	inOffer := map[string]string{}
	var fresh []int64
	open := 0
	for f, v := range offers {
		if !strings.HasPrefix(f, "o:") {
			continue
		}
		open++
		user, parts := f[2:], strings.Split(v, "|")
		seq, _ := strconv.ParseInt(parts[0], 10, 64)
		if want, ok := m.offers[user]; !ok || want != seq {
			r.fatalf("offer of %s: redis %q, model %v", user, v, m.offers)
		}
		if !r.offered[seq] {
			fresh = append(fresh, seq)
		}
		for _, id := range booking.SplitSeats(parts[2]) {
			if other, dup := inOffer[id]; dup {
				r.fatalf("seat %s in two open offers: %s and %s", id, other, user)
			}
			inOffer[id] = user
			if seats[id] != "h:"+user {
				r.fatalf("seat %s of %s's offer is %q", id, user, seats[id])
			}
		}
	}
	// the offers made since the last step (one step may make several):
	// after every earlier one, in waitlist order
	slices.Sort(fresh)
	for _, seq := range fresh {
		if seq <= r.lastOffered {
			r.fatalf("offer %d after offer %d: out of waitlist order", seq, r.lastOffered)
		}
		r.offered[seq], r.lastOffered = true, seq
	}
	if open != len(m.offers) {
		r.fatalf("open offers: redis %v, model %v", offers, m.offers)
	}
	for i := 1; i < len(m.offerLog); i++ {
		if m.offerLog[i] <= m.offerLog[i-1] {
			r.fatalf("offers out of waitlist order: %v", m.offerLog)
		}
	}
	free := map[string]bool{}
	for id, v := range seats {
		if v == "" {
			free[id] = true
			if r.freeBefore != nil && !r.freeBefore[id] && len(wl) > 0 && m.offerMS > 0 && !m.ended() {
				r.fatalf("seat %s came back on general sale while %d fans wait on the waitlist", id, len(wl))
			}
		}
	}
	r.freeBefore = free
}

// checkAllocations compares the allocations with the model's: each
// seat's channel (alloc), each channel's release time and the seats'
// kinds as the seat map reads them (Store.AccessibleSeats).
func (r *modelRun) checkAllocations(keys []string) {
	ctx, m, c := r.ctx, r.m, r.rdb
	alloc, _ := c.HGetAll(ctx, keys[22]).Result()
	seatsOf := map[string]string{}
	for f, v := range alloc {
		if !strings.HasPrefix(f, " ") {
			seatsOf[f] = v
		}
	}
	if !maps.Equal(seatsOf, m.alloc) {
		r.fatalf("alloc: redis %v, model %v", seatsOf, m.alloc)
	}
	for _, ch := range modelChannels {
		at, _ := c.HGet(ctx, keys[0], "ra:"+ch).Int64()
		if at != m.releaseAt[ch] {
			r.fatalf("release time of %s: redis %d, model %d", ch, at, m.releaseAt[ch])
		}
	}
	acc, err := r.store.AccessibleSeats(ctx, r.event)
	if err != nil || !maps.Equal(acc, m.accessible()) {
		r.fatalf("accessible seats: redis %v %v, model %v", acc, err, m.accessible())
	}
}

// checkNumbers compares every join sequence Redis holds as text with the
// model's, digit for digit: each user's sequence (useq, for users not
// waiting), each payment's record, each outbox entry (every one readable,
// none in exponent form), and the seat map's status string.
func (r *modelRun) checkNumbers(keys []string) {
	ctx, m, c := r.ctx, r.m, r.rdb
	useq, _ := c.HGetAll(ctx, keys[10]).Result()
	for name, u := range m.users {
		if u.state == "" || u.state == booking.StateWaiting {
			continue
		}
		if useq[name] != strconv.FormatInt(u.seq, 10) {
			r.fatalf("user %s: useq %q, model sequence %d", name, useq[name], u.seq)
		}
	}
	pays, _ := c.HGetAll(ctx, keys[14]).Result()
	if len(pays) != len(m.pays) {
		r.fatalf("payment registry has %d ids, model %d", len(pays), len(m.pays))
	}
	for pid, p := range m.pays {
		want := p.user + "|" + strconv.FormatInt(p.seq, 10) + "|" + p.seat + "|" + p.status + "|"
		if !strings.HasPrefix(pays[pid], want) {
			r.fatalf("payment %s: registry %q, model %q…", pid, pays[pid], want)
		}
	}
	out, _ := c.HGetAll(ctx, keys[7]).Result()
	for f, v := range out {
		if strings.Contains(f, "e+") || strings.Contains(v, "e+") {
			r.fatalf("outbox entry %q = %q: a number in exponent form", f, v)
		}
	}
	entries, err := r.store.Outbox(ctx, r.event, 0)
	if err != nil || len(entries) != len(out) {
		r.fatalf("outbox: %d entries read of %d stored: %v", len(entries), len(out), err)
	}
	for _, e := range entries {
		if e.Kind == booking.KindUnreadable {
			r.fatalf("outbox entry unreadable: %q = %q", e.Field, e.Value)
		}
	}
	status, err := r.store.SeatStatuses(ctx, r.event)
	if err != nil || len(status) != modelSeats {
		r.fatalf("seat statuses %q: %v", status, err)
	}
	for i, id := range booking.SeatIDs(1, modelSeats) {
		want := byte(booking.SeatCodeAvailable)
		if v := m.seats[id]; v != "" {
			want = map[byte]byte{'h': booking.SeatCodeHeld, 's': booking.SeatCodeSold, 'r': booking.SeatCodeReserved,
				'k': booking.SeatCodeKilled, 'c': booking.SeatCodeAllocated}[v[0]]
		}
		if status[i] != want {
			r.fatalf("seat map: %s is %q, model %q", id, status[i], m.seats[id])
		}
	}
}

func (r *modelRun) countJoined() int {
	n := 0
	for _, u := range r.m.users {
		if u.state != "" {
			n++
		}
	}
	return n
}

func (p *memPub) PublishBatch(ctx context.Context, out []amqpx.Outgoing) []error {
	return oneByOne(ctx, p, out)
}
