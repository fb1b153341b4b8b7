package main

import (
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// BenchmarkPosition measures the gateway's own cost of a position request
// (routing, JWT, script call, JSON) in process, against the real Redis.
func BenchmarkPosition(b *testing.B) {
	hs := newHarness(b, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 10, "seats_per_row": 10, "capacity": 1})
	const users = 1000
	toks := make([]string, users)
	for i := range toks {
		toks[i] = hs.token(fmt.Sprintf("u%d", i), "")
		hs.do("POST", "/api/booking/request", toks[i], map[string]any{"event_id": "e1"})
	}
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/api/booking/position?event_id=e1", nil)
			req.Header.Set("Authorization", "Bearer "+toks[n.Add(1)%users])
			w := httptest.NewRecorder()
			hs.h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}
