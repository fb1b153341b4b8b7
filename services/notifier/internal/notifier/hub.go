// Package notifier is the WebSocket notifier: it keeps the browser
// connections of waiting and admitted users, delivers the notifications that
// every instance receives on its own queue bound to the notifications fanout
// exchange, broadcasts one position update per event per tick (work
// independent of the number of waiting users), and reports connected users
// as present so that abandonment does not drop them.
//
// Connections live only in this process: an instance delivers a
// notification to its own connections of the (event, user) and ignores the
// rest, so any number of instances can run behind a load balancer without
// sticky sessions. A slow client never blocks delivery: each connection has
// a bounded send queue, and a connection whose queue is full is dropped.
package notifier

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Hub indexes the live connections by event and user. Sends never block:
// they enqueue on each connection's bounded queue.
type Hub struct {
	mu     sync.RWMutex
	events map[string]*eventConns
	total  int            // connections, for the instance's cap
	perIP  map[string]int // connections by client address
	m      *Metrics

	// pendingTargeted counts the messages addressed to one user that are
	// queued or being written; paced broadcasts hold back while it is not
	// zero, so that a burst of your_turn gets the CPU first.
	pendingTargeted atomic.Int64
	// lastTargeted is when (unix nanos) the last targeted message was
	// enqueued: they come in bursts (one per admitted user), and a burst
	// is not over when the first messages of it have been written.
	lastTargeted atomic.Int64
}

type eventConns struct {
	users map[string]map[*client]struct{}
	n     int
}

// NewHub returns an empty hub.
func NewHub(m *Metrics) *Hub {
	return &Hub{events: map[string]*eventConns{}, m: m}
}

func (h *Hub) addLocked(c *client) {
	ec := h.events[c.event]
	if ec == nil {
		ec = &eventConns{users: map[string]map[*client]struct{}{}}
		h.events[c.event] = ec
	}
	set := ec.users[c.user]
	if set == nil {
		set = map[*client]struct{}{}
		ec.users[c.user] = set
	}
	set[c] = struct{}{}
	ec.n++
	h.total++
	if c.ip != "" {
		if h.perIP == nil {
			h.perIP = map[string]int{}
		}
		h.perIP[c.ip]++
	}
	h.m.Connections.Inc()
}

// addCapped adds c unless that would exceed a cap (<= 0: none): the
// instance's total, c's user's connections to c's event, or c's address's
// connections. It returns why it refused, or "" when c was added.
func (h *Hub) addCapped(c *client, total, perUser, perIP int) refusal {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case total > 0 && h.total >= total:
		return refusedTotal
	case perUser > 0 && h.events[c.event] != nil && len(h.events[c.event].users[c.user]) >= perUser:
		return refusedPerUser
	case perIP > 0 && c.ip != "" && h.perIP[c.ip] >= perIP:
		return refusedPerIP
	}
	h.addLocked(c)
	return ""
}

func (h *Hub) remove(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ec := h.events[c.event]
	if ec == nil {
		return
	}
	set := ec.users[c.user]
	if _, ok := set[c]; !ok {
		return
	}
	delete(set, c)
	ec.n--
	h.total--
	if c.ip != "" {
		if h.perIP[c.ip]--; h.perIP[c.ip] <= 0 {
			delete(h.perIP, c.ip)
		}
	}
	h.m.Connections.Dec()
	if len(set) == 0 {
		delete(ec.users, c.user)
	}
	if ec.n == 0 {
		delete(h.events, c.event)
	}
}

// SendUser enqueues msg on every connection of (event, user) and returns
// how many connections got it.
func (h *Hub) SendUser(event, user string, msg []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ec := h.events[event]
	if ec == nil {
		return 0
	}
	h.lastTargeted.Store(time.Now().UnixNano())
	n := 0
	for c := range ec.users[user] {
		if c.offer(msg, lanePrio) {
			n++
		}
	}
	return n
}

// Broadcast enqueues msg on every connection of event, after any message
// addressed to the connection's user and in order with other broadcasts,
// and returns how many connections got it. The same bytes go to every
// connection; the hub's lock is not held while enqueueing.
func (h *Hub) Broadcast(event string, msg []byte) int {
	n := 0
	for _, c := range h.snapshot(event) {
		if c.offer(msg, laneBcast) {
			n++
		}
	}
	return n
}

// Events returns the ids of the events with at least one connection.
func (h *Hub) Events() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]string, 0, len(h.events))
	for id := range h.events {
		out = append(out, id)
	}
	return out
}

// Users returns the users with at least one connection to event.
func (h *Hub) Users(event string) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ec := h.events[event]
	if ec == nil {
		return nil
	}
	out := make([]string, 0, len(ec.users))
	for u := range ec.users {
		out = append(out, u)
	}
	return out
}

// Len returns the number of connections.
func (h *Hub) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, ec := range h.events {
		n += ec.n
	}
	return n
}

// snapshot returns the connections of event.
func (h *Hub) snapshot(event string) []*client {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ec := h.events[event]
	if ec == nil {
		return nil
	}
	out := make([]*client, 0, ec.n)
	for _, set := range ec.users {
		for c := range set {
			out = append(out, c)
		}
	}
	return out
}

// BroadcastPaced enqueues a position update (msg) on every connection of
// event, chunk connections at a time with a pause between chunks, replacing
// any position update a connection has not written yet. A tick to tens of
// thousands of connections would otherwise wake every connection's writer
// at once and delay the "your turn" messages behind them on a busy CPU; for
// the same reason a chunk waits (at most holdMax) while messages addressed
// to users are pending.
func (h *Hub) BroadcastPaced(ctx context.Context, event string, msg []byte, chunk int, pause time.Duration) int {
	conns := h.snapshot(event)
	n := 0
	for i, c := range conns {
		if i%chunk == 0 {
			if i > 0 && pause > 0 && !sleep(ctx, pause) {
				return n
			}
			if !h.waitTargeted(ctx) {
				return n
			}
		}
		if c.offer(msg, lanePos) {
			n++
		}
	}
	return n
}

// holdMax bounds how long one broadcast chunk waits for targeted messages,
// so that constant targeted traffic cannot starve position updates;
// holdQuiet is how long after the last targeted message a burst is
// considered over.
const (
	holdMax   = 200 * time.Millisecond
	holdQuiet = 20 * time.Millisecond
)

// waitTargeted waits until no targeted message is pending and none came
// for holdQuiet (at most holdMax); false when ctx ended.
func (h *Hub) waitTargeted(ctx context.Context) bool {
	start := time.Now()
	busy := func(now time.Time) bool {
		return h.pendingTargeted.Load() > 0 || now.UnixNano()-h.lastTargeted.Load() < int64(holdQuiet)
	}
	for now := start; busy(now) && now.Sub(start) < holdMax; now = time.Now() {
		if !sleep(ctx, time.Millisecond) {
			return false
		}
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
