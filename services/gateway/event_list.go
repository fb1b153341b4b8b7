package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/popularity"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// The event list (GET /api/events) and the ranking (GET
// /api/events/popular) are anonymous, so their Redis cost must not grow
// with readers, nor with the query strings a client can invent. They are
// snapshots (snapshot.go) built from snapshots:
//
//   - the index: the sorted event ids (one SMEMBERS);
//   - one per event: its JSON as the list shows it (one Store.GetEvent,
//     the script that reads its live counts), read only when a page or
//     the ranking names it;
//   - the ranking: the top popularRankMax (one ZREVRANGE);
//   - the answers: a page of the list, by limit and its first event id
//     (any after= falls between two ids of the index, so a client's
//     invented cursors all name existing pages), and the ranking, by
//     limit. Each is encoded and gzip-compressed once.
//
// Every snapshot is refreshed at most once per EventListMaxAge with one
// read in flight, so Redis sees, per second and per gateway, one SMEMBERS,
// one ZREVRANGE and one GetEvent per event named by a page or the ranking
// that was read in that second, however many clients read and whatever
// they ask. An answer may be up to two max ages old (an answer built from
// an event snapshot just before that expired).

// defaultEventListMaxAge is how old a served event list or ranking may be.
const defaultEventListMaxAge = time.Second

// Pages of GET /api/events.
const (
	eventsPageDefault = 50
	eventsPageMax     = 100
)

// Limits of GET /api/events/popular.
const (
	popularDefault = 10
	popularRankMax = 100
)

// maxEventPages bounds the pages of the list kept per gateway: the keys
// are the clients' to choose (a limit and a place in the list), and a
// page holds up to eventsPageMax events.
const maxEventPages = 128

// listedEvent is an event as the list shows it, encoded, and its name
// (for the ranking).
type listedEvent struct {
	name string
	json []byte
}

// listPage is what a snapshot of a list page or the ranking keeps besides
// its document: nothing.
type listPage struct{}

func (s *Server) eventListMaxAge() time.Duration {
	if s.EventListMaxAge > 0 {
		return s.EventListMaxAge
	}
	return defaultEventListMaxAge
}

