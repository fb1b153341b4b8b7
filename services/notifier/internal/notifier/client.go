package notifier

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// client is one WebSocket connection of one user to one event.
//
// It has three queues, written in this order: messages addressed to the
// user (your_turn, expired, …: never wait behind broadcasts), broadcast
// notifications (sold_out, seats_changed: kept in order), and the latest
// position broadcast (a single slot: a newer tick replaces an unsent one,
// since only the latest counts matter). Enqueueing never blocks.
//
// An idle connection has no goroutine of its own besides coder/websocket's
// reader (CloseRead): a writer goroutine (flush) is started when a message
// is enqueued on an idle connection and exits when the queues are empty;
// pings run from a timer. This keeps tens of thousands of idle connections
// at one small stack each.
type client struct {
	event, user string
	ip          string // peer address, for the per-address cap
	limit       int    // prio+bcast beyond this: slow client
	cfg         *Config
	m           *Metrics
	hub         *Hub

	// ctx ends the connection: cancelled by drop (queue overflow), a failed
	// write or ping, the peer closing, or the server's shutdown. Its end
	// closes the connection (finish) and interrupts a blocked write.
	ctx    context.Context
	cancel context.CancelFunc
	slow   atomic.Bool

	mu      sync.Mutex
	conn    *websocket.Conn // nil until the upgrade; messages queue meanwhile
	prio    [][]byte
	bcast   [][]byte
	pos     []byte
	writing bool // a flush goroutine runs
	closed  bool
	ping    *time.Timer
}

func newClient(ctx context.Context, event, user string, cfg *Config, m *Metrics, hub *Hub) *client {
	c := &client{event: event, user: user, limit: cfg.SendQueue, cfg: cfg, m: m, hub: hub}
	c.ctx, c.cancel = context.WithCancel(ctx)
	return c
}

// Message classes of offer.
const (
	lanePrio  = iota // addressed to the user
	laneBcast        // broadcast notification, kept in order
	lanePos          // position tick, coalesced
)

// offer enqueues msg without blocking and starts a writer when none runs.
// A backlog of more than limit messages (targeted plus broadcast) means the
// client reads slower than we send: it is marked dropped and its connection
// closed, so that it can reconnect and get its current state.
func (c *client) offer(msg []byte, lane int) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	switch lane {
	case lanePos:
		c.pos = msg
	default:
		if len(c.prio)+len(c.bcast) >= c.limit {
			c.mu.Unlock()
			if c.slow.CompareAndSwap(false, true) {
				c.m.SlowDropped.Inc()
				c.cancel()
			}
			return false
		}
		if lane == lanePrio {
			c.prio = append(c.prio, msg)
			c.hub.pendingTargeted.Add(1)
		} else {
			c.bcast = append(c.bcast, msg)
		}
	}
	start := c.conn != nil && !c.writing
	if start {
		c.writing = true
	}
	c.mu.Unlock()
	if start {
		go c.flush(nil)
	}
	return true
}

// next pops the next message to write, or returns nil and marks the writer
// stopped.
func (c *client) next() (msg []byte, targeted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
	case len(c.prio) > 0:
		msg, c.prio[0] = c.prio[0], nil
		c.prio = c.prio[1:]
		if len(c.prio) == 0 {
			c.prio = nil
		}
		return msg, true
	case len(c.bcast) > 0:
		msg, c.bcast[0] = c.bcast[0], nil
		c.bcast = c.bcast[1:]
		if len(c.bcast) == 0 {
			c.bcast = nil
		}
		return msg, false
	case c.pos != nil:
		msg, c.pos = c.pos, nil
		return msg, false
	}
	c.writing = false
	return nil, false
}

// errShutdown is the cause of the server's base context at shutdown.
var errShutdown = errors.New("notifier shutting down")

// errSlowClient ends a connection whose send queue overflowed.
var errSlowClient = errors.New("slow client: send queue full")

// start hands the upgraded connection to the client: it writes first (the
// initial state), then whatever was queued meanwhile, and arms the ping
// timer. onEnd runs once when the connection has been closed.
func (c *client) start(conn *websocket.Conn, first []byte, onEnd func(error)) {
	c.mu.Lock()
	c.conn = conn
	c.writing = true
	// Spread the pings of connections opened together over the interval.
	c.ping = time.AfterFunc(c.cfg.PingInterval/2+rand.N(c.cfg.PingInterval/2+1), c.pingOnce)
	c.mu.Unlock()
	context.AfterFunc(c.ctx, func() { onEnd(c.finish()) })
	go c.flush(first)
}

// flush writes queued messages until the queues are empty or a write
// fails.
func (c *client) flush(first []byte) {
	if first != nil && !c.write(first) {
		return
	}
	for {
		msg, targeted := c.next()
		if msg == nil {
			return
		}
		ok := c.write(msg)
		if targeted {
			c.hub.pendingTargeted.Add(-1)
		}
		if !ok {
			return
		}
	}
}

// write writes one message; a failure ends the connection.
func (c *client) write(msg []byte) bool {
	wctx, wcancel := context.WithTimeout(c.ctx, c.cfg.WriteTimeout)
	err := c.conn.Write(wctx, websocket.MessageText, msg)
	wcancel()
	if err != nil {
		c.cancel()
		return false
	}
	c.m.Sent.Inc()
	return true
}

// pingOnce pings from the timer's goroutine; a missing pong ends the
// connection. coder/websocket serialises it with a concurrent write.
func (c *client) pingOnce() {
	pctx, pcancel := context.WithTimeout(c.ctx, c.cfg.PingTimeout)
	err := c.conn.Ping(pctx)
	pcancel()
	if err != nil {
		c.cancel()
		return
	}
	c.mu.Lock()
	if !c.closed {
		c.ping.Reset(c.cfg.PingInterval)
	}
	c.mu.Unlock()
}

// discard stops intake, forgets queued messages and returns the connection
// (nil before the upgrade). The client must not be used for writing after.
func (c *client) discard() *websocket.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.hub.pendingTargeted.Add(-int64(len(c.prio)))
	c.prio, c.bcast, c.pos = nil, nil, nil
	if c.ping != nil {
		c.ping.Stop()
	}
	return c.conn
}

// finish runs once c.ctx ended: it stops intake, forgets queued messages,
// closes the connection for the reason and returns the reason.
func (c *client) finish() error {
	conn := c.discard()
	if c.slow.Load() {
		// No close handshake: a slow peer would hold the goroutine for the
		// handshake's timeout. The browser sees 1006 and reconnects.
		conn.CloseNow()
		return errSlowClient
	}
	if context.Cause(c.ctx) == errShutdown {
		// Going away: the client reconnects, through the load balancer, to
		// another instance.
		_ = conn.Close(websocket.StatusGoingAway, "notifier shutting down")
		return errShutdown
	}
	conn.CloseNow()
	return context.Cause(c.ctx)
}
