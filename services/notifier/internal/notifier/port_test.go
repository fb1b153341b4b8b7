package notifier

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
)

// The notifier's port as main serves it (service.NewHTTPServer behind
// httpapi.Listener): the one header limit, and every answer that is not
// the WebSocket upgrade in the JSON error format: an unknown path, a
// wrong method, headers over 16 KiB.
func TestPortAnswersInTheErrorFormat(t *testing.T) {
	store := newStore(t)
	s := NewServer(Config{}, store, testAuth, NewMetrics(nil), nil)
	t.Cleanup(s.Shutdown)
	addr := contracttest.ServeNetHTTP(t, s.Handler(), httpapi.Listener)
	ct := contracttest.Load(t)
	ct.HeaderLimit(addr, "/ws")
	for _, tc := range []struct {
		method, path string
		status       int
	}{{"GET", "/nope", http.StatusNotFound}, {"GET", "/", http.StatusNotFound}, {"POST", "/ws", http.StatusMethodNotAllowed}} {
		resp, body := contracttest.Exchange(t, addr, tc.method+" "+tc.path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.status)
			continue
		}
		ct.CheckErrorAnswer(tc.method+" "+tc.path, resp, body, tc.path)
	}
	// the WebSocket through the watched listener: the connection's state,
	// and pings long after the upgrade (TestWatchAfterAnUpgrade: nothing
	// after the 101 is read as a request)
	event := newEvent(t, store, booking.EventConfig{})
	tb := dial(t, &instance{srv: s, url: "ws://" + addr + "/ws"}, event, "u1")
	if m := tb.next(t, 5*time.Second); m["type"] == nil {
		t.Fatalf("first message %v", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 50 {
		if err := tb.conn.Ping(ctx); err != nil {
			t.Fatalf("ping through the listener: %v", err)
		}
	}
	ct.Report()
}
