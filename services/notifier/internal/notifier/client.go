package notifier

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// client is one WebSocket connection of one user to one event. Messages are
// enqueued by the hub (never blocking) and written by the connection's own
// goroutine (run), which also pings.
type client struct {
	event, user string
	send        chan []byte

	// ctx ends the connection: cancelled by drop (queue overflow) or when
	// the request's context ends. A Write blocked on a slow peer is
	// interrupted by it (coder/websocket closes the connection), without a
	// goroutine per connection to watch for it.
	ctx    context.Context
	cancel context.CancelFunc
	slow   atomic.Bool
	m      *Metrics
}

func newClient(ctx context.Context, event, user string, queue int, m *Metrics) *client {
	c := &client{event: event, user: user, send: make(chan []byte, queue), m: m}
	c.ctx, c.cancel = context.WithCancel(ctx)
	return c
}

// offer enqueues msg without blocking. A full queue means the client reads
// slower than we send: it is marked dropped and its connection closed by
// run, so that it can reconnect and get its current state.
func (c *client) offer(msg []byte) bool {
	select {
	case c.send <- msg:
		return true
	default:
		if c.slow.CompareAndSwap(false, true) {
			c.m.SlowDropped.Inc()
			c.cancel()
		}
		return false
	}
}

// errShutdown is the cause of the server's base context at shutdown.
var errShutdown = errors.New("notifier shutting down")

// errSlowClient ends a connection whose send queue overflowed.
var errSlowClient = errors.New("slow client: send queue full")

// run writes first (the initial state), then queued messages, and pings
// every pingEvery until the connection closes, ctx ends or the client is
// dropped. It never returns before the connection is closed.
func (c *client) run(conn *websocket.Conn, first []byte, cfg Config) error {
	ctx := c.ctx
	defer c.cancel()
	write := func(msg []byte) error {
		wctx, wcancel := context.WithTimeout(ctx, cfg.WriteTimeout)
		defer wcancel()
		if err := conn.Write(wctx, websocket.MessageText, msg); err != nil {
			return err
		}
		c.m.Sent.Inc()
		return nil
	}
	if err := write(first); err != nil {
		return c.closeErr(conn, err)
	}
	// Spread the pings of connections opened together over the interval.
	ping := time.NewTimer(cfg.PingInterval/2 + rand.N(cfg.PingInterval/2+1))
	defer ping.Stop()
	for {
		select {
		case msg := <-c.send:
			if err := write(msg); err != nil {
				return c.closeErr(conn, err)
			}
		case <-ping.C:
			pctx, pcancel := context.WithTimeout(ctx, cfg.PingTimeout)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil {
				return c.closeErr(conn, err)
			}
			ping.Reset(cfg.PingInterval)
		case <-ctx.Done():
			return c.closeErr(conn, ctx.Err())
		}
	}
}

// closeErr closes the connection for the reason err and returns the reason.
func (c *client) closeErr(conn *websocket.Conn, err error) error {
	if c.slow.Load() {
		// No close handshake: a slow peer would hold the goroutine for the
		// handshake's timeout. The browser sees 1006 and reconnects.
		conn.CloseNow()
		return errSlowClient
	}
	if errors.Is(err, context.Canceled) && context.Cause(c.ctx) == errShutdown {
		// Going away: the client reconnects, through the load balancer, to
		// another instance.
		_ = conn.Close(websocket.StatusGoingAway, "notifier shutting down")
		return err
	}
	conn.CloseNow()
	return err
}
