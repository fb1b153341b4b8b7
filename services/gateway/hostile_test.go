package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// Hostile clients against the gateway, each bounded to finish in seconds
// (the net/http servers' slow bodies and header bombs are in
// pkg/service's TestHTTPLimitsAgainstHostileClients, the WebSocket flood
// in the notifier's TestPerUserConnectionCap).

// Eight anonymous clients read a 40,000-seat map as fast as they can while
// a buyer joins, holds a seat and starts paying: the buyer's journey
// succeeds, and however many reads the eight make, Redis sees about one
// status read per second (the snapshot), never a script per read.
func TestSeatMapReadersBesideABuyer(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "big", "rows": 80, "seats_per_row": 500, "capacity": 10})
	counter := &countCmds{name: "get"}
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(counter)
	readStore := booking.New(rdb, booking.WithPrefix(hs.store.Prefix()))
	t.Cleanup(readStore.Close)
	// the readers' gateway instance counts its status reads; the buyer's
	// requests go to another instance on the same Redis
	reader := &Server{Store: readStore, Auth: hs.srv.Auth, SeatMapMaxAge: time.Second}
	readerH := reader.FastHandler()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reads, bad atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil && reads.Load() < 20_000 {
				if w := hs.rawVia(readerH, "GET", "/api/seats/available?event_id=big"); w.Code != 200 {
					bad.Add(1)
				}
				reads.Add(1)
			}
		})
	}
	buyer := hs.token("buyer", "")
	want(t, hs.do("POST", "/api/booking/request", buyer, map[string]any{"event_id": "big"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", buyer, map[string]any{"event_id": "big", "seat_id": "C7"}), 200, "")
	want(t, hs.do("POST", "/api/booking/payment/initiate", buyer, map[string]any{"event_id": "big"}), 200, "")
	for reads.Load() < 200 && bad.Load() == 0 { // let the readers get going at least
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	elapsed := time.Since(start)
	if bad.Load() != 0 {
		t.Fatalf("%d failed seat-map reads", bad.Load())
	}
	// one refresh per second of the run, plus slack for the edges
	if gets, limit := counter.n.Load(), int64(elapsed/time.Second)+3; gets > limit {
		t.Fatalf("%d status reads for %d seat-map reads in %v: the snapshot is not shared", gets, reads.Load(), elapsed)
	}
}

// A header bomb against the gateway's real server is a 431 in the JSON
// error format naming the path, and the connection is not held; exactly
// 16 KiB of request line and headers is read.
func TestGatewayHeaderBomb(t *testing.T) {
	hs := newHarness(t, false)
	addr := hs.serveReal(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_, _ = fmt.Fprintf(c, "GET /api/events HTTP/1.1\r\nHost: x\r\nX-Bomb: %s\r\n\r\n", strings.Repeat("a", 1<<20))
	}()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ct := contracttest.Load(t)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
	ct.CheckErrorAnswer("header bomb", resp, body, "/api/events")
	ct.HeaderLimit(addr, "/api/events")
	ct.Report()
}

// The gateway's real server drops a client that reads its answer slowly
// or never after service.DefaultHTTPLimits' write timeout, as every
// net/http server does (fastserver's TestSlowReaderIsDroppedAfterTheWriteTimeout
// shows the drop); no route's limits replace it.
func TestGatewayHasTheWriteTimeout(t *testing.T) {
	hs := newHarness(t, false)
	srv := hs.srv.FastServer()
	if srv.WriteTimeout <= 0 || srv.WriteTimeout != service.DefaultHTTPLimits.WriteTimeout {
		t.Fatalf("write timeout %v, want %v", srv.WriteTimeout, service.DefaultHTTPLimits.WriteTimeout)
	}
	for _, h := range []string{"POST /api/admin/events", "GET /api/events"} {
		method, path, _ := strings.Cut(h, " ")
		var hdr fasthttp.RequestHeader
		hdr.SetMethod(method)
		hdr.SetRequestURI(path)
		hdr.Set("Authorization", "Bearer "+hs.token("admin", "admin"))
		if wt := srv.HeaderReceived(&hdr).WriteTimeout; wt != 0 {
			t.Errorf("%s: the per-request write timeout %v replaces the server's", h, wt)
		}
	}
}
