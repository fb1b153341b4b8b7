package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/popularity"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// listHarness is a harness with n events (ev00, ev01, …), each of the
// first ten ranked by completed bookings, and a server whose Store and
// Redis count their commands.
func listHarness(t *testing.T, n int) (*harness, *countCmds) {
	hs := newHarness(t, false)
	for i := range n {
		hs.createEvent(map[string]any{"id": fmt.Sprintf("ev%02d", i), "name": fmt.Sprintf("Show %d", i), "rows": 1, "seats_per_row": 2})
	}
	ctx := context.Background()
	for i := range min(n, 10) {
		if err := hs.srv.Redis.ZAdd(ctx, popularity.RankingKey(hs.srv.Prefix), redis.Z{Score: float64(100 - i), Member: fmt.Sprintf("ev%02d", i)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	counter := &countCmds{}
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(counter)
	hs.srv.Store = booking.New(rdb, booking.WithPrefix(hs.store.Prefix()))
	hs.srv.Redis = rdb
	return hs, counter
}

// The reads of the event list and the ranking an anonymous client can
// send: pages, invented cursors (each falls between two events, so it
// names an existing page), the ranking at several limits.
func listQueries(i int) string {
	return []string{
		"/api/events", "/api/events?limit=100", "/api/events?limit=7&after=ev05",
		fmt.Sprintf("/api/events?limit=7&after=ev05%c", 'a'+i%26), // the page of after=ev05
		"/api/events?after=zzz", "/api/events/popular", "/api/events/popular?limit=100",
		fmt.Sprintf("/api/events/popular?limit=%d", 1+i%100),
	}[i%8]
}

// However many clients read the event list and the ranking, and whatever
// they ask, each gateway reads Redis once per event and max age: with 30
// events, 2×400 concurrent reads of pages, invented cursors and rankings
// cost one SMEMBERS of the index, one ZREVRANGE of the ranking and one
// read of each event's counts, all in the first round.
func TestEventListReadsRedisOncePerMaxAge(t *testing.T) {
	const events = 30
	hs, counter := listHarness(t, events)
	hs.srv.EventListMaxAge = time.Hour // no refresh during the test, however slow the machine
	for round := range 2 {
		var wg sync.WaitGroup
		var bad atomic.Int64
		for i := range 400 {
			wg.Go(func() {
				if w := hs.raw("GET", listQueries(i), nil); w.Code != 200 {
					bad.Add(1)
				}
			})
		}
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("round %d: %d failed reads", round, bad.Load())
		}
		if n := counter.n.Load(); n != events+2 {
			t.Fatalf("after round %d: %d Redis commands for %d reads, want %d (the index, the ranking, one per event)", round, n, 400*(round+1), events+2)
		}
	}
	if n := hs.srv.eventPages.size(); n > maxEventPages {
		t.Fatalf("%d pages kept, bound %d", n, maxEventPages)
	}
	// an invented cursor is the page of the event before it
	a, b := hs.raw("GET", "/api/events?limit=7&after=ev05", nil), hs.raw("GET", "/api/events?limit=7&after=ev05q", nil)
	if a.Body.String() != b.Body.String() || !strings.Contains(a.Body.String(), `"id":"ev06"`) || !strings.Contains(a.Body.String(), `"next":"ev12"`) {
		t.Fatalf("after=ev05: %s\nafter=ev05q: %s", a.Body, b.Body)
	}
	if w := hs.raw("GET", "/api/events?after=zzz", nil); w.Body.String() != `{"events":[]}` {
		t.Fatalf("past the last event: %s", w.Body)
	}
}

// With the default max age (a second), a stream of reads costs at most
// one refresh's commands per second, not per read.
func TestEventListRedisCostPerSecond(t *testing.T) {
	const events = 20
	hs, counter := listHarness(t, events)
	hs.srv.EventListMaxAge = 0 // the default
	start := time.Now()
	var reads atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; time.Since(start) < 2500*time.Millisecond; i += 8 {
				if w := hs.raw("GET", listQueries(i), nil); w.Code != 200 {
					t.Errorf("%s: %d %s", listQueries(i), w.Code, w.Body)
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	refreshes := int64(time.Since(start)/defaultEventListMaxAge) + 1
	perRefresh := int64(events + 2)
	if n := counter.n.Load(); n > refreshes*perRefresh {
		t.Fatalf("%d Redis commands for %d reads in %s: more than %d refreshes of %d", n, reads.Load(), time.Since(start), refreshes, perRefresh)
	}
	if reads.Load() < 10*refreshes {
		t.Logf("only %d reads in %d refreshes: the bound was barely tested", reads.Load(), refreshes)
	}
}

// Every snapshot route sends its prepared gzip encoding to a client that
// accepts it: the same bytes once decompressed, its own ETag, Vary:
// Accept-Encoding; If-None-Match with either ETag is a bodiless 304.
func TestSnapshotsGzip(t *testing.T) {
	hs, _ := listHarness(t, 12)
	hs.createEvent(map[string]any{"id": "big", "rows": 20, "seats_per_row": 50, "capacity": 1})
	for _, tc := range []struct {
		path string
		gzip bool // large enough for gzip to be smaller
	}{
		{"/api/seats/available?event_id=big", true},
		{"/api/events", true},
		{"/api/events?limit=3&after=ev02", true},
		{"/api/events/popular?limit=10", true},
		{"/api/events/big/progress", false},
	} {
		plain := hs.raw("GET", tc.path, nil)
		if plain.Code != 200 || plain.Header().Get("Content-Encoding") != "" || !strings.Contains(plain.Header().Get("Vary"), "Accept-Encoding") ||
			plain.Header().Get("ETag") == "" || plain.Header().Get("Cache-Control") != "public, max-age=1" {
			t.Fatalf("%s without Accept-Encoding: %d %v", tc.path, plain.Code, plain.Header())
		}
		zipped := hs.raw("GET", tc.path, map[string]string{"Accept-Encoding": "br, gzip"})
		h := zipped.Header()
		if zipped.Code != 200 || !strings.Contains(h.Get("Vary"), "Accept-Encoding") || (tc.gzip && h.Get("Content-Encoding") != "gzip") {
			t.Fatalf("%s with gzip: %d %v", tc.path, zipped.Code, h)
		}
		body := zipped.Body.Bytes()
		if h.Get("Content-Encoding") == "gzip" {
			if h.Get("ETag") == plain.Header().Get("ETag") {
				t.Errorf("%s: both encodings have ETag %s", tc.path, h.Get("ETag"))
			}
			if len(body) >= plain.Body.Len() {
				t.Errorf("%s: gzip %d bytes, plain %d", tc.path, len(body), plain.Body.Len())
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
		}
		if !bytes.Equal(body, plain.Body.Bytes()) {
			t.Fatalf("%s: decoded\n%s\nplain\n%s", tc.path, body, plain.Body)
		}
		for _, rv := range []struct{ inm, ae, etag string }{
			{plain.Header().Get("ETag"), "", plain.Header().Get("ETag")},
			{h.Get("ETag"), "gzip", h.Get("ETag")},
			{`"other", W/` + plain.Header().Get("ETag"), "gzip", h.Get("ETag")}, // has the plain copy, accepts gzip
		} {
			w := hs.raw("GET", tc.path, map[string]string{"If-None-Match": rv.inm, "Accept-Encoding": rv.ae})
			if w.Code != http.StatusNotModified || w.Body.Len() != 0 || w.Header().Get("ETag") != rv.etag || w.Header().Get("Content-Encoding") != "" {
				t.Errorf("%s If-None-Match %s Accept-Encoding %q: %d ETag %s (want %s), %d bytes", tc.path, rv.inm, rv.ae, w.Code, w.Header().Get("ETag"), rv.etag, w.Body.Len())
			}
		}
		if w := hs.raw("GET", tc.path, map[string]string{"Accept-Encoding": "gzip;q=0, identity"}); w.Header().Get("Content-Encoding") != "" || !bytes.Equal(w.Body.Bytes(), plain.Body.Bytes()) {
			t.Errorf("%s with gzip;q=0: %v", tc.path, w.Header())
		}
	}
}
