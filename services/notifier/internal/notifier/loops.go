package notifier

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"go.uber.org/zap"
)

// Run runs the position broadcast and the presence loop until ctx ends,
// then closes every connection (Shutdown).
func (s *Server) Run(ctx context.Context) error {
	defer s.Shutdown()
	pos := time.NewTicker(s.cfg.PositionInterval)
	defer pos.Stop()
	pres := time.NewTicker(s.cfg.PresenceInterval)
	defer pres.Stop()
	last := map[string]Tick{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-pos.C:
			s.BroadcastPositions(ctx, last)
		case <-pres.C:
			s.TouchPresent(ctx)
		}
	}
}

// Tick is what a position broadcast says of an event: its counts and
// whether its sale is paused.
type Tick struct {
	Counts booking.Counts
	Paused bool
}

// BroadcastPositions does one position tick: per event with connections,
// one event read and one marshal, then a non-blocking enqueue per
// connection. last (may be nil) holds the previous tick of each event; an
// event whose tick did not change is skipped.
func (s *Server) BroadcastPositions(ctx context.Context, last map[string]Tick) {
	events := s.hub.Events()
	live := make(map[string]bool, len(events))
	for _, ev := range events {
		live[ev] = true
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		e, err := s.store.GetEvent(cctx, ev)
		cancel()
		if err != nil {
			if !errors.Is(err, booking.ErrEventNotFound) {
				s.log.Warn("position tick: read counts", zap.String("event_id", ev), zap.Error(err))
			}
			continue
		}
		tick := Tick{Counts: e.Counts, Paused: e.Paused}
		if last != nil {
			if prev, ok := last[ev]; ok && prev == tick {
				continue
			}
			last[ev] = tick
		}
		msg, _ := json.Marshal(positionUpdate(ev, tick, s.now()))
		s.hub.BroadcastPaced(ctx, ev, msg, broadcastChunk, s.broadcastPause(len(events)))
		s.m.PositionTicks.Inc()
	}
	for ev := range last {
		if !live[ev] {
			delete(last, ev)
		}
	}
}

// broadcastChunk is how many connections a paced broadcast enqueues at
// once: small, so that a targeted message arriving mid-tick waits behind at
// most a few hundred writes.
const broadcastChunk = 250

// broadcastPause is the pause between chunks: 5 ms (50,000 connections a
// second), less when there are so many connections that a tick would not
// finish within half the interval.
func (s *Server) broadcastPause(events int) time.Duration {
	chunks := s.hub.Len()/broadcastChunk + events
	return min(5*time.Millisecond, s.cfg.PositionInterval/2/time.Duration(max(1, chunks)))
}

// presenceChunk bounds one Touch call (touch.lua with this many users).
const presenceChunk = 10_000

// TouchPresent marks every connected user present: one Touch per event
// (per presenceChunk users).
func (s *Server) TouchPresent(ctx context.Context) {
	for _, ev := range s.hub.Events() {
		users := s.hub.Users(ev)
		for len(users) > 0 {
			n := min(len(users), presenceChunk)
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := s.store.Touch(tctx, ev, users[:n]...)
			cancel()
			if err != nil {
				s.log.Warn("presence: touch", zap.String("event_id", ev), zap.Error(err))
				break
			}
			s.m.PresenceTouched.Add(float64(n))
			users = users[n:]
		}
	}
}

// Deliver routes one notification body to this instance's connections:
// those of (event, user), or every connection of the event when the
// notification names no user. The body is forwarded as it came.
func (s *Server) Deliver(body []byte) (int, error) {
	n, err := messages.DecodeNotification(body)
	if err != nil {
		return 0, err
	}
	s.m.Received.WithLabelValues(n.Type).Inc()
	if n.UserID == "" {
		return s.hub.Broadcast(n.EventID, body), nil
	}
	return s.hub.SendUser(n.EventID, n.UserID, body), nil
}

// HandleNotification is the amqpx handler of the per-instance fanout
// queue. Delivery to a WebSocket is best effort (a client not connected
// here is someone else's, or gets its state when it reconnects), so only a
// malformed message is an error.
func (s *Server) HandleNotification(_ context.Context, d amqpx.Delivery) error {
	if _, err := s.Deliver(d.Body); err != nil {
		return amqpx.Permanent(err)
	}
	return nil
}
