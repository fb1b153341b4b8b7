package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// BenchmarkJoin runs the join, the gateway's hottest route, on its two
// HTTP stacks, over loopback TCP against the real Redis, so that the
// choice of fasthttp for the hot routes rests on a measurement
// (docs/architecture.md, "Two HTTP stacks"):
//
//   - fasthttp: the production server (FastServer) with join as a native
//     route, without and with PASS_KEYS (fasthttp-receipts: every queued
//     join gets its receipt, signed in batches);
//   - net/http: a net/http server (service.NewHTTPServer) running the same
//     handler, each request copied into a pooled fasthttp.RequestCtx and
//     the answer copied back (viaNetHTTP; BenchmarkJoin/copy measures that
//     copy alone, to subtract).
//
// Both listen through httpapi.Listener as in production; one client with
// eight keep-alive connections drives them, every op the first join of a
// user to a fresh event (queued behind the one admitted). cpu-ns/op is
// the process's CPU per join (server and client; Redis is another
// process), the figure that decides how many joins a core serves.
func BenchmarkJoin(b *testing.B) {
	hs := newHarness(b, false)
	hs.srv.Relay = discardRelay{} // production publishes in the background, batched
	var toks []string
	tokens := func(n int) []string {
		for i := len(toks); i < n; i++ {
			toks = append(toks, hs.token(fmt.Sprintf("u%d", i), ""))
		}
		return toks[:n]
	}
	var events atomic.Int64
	run := func(b *testing.B, addr string) {
		ev := fmt.Sprintf("bench-join-%d", events.Add(1))
		hs.createEvent(map[string]any{"id": ev, "rows": 10, "seats_per_row": 10, "capacity": 1})
		joinJSON := []byte(`{"event_id":"` + ev + `"}`)
		tk := tokens(b.N)
		client := &fasthttp.HostClient{Addr: addr, MaxConns: 8}
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(4)
		cpu0 := processCPU()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var req fasthttp.Request
			var resp fasthttp.Response
			for pb.Next() {
				req.Reset()
				req.Header.SetMethod(http.MethodPost)
				req.SetRequestURI("http://" + addr + "/api/booking/request")
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", "Bearer "+tk[next.Add(1)-1])
				req.SetBody(joinJSON)
				if err := client.Do(&req, &resp); err != nil || resp.StatusCode() != http.StatusOK {
					b.Fatalf("join: %d %s %v", resp.StatusCode(), resp.Body(), err)
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		client.CloseIdleConnections()
	}
	b.Run("fasthttp", func(b *testing.B) {
		srv := hs.srv.FastServer()
		run(b, serveBench(b, func(ln net.Listener) error { return srv.Serve(ln) }, func() { _ = srv.Shutdown() }))
	})
	b.Run("fasthttp-receipts", func(b *testing.B) { // with PASS_KEYS: every join queues with a receipt
		keys := passKeys(b, "k1")
		hs.srv.PassKeys, hs.srv.Pass = keys, pass.NewSigner(keys, "bo")
		defer func() { hs.srv.PassKeys, hs.srv.Pass = nil, nil }()
		srv := hs.srv.FastServer()
		run(b, serveBench(b, func(ln net.Listener) error { return srv.Serve(ln) }, func() { _ = srv.Shutdown() }))
		sigs, n := hs.srv.receiptBatcher().Counts()
		b.ReportMetric(float64(n)/float64(max(sigs, 1)), "joins/signature")
	})
	b.Run("net/http", func(b *testing.B) {
		srv := service.NewHTTPServer("", viaNetHTTP(hs.srv.FastHandler()))
		run(b, serveBench(b, srv.Serve, func() { _ = srv.Shutdown(context.Background()) }))
	})
	b.Run("copy", func(b *testing.B) { // viaNetHTTP's copies alone, in process
		h := viaNetHTTP(func(rc *fasthttp.RequestCtx) {
			rc.SetStatusCode(http.StatusOK)
			rc.SetContentType(httpapi.JSONContentType)
			rc.SetBodyString(`{"success":true,"status":"queued","state":"waiting","position":912,"sequence":913,"receipt":{}}`)
		})
		req, _ := http.NewRequest(http.MethodPost, "/api/booking/request", nil)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokens(1)[0])
		req.RemoteAddr = "127.0.0.1:40000"
		w := &discardWriter{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			req.Body = io.NopCloser(&constReader{s: `{"event_id":"stadium-tour-2026"}`})
			clear(w.h)
			h.ServeHTTP(w, req)
		}
	})
}

// serveBench serves on a loopback listener through httpapi.Listener until
// the benchmark ends.
func serveBench(b *testing.B, serve func(net.Listener) error, shutdown func()) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = serve(httpapi.Listener(ln)) }()
	b.Cleanup(shutdown)
	return ln.Addr().String()
}

// viaNetHTTP serves a fasthttp handler inside a net/http server: the
// request copied into a pooled fasthttp.RequestCtx, the answer copied
// back (the reverse of fastserver's bridge, for BenchmarkJoin only).
func viaNetHTTP(h fasthttp.RequestHandler) http.Handler {
	type pooled struct {
		rc   fasthttp.RequestCtx
		conn peerConn
		body bytes.Buffer
	}
	pool := sync.Pool{New: func() any { return new(pooled) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := pool.Get().(*pooled)
		defer pool.Put(p)
		rc := &p.rc
		rc.Request.Reset()
		rc.Response.Reset()
		rc.Init2(&p.conn, nopLogger{}, false)
		rc.Request.Header.SetMethod(r.Method)
		rc.Request.SetRequestURI(r.URL.RequestURI())
		rc.Request.SetHost(r.Host)
		for k, vs := range r.Header {
			for _, v := range vs {
				rc.Request.Header.Add(k, v)
			}
		}
		p.body.Reset()
		if _, err := p.body.ReadFrom(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.Request.SetBody(p.body.Bytes())
		h(rc)
		for k, v := range rc.Response.Header.All() {
			w.Header().Add(string(k), string(v))
		}
		w.WriteHeader(rc.Response.StatusCode())
		_, _ = w.Write(rc.Response.Body())
	})
}

// peerConn is the connection a copied request says it came on: only its
// addresses are read (the abuse limits' client address).
type peerConn struct{ net.Conn }

var loopback = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}

func (peerConn) RemoteAddr() net.Addr { return loopback }
func (peerConn) LocalAddr() net.Addr  { return loopback }

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// discardRelay takes the joins' outbox entries and publishes nothing.
type discardRelay struct{}

func (discardRelay) Add(string, ...booking.OutboxEntry) bool { return true }

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// constReader reads s once.
type constReader struct {
	s    string
	done bool
}

func (r *constReader) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	r.done = true
	return copy(p, r.s), nil
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