// listEvents: GET /api/events?limit=N&after=<event id>, by event id, one
// page at a time: {"events":[…],"next":"<id>"} with next set when more
// follow (pass it as after).
func (s *Server) listEvents(c *fastserver.Ctx) {
	limit, ok := fastLimit(c, eventsPageDefault, eventsPageMax)
	if !ok {
		return
	}
	maxAge := s.eventListMaxAge()
	index, err := s.eventIndex.get(c.Context(), "", maxAge, func(ctx context.Context, _ *snapshot[[]string]) (*snapshot[[]string], error) {
		start := time.Now()
		ids, err := s.Store.EventIDs(ctx) // sorted
		if err != nil {
			return nil, err
		}
		return &snapshot[[]string]{at: start, v: ids}, nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	ids := index.v
	first := 0
	if after := c.Query("after"); after != "" {
		first = sort.SearchStrings(ids, after+"\x00") // strictly after
	}
	ids = ids[first:]
	key := strconv.Itoa(limit) + ":" // the page past the last event
	if len(ids) > 0 {
		key += ids[0]
	}
	page, err := s.eventPages.get(c.Context(), key, maxAge, func(ctx context.Context, _ *snapshot[listPage]) (*snapshot[listPage], error) {
		return s.readEventsPage(ctx, ids, limit, maxAge)
	})
	if err != nil {
		c.Fail(err)
		return
	}
	serveSnapshot(c, page, maxAge)
}

// readEventsPage encodes the page of up to limit events from ids (an
// event deleted since the index was read is left out and the next one
// taken).
func (s *Server) readEventsPage(ctx context.Context, ids []string, limit int, maxAge time.Duration) (*snapshot[listPage], error) {
	start := time.Now()
	var b bytes.Buffer
	b.WriteString(`{"events":[`)
	n, last := 0, ""
	for len(ids) > 0 && n < limit {
		batch := ids[:min(len(ids), limit-n)]
		evs, err := s.listedEvents(ctx, batch, maxAge)
		if err != nil {
			return nil, err
		}
		for i, e := range evs {
			if e == nil {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.Write(e.json)
			n++
			last = batch[i]
		}
		ids = ids[len(batch):]
	}
	b.WriteByte(']')
	if len(ids) > 0 {
		next, _ := json.Marshal(last)
		b.WriteString(`,"next":`)
		b.Write(next)
	}
	b.WriteByte('}')
	return newSnapshot(start, b.Bytes(), listPage{}), nil
}

// listedEvents returns the snapshots of ids' events, read concurrently;
// an event that does not exist is nil.
func (s *Server) listedEvents(ctx context.Context, ids []string, maxAge time.Duration) ([]*listedEvent, error) {
	out := make([]*listedEvent, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, id := range ids {
		g.Go(func() error {
			snap, err := s.eventEntries.get(gctx, id, maxAge, func(ctx context.Context, _ *snapshot[listedEvent]) (*snapshot[listedEvent], error) {
				start := time.Now()
				e, err := s.Store.GetEvent(ctx, id)
				if err != nil {
					return nil, err
				}
				body, err := json.Marshal(s.priced(viewOf(e)))
				if err != nil {
					return nil, err
				}
				return &snapshot[listedEvent]{at: start, v: listedEvent{name: e.Name, json: body}}, nil
			})
			switch {
			case errors.Is(err, booking.ErrEventNotFound):
				return nil
			case err != nil:
				return err
			}
			out[i] = &snap.v
			return nil
		})
	}
	return out, g.Wait()
}

// popularEntry is one event of GET /api/events/popular.
type popularEntry struct {
	EventID  string `json:"event_id"`
	Name     string `json:"name,omitempty"`
	Bookings int64  `json:"bookings"`
}

// popularEvents: GET /api/events/popular?limit=N, by completed bookings.
func (s *Server) popularEvents(c *fastserver.Ctx) {
	limit, ok := fastLimit(c, popularDefault, popularRankMax)
	if !ok {
		return
	}
	maxAge := s.eventListMaxAge()
	page, err := s.popularPages.get(c.Context(), strconv.Itoa(limit), maxAge, func(ctx context.Context, _ *snapshot[listPage]) (*snapshot[listPage], error) {
		start := time.Now()
		rank, err := s.ranking.get(ctx, "", maxAge, func(ctx context.Context, _ *snapshot[[]popularity.Entry]) (*snapshot[[]popularity.Entry], error) {
			start := time.Now()
			top, err := popularity.Top(ctx, s.Redis, s.Prefix, popularRankMax)
			if err != nil {
				return nil, err
			}
			return &snapshot[[]popularity.Entry]{at: start, v: top}, nil
		})
		if err != nil {
			return nil, err
		}
		top := rank.v[:min(limit, len(rank.v))]
		ids := make([]string, len(top))
		for i, t := range top {
			ids[i] = t.EventID
		}
		evs, err := s.listedEvents(ctx, ids, maxAge)
		if err != nil {
			return nil, err
		}
		out := make([]popularEntry, len(top))
		for i, t := range top {
			out[i] = popularEntry{EventID: t.EventID, Bookings: t.Bookings}
			if evs[i] != nil {
				out[i].Name = evs[i].name
			}
		}
		body, err := json.Marshal(map[string]any{"events": out})
		if err != nil {
			return nil, err
		}
		return newSnapshot(start, body, listPage{}), nil
	})
	if err != nil {
		c.Fail(err)
		return
	}
	serveSnapshot(c, page, maxAge)
}

// fastLimit reads ?limit= (def when absent); false when it answered 400.
func fastLimit(c *fastserver.Ctx, def, most int) (int, bool) {
	n, err := parseLimit(c.Query("limit"), def, most)
	if err != nil {
		c.Abort(http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
		return 0, false
	}
	return n, true
}
