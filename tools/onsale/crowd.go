package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/boxoffice/boxoffice/pkg/chance"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// The waiting crowd: each user's join, the progress polls, the hand-over
// of served users to the buyers, and the sample holding a WebSocket.

// join is user i's POST /api/booking/request; it returns the status
// (queued, active), "" when it failed.
func (s *sim) join(i int) string {
	var j struct {
		Status   string          `json:"status"`
		Sequence int64           `json:"sequence"`
		Receipt  json.RawMessage `json:"receipt"`
		Code     string          `json:"code"`
	}
	t0 := time.Now()
	code, _, err := s.call("POST", "/api/booking/request", s.token(i), map[string]string{"event_id": s.c.EventID}, nil, &j)
	s.r.Join.add(time.Since(t0))
	if err != nil || code != http.StatusOK {
		s.r.fail("join", code, j.Code, err)
		return ""
	}
	s.r.Joined.Add(1)
	if len(j.Receipt) > 0 {
		s.r.Receipts.Add(1)
	}
	s.seqs[i].Store(j.Sequence)
	switch j.Status {
	case "active":
		s.r.JoinedActive.Add(1)
		s.handOver(i)
	case "queued":
		if j.Sequence > 0 && j.Sequence < int64(len(s.bySeq)) {
			s.bySeq[j.Sequence].Store(int32(i + 1))
		}
		s.cal.queued(i)
		// the dispatcher may have passed this sequence before it was known
		if j.Sequence <= s.cursor.Load() {
			s.handOver(i)
		}
	default:
		s.r.fail("join", code, "status "+j.Status, nil)
		return ""
	}
	return j.Status
}

// handOver gives user i to the buyers (once).
func (s *sim) handOver(i int) {
	if s.dispatched[i].CompareAndSwap(false, true) {
		s.busy.Add(1)
		s.exact <- i
	}
}

// poll is one of the waiting crowd's pollers: the progress document,
// revalidated with its ETag.
func (s *sim) poll(ctx context.Context) {
	path := "/api/events/" + url.PathEscape(s.c.EventID) + "/progress"
	etag := ""
	tick := time.NewTicker(s.c.PollEvery)
	defer tick.Stop()
	for {
		var p struct {
			Served  int64         `json:"served"`
			Waiting int64         `json:"waiting"`
			SoldOut bool          `json:"sold_out"`
			Chance  chance.Params `json:"chance"`
		}
		hdr := map[string]string{}
		if etag != "" {
			hdr["If-None-Match"] = etag
		}
		t0 := time.Now()
		code, h, err := s.call("GET", path, "", nil, hdr, &p)
		s.r.Progress.add(time.Since(t0))
		switch {
		case err == nil && code == http.StatusOK:
			s.r.ProgressPolls.Add(1)
			etag = h.Get("ETag")
			for {
				cur := s.served.Load()
				if p.Served <= cur || s.served.CompareAndSwap(cur, p.Served) {
					break
				}
			}
			s.waiting.Store(p.Waiting)
			if p.SoldOut {
				s.soldOut.Store(true)
			}
			s.cal.polled(&progressDoc{Served: p.Served, Chance: p.Chance}, s.seqs)
		case err == nil && code == http.StatusNotModified:
			s.r.ProgressPolls.Add(1)
			s.r.Progress304.Add(1)
			s.cal.polled(nil, s.seqs)
		default:
			s.r.fail("progress", code, "", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// dispatch hands every user whose sequence the progress document shows
// served to the buyers, who read its exact position: a waiting page does
// the same when its sequence is served.
func (s *sim) dispatch(ctx context.Context) {
	for ctx.Err() == nil {
		served := min(s.served.Load(), int64(len(s.bySeq)-1))
		from := s.cursor.Load() + 1
		s.cursor.Store(served) // before the scan: a join after it sees the cursor
		for q := from; q <= served; q++ {
			if u := s.bySeq[q].Load(); u > 0 {
				s.handOver(int(u - 1))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdSocket is a sampled waiting user on the notifier's WebSocket: the
// delay from its admission (the hold's deadline minus the hold) to the
// your_turn message.
func (s *sim) holdSocket(ctx context.Context, i int) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, _, err := websocket.Dial(dctx, s.c.Notifier+"?event_id="+url.QueryEscape(s.c.EventID),
		&websocket.DialOptions{Subprotocols: []string{"boxoffice.v1", "bearer." + s.token(i)}})
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.r.fail("websocket", 0, "", err)
		}
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	s.r.Sockets.Add(1)
	waited := false
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				s.r.fail("websocket", 0, "", err)
			}
			return
		}
		var m messages.Notification
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Type {
		case messages.NotifyPosition:
			waited = true
		case messages.NotifyYourTurn:
			if waited && m.ExpireAtMS > 0 {
				s.r.YourTurn.add(time.Since(time.UnixMilli(m.ExpireAtMS).Add(-s.c.Hold)))
			}
			return
		case messages.NotifySoldOut, messages.NotifyExpired:
			return
		}
	}
}
