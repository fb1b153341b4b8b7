package notifier

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// tryDial opens a WebSocket and returns the HTTP status of the upgrade
// (101 on success; the connection is closed when the test ends).
func tryDial(t testing.TB, in *instance, event, user string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := fmt.Sprintf("%s?event_id=%s&token=%s", in.url, event, sign(t, user, time.Hour, testSecret))
	conn, resp, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		if resp != nil {
			return resp.StatusCode
		}
		t.Errorf("dial: %v", err)
		return 0
	}
	t.Cleanup(func() { conn.CloseNow() })
	return http.StatusSwitchingProtocols
}

// A flood of upgrades from one user's token: exactly the cap is accepted,
// the rest are refused with 429 and counted; other users and the same
// user's other events are not affected; a closed connection frees its
// place (the newest is refused, nothing open is closed).
func TestPerUserConnectionCap(t *testing.T) {
	store := newStore(t)
	event := newEvent(t, store, booking.EventConfig{Capacity: 10})
	other := newEvent(t, store, booking.EventConfig{Capacity: 10})
	in := startInstance(t, store, Config{MaxPerUser: 5}, "")

	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			switch code := tryDial(t, in, event, "mallory"); code {
			case http.StatusSwitchingProtocols:
				ok.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				t.Errorf("status %d", code)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 5 || refused.Load() != 45 {
		t.Fatalf("%d accepted, %d refused; want 5 and 45", ok.Load(), refused.Load())
	}
	if n := testutil.ToFloat64(in.m.Refused.WithLabelValues("per_user")); n != 45 {
		t.Fatalf("refusals metric %v, want 45", n)
	}
	if code := tryDial(t, in, event, "alice"); code != http.StatusSwitchingProtocols {
		t.Fatalf("another user: %d", code)
	}
	if code := tryDial(t, in, other, "mallory"); code != http.StatusSwitchingProtocols {
		t.Fatalf("same user, another event: %d", code)
	}
	if got := in.srv.Hub().Len(); got != 7 {
		t.Fatalf("%d connections open, want 7", got)
	}
}

func TestPerIPAndTotalConnectionCaps(t *testing.T) {
	store := newStore(t)
	event := newEvent(t, store, booking.EventConfig{Capacity: 10})
	in := startInstance(t, store, Config{MaxPerUser: -1, MaxPerIP: 3}, "")
	for i := range 3 {
		if code := tryDial(t, in, event, fmt.Sprint("u", i)); code != http.StatusSwitchingProtocols {
			t.Fatalf("dial %d: %d", i, code)
		}
	}
	if code := tryDial(t, in, event, "u3"); code != http.StatusTooManyRequests {
		t.Fatalf("beyond the per-address cap: %d", code)
	}
	if n := testutil.ToFloat64(in.m.Refused.WithLabelValues("per_ip")); n != 1 {
		t.Fatalf("per_ip refusals %v", n)
	}

	in = startInstance(t, store, Config{MaxConnections: 2}, "")
	tryDial(t, in, event, "a")
	tryDial(t, in, event, "b")
	if code := tryDial(t, in, event, "c"); code != http.StatusServiceUnavailable {
		t.Fatalf("beyond the instance's cap: %d", code)
	}
	if n := testutil.ToFloat64(in.m.Refused.WithLabelValues("total")); n != 1 {
		t.Fatalf("total refusals %v", n)
	}
}

func TestDefaultMaxConnectionsFollowsTheFileLimit(t *testing.T) {
	if n := DefaultMaxConnections(); n < 64 {
		t.Fatalf("default %d", n)
	}
}

// The HTTP server's read and write timeouts must not end a WebSocket: the
// notifier clears the connection's deadlines at the upgrade.
func TestWebSocketOutlivesServerTimeouts(t *testing.T) {
	store := newStore(t)
	event := newEvent(t, store, booking.EventConfig{Capacity: 10})
	s := NewServer(Config{}, store, testAuth, NewMetrics(nil), nil)
	lim := service.DefaultHTTPLimits
	lim.ReadTimeout, lim.WriteTimeout, lim.ReadHeaderTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	hs := httptest.NewUnstartedServer(nil)
	hs.Config = lim.Server("", s.Handler())
	hs.Start()
	t.Cleanup(func() { s.Shutdown(); hs.Close() })
	in := &instance{srv: s, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", m: s.m}
	tb := dial(t, in, event, "u1")
	tb.next(t, 10*time.Second) // the state at connect
	time.Sleep(time.Second)    // well past both server timeouts
	if n := s.Hub().SendUser(event, "u1", []byte(`{"type":"ping_test"}`)); n != 1 {
		t.Fatalf("connection gone after the server timeouts (%d receivers)", n)
	}
	if m := tb.next(t, 10*time.Second); m["type"] != "ping_test" {
		t.Fatalf("got %v", m)
	}
}
