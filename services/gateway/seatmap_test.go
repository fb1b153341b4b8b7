package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// countCmds counts the commands named name a client sends (the seat map's
// read is a GET); with name "", every command but the connection's own
// handshake (HELLO, CLIENT).
type countCmds struct {
	name string
	n    atomic.Int64
}

func (c *countCmds) count(cmd redis.Cmder) {
	n := cmd.Name()
	if n == c.name || (c.name == "" && n != "hello" && n != "client") {
		c.n.Add(1)
	}
}
func (c *countCmds) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *countCmds) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}
func (c *countCmds) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func TestSeatMapShape(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 3, "capacity": 1})
	hs.createEvent(map[string]any{"id": "odd", "seats": []string{"A1", "A2", "VIP-1", "box"}})
	hs.createEvent(map[string]any{"id": "priced", "currency": "GBP", "sections": []map[string]any{
		{"name": "Floor", "rows": 1, "seats_per_row": 2, "price_cents": 5000},
		{"name": "Balcony", "seats": []string{"B1", "B2", "BOX-1", "BOX-2"}, "price_cents": 3000},
		{"name": "Box", "seats": []string{"BOX-3"}, "price_cents": 9000}}})
	alice := hs.token("alice", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "B2"}), 200, "")

	for _, tc := range []struct{ event, want string }{
		{"e1", `{"event_id":"e1","total":6,"available":5,"held":1,"sold":0,"reserved":0,"killed":0,"allocated":0,"sections":[{"row":"A","first":1,"status":"aaa","section":0},{"row":"B","first":1,"status":"aha","section":0}],
			"currency":"EUR","price_sections":[{"name":"General","price_cents":100,"start":0,"len":6}]}`},
		{"odd", `{"event_id":"odd","total":4,"available":4,"held":0,"sold":0,"reserved":0,"killed":0,"allocated":0,"sections":[{"row":"A","first":1,"status":"aa","section":0},{"seats":["VIP-1","box"],"status":"aa","section":0}],
			"currency":"EUR","price_sections":[{"name":"General","price_cents":100,"start":0,"len":4}]}`},
		// priced sections: a run cut where a section starts
		{"priced", `{"event_id":"priced","total":7,"available":7,"held":0,"sold":0,"reserved":0,"killed":0,"allocated":0,"currency":"GBP",
			"sections":[{"row":"A","first":1,"status":"aa","section":0},{"row":"B","first":1,"status":"aa","section":1},{"seats":["BOX-1","BOX-2"],"status":"aa","section":1},{"seats":["BOX-3"],"status":"a","section":2}],
			"price_sections":[{"name":"Floor","price_cents":5000,"start":0,"len":2},{"name":"Balcony","price_cents":3000,"start":2,"len":4},{"name":"Box","price_cents":9000,"start":6,"len":1}]}`},
	} {
		r := hs.do("GET", "/api/seats/available?event_id="+tc.event, "", nil)
		var got, exp any
		json.Unmarshal([]byte(r.raw), &got)
		json.Unmarshal([]byte(tc.want), &exp)
		if r.code != 200 || !cmp.Equal(got, exp) {
			t.Fatalf("%s: %d %s\nwant %s", tc.event, r.code, r.raw, tc.want)
		}
	}
	want(t, hs.do("GET", "/api/seats/available?event_id=nope", "", nil), 404, "event_not_found")
	want(t, hs.do("GET", "/api/seats/available", "", nil), 400, "invalid_argument")
	want(t, hs.do("POST", "/api/seats/available?event_id=e1", "", nil), 405, "method_not_allowed")
}

// A client that has the map revalidates with its ETag and gets a 304; a
// change (after the snapshot's max age) gives a new ETag.
func TestSeatMapETag(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 3, "capacity": 1})
	w := hs.raw("GET", "/api/seats/available?event_id=e1", nil)
	etag := w.Header().Get("ETag")
	if w.Code != 200 || etag == "" || w.Header().Get("Cache-Control") != "public, max-age=1" {
		t.Fatalf("first read: %d ETag %q Cache-Control %q", w.Code, etag, w.Header().Get("Cache-Control"))
	}
	w = hs.raw("GET", "/api/seats/available?event_id=e1", map[string]string{"If-None-Match": etag})
	if w.Code != http.StatusNotModified || w.Body.Len() != 0 || w.Header().Get("ETag") != etag {
		t.Fatalf("revalidation: %d %q", w.Code, w.Body.String())
	}
	alice := hs.token("alice", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")
	w = hs.raw("GET", "/api/seats/available?event_id=e1", map[string]string{"If-None-Match": `"other", ` + etag})
	if w.Code != 200 || w.Header().Get("ETag") == etag {
		t.Fatalf("after a change: %d ETag %q (was %q)", w.Code, w.Header().Get("ETag"), etag)
	}
}

// However many clients read the map at once, Redis is read about once per
// max age per event: 64 concurrent readers of a 40,000-seat map, then 64
// more while the snapshot is fresh, cost one GET.
func TestSeatMapReadsRedisOncePerMaxAge(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "big", "rows": 200, "seats_per_row": 200})
	counter := &countCmds{name: "get"}
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(counter)
	hs.srv.Store = booking.New(rdb, booking.WithPrefix(hs.store.Prefix()))
	hs.srv.SeatMapMaxAge = time.Hour // no refresh during the test, however slow the machine
	for round := range 2 {
		var wg sync.WaitGroup
		var bad atomic.Int64
		for range 64 {
			wg.Go(func() {
				if w := hs.raw("GET", "/api/seats/available?event_id=big", nil); w.Code != 200 || w.Body.Len() < 40_000 {
					bad.Add(1)
				}
			})
		}
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("round %d: %d failed reads", round, bad.Load())
		}
	}
	if n := counter.n.Load(); n != 1 {
		t.Fatalf("%d GETs of the status string for 128 reads, want 1", n)
	}
}

// raw sends a request and returns the recorder (headers and body as sent).
func (hs *harness) raw(method, path string, headers map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, req)
	return w
}

// rawVia sends a request through another handler of the same server.
func (hs *harness) rawVia(h fasthttp.RequestHandler, method, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	w := httptest.NewRecorder()
	fastserver.ServeRequest(h, w, req)
	return w
}
