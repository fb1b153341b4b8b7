package main

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkPosition measures the gateway's own cost of a position request
// (routing, JWT, script call, JSON) in process, against the real Redis,
// through the production handler (no sockets).
func BenchmarkPosition(b *testing.B) {
	hs := newHarness(b, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 10, "seats_per_row": 10, "capacity": 1})
	const users = 1000
	toks := make([]string, users)
	for i := range toks {
		toks[i] = hs.token(fmt.Sprintf("u%d", i), "")
		hs.do("POST", "/api/booking/request", toks[i], map[string]any{"event_id": "e1"})
	}
	h := hs.srv.FastHandler()
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var req fasthttp.Request
		var rc fasthttp.RequestCtx
		for pb.Next() {
			req.Reset()
			req.SetRequestURI("/api/booking/position?event_id=e1")
			req.Header.Set("Authorization", "Bearer "+toks[n.Add(1)%users])
			rc.Init(&req, addr, nil)
			h(&rc)
			if rc.Response.StatusCode() != 200 {
				b.Fatalf("%d %s", rc.Response.StatusCode(), rc.Response.Body())
			}
		}
	})
}
