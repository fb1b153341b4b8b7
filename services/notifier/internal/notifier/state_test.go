package notifier

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestReconnectGetsCurrentState(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	in := startInstance(t, store, Config{}, "")
	event := newEvent(t, store, booking.EventConfig{Capacity: 1, Rows: 1, SeatsPerRow: 2})

	mustJoin := func(u string) booking.JoinResult {
		r, err := store.Enqueue(ctx, event, u)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := func(u string) map[string]any {
		tb := dial(t, in, event, u)
		defer tb.conn.CloseNow()
		return tb.next(t, 5*time.Second)
	}

	if m := first("nobody"); m["type"] != TypeState || m["state"] != StateNone {
		t.Errorf("not joined: got %v", m)
	}
	u1 := mustJoin("u1") // admitted at once
	mustJoin("u2")
	mustJoin("u3")

	m := first("u1")
	if m["type"] != messages.NotifyYourTurn || m["state"] != "active" ||
		m["expire_at_ms"] != float64(u1.ExpireAt.UnixMilli()) || m["expire_time"] != float64(u1.ExpireAt.Unix()) {
		t.Errorf("active: got %v", m)
	}
	m = first("u3")
	want := map[string]any{"type": "position", "state": "waiting", "event_id": event, "sequence": 3.0, "position": 2.0,
		"served": 1.0, "waiting": 2.0, "rate_per_min": 1.0, "eta_seconds": 120.0}
	delete(m, "timestamp")
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("waiting: (-want +got)\n%s", d)
	}

	// u1 picks a seat, pays; u2 is promoted into the freed slot.
	if _, err := store.LockSeat(ctx, event, "u1", "A1"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.InitiatePayment(ctx, event, "u1", "pay1"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PaymentSuccess(ctx, event, "u1", "pay1"); err != nil {
		t.Fatal(err)
	}
	if m := first("u1"); m["type"] != messages.NotifyBookingCompleted || m["seat_id"] != "A1" {
		t.Errorf("completed: got %v", m)
	}
	if _, err := store.Promote(ctx, event, 0); err != nil {
		t.Fatal(err)
	}
	if m := first("u2"); m["type"] != messages.NotifyYourTurn || m["sequence"] != 2.0 {
		t.Errorf("promoted on reconnect: got %v", m)
	}
	if _, err := store.Cancel(ctx, event, "u3"); err != nil {
		t.Fatal(err)
	}
	if m := first("u3"); m["type"] != TypeState || m["state"] != "cancelled" {
		t.Errorf("cancelled: got %v", m)
	}
}

func TestPositionBroadcast(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	in := startInstance(t, store, Config{PositionInterval: time.Hour}, "")
	event := newEvent(t, store, booking.EventConfig{Capacity: 2})
	quiet := newEvent(t, store, booking.EventConfig{Capacity: 2})
	for _, u := range []string{"u1", "u2", "u3", "u4", "u5"} {
		if _, err := store.Enqueue(ctx, event, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.LockSeat(ctx, event, "u1", "A1"); err != nil {
		t.Fatal(err)
	}
	tabs := []*tab{dial(t, in, event, "u4"), dial(t, in, event, "u5"), dial(t, in, event, "u5")}
	other := dial(t, in, quiet, "u4")
	for _, tb := range append(tabs, other) {
		tb.next(t, 5*time.Second)
	}

	last := map[string]Tick{}
	in.srv.BroadcastPositions(ctx, last)
	want := map[string]any{"type": "position", "event_id": event, "served": 2.0, "waiting": 3.0,
		"rate_per_min": 2.0, "available": 9.0, "held": 1.0, "sold": 0.0, "paused": false}
	for i, tb := range tabs {
		m := tb.next(t, 5*time.Second)
		if _, ok := m["timestamp"].(float64); !ok {
			t.Errorf("tab %d: no timestamp in %v", i, m)
		}
		delete(m, "timestamp")
		if d := cmp.Diff(want, m); d != "" {
			t.Errorf("tab %d: (-want +got)\n%s", i, d)
		}
	}
	if m := other.next(t, 5*time.Second); m["event_id"] != quiet || m["served"] != 0.0 {
		t.Errorf("other event's broadcast = %v", m)
	}

	// Unchanged counts: no broadcast. Changed: one.
	in.srv.BroadcastPositions(ctx, last)
	if _, err := store.Cancel(ctx, event, "u3"); err != nil {
		t.Fatal(err)
	}
	in.srv.BroadcastPositions(ctx, last)
	m := tabs[0].next(t, 5*time.Second)
	if m["waiting"] != 2.0 {
		t.Errorf("after a cancel: got %v, want waiting 2", m)
	}
	select {
	case m := <-tabs[0].msgs:
		t.Errorf("unexpected extra message %v (unchanged counts must not be sent)", m)
	case <-time.After(200 * time.Millisecond):
	}

	// Pausing the sale changes no count but is broadcast at the next tick
	// (the page shows the notice without waiting for its event re-read);
	// resuming likewise.
	for _, paused := range []bool{true, false} {
		if _, err := store.UpdateEvent(ctx, event, booking.EventUpdate{Paused: &paused}); err != nil {
			t.Fatal(err)
		}
		in.srv.BroadcastPositions(ctx, last)
		if m := tabs[0].next(t, 5*time.Second); m["paused"] != paused || m["waiting"] != 2.0 {
			t.Errorf("after pausing %v: got %v", paused, m)
		}
	}
}

func TestPresenceKeepsConnectedUsersInQueue(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	store := newStore(t, booking.WithClock(clock))
	in := startInstance(t, store, Config{PresenceInterval: time.Hour}, "")
	event := newEvent(t, store, booking.EventConfig{Capacity: 1, Abandon: time.Minute})
	for _, u := range []string{"u1", "absent", "connected"} {
		if _, err := store.Enqueue(ctx, event, u); err != nil {
			t.Fatal(err)
		}
	}
	tb := dial(t, in, event, "connected")
	tb.next(t, 5*time.Second)

	advance(2 * time.Minute)
	in.srv.TouchPresent(ctx)
	advance(time.Second)
	if _, err := store.Cancel(ctx, event, "u1"); err != nil {
		t.Fatal(err)
	}
	res, err := store.Promote(ctx, event, 0)
	if err != nil {
		t.Fatal(err)
	}
	var promoted []string
	for _, p := range res.Promoted {
		promoted = append(promoted, p.UserID)
	}
	if d := cmp.Diff([]string{"connected"}, promoted); d != "" {
		t.Errorf("promoted (-want +got)\n%s", d)
	}
	if d := cmp.Diff([]string{"absent"}, res.Abandoned); d != "" {
		t.Errorf("abandoned (-want +got)\n%s", d)
	}
	if got := testutil.ToFloat64(in.m.PresenceTouched); got != 1 {
		t.Errorf("presence_touched_total = %v, want 1", got)
	}
}

func TestSlowClientDroppedWithoutBlockingOthers(t *testing.T) {
	store := newStore(t)
	in := startInstance(t, store, Config{SendQueue: 8, WriteTimeout: time.Minute}, "")
	event := newEvent(t, store, booking.EventConfig{})
	fast := dial(t, in, event, "fast")
	fast.next(t, 5*time.Second)

	// The slow client completes the handshake and then never reads; its
	// tiny receive buffer fills at once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
		}
		return c, err
	}}}
	slow, _, err := websocket.Dial(ctx, in.url+"?event_id="+event+"&token="+sign(t, "slow", time.Hour, testSecret),
		&websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	waitFor(t, func() bool { return in.srv.Hub().Len() == 2 })

	payload := `{"type":"seats_changed","event_id":"` + event + `","reason":"` + strings.Repeat("x", 16<<10) + `"}`
	const n = 400
	start := time.Now()
	var worst time.Duration
	for range n {
		t0 := time.Now()
		in.srv.Hub().Broadcast(event, []byte(payload))
		worst = max(worst, time.Since(t0))
		time.Sleep(time.Millisecond)
	}
	if worst > 50*time.Millisecond {
		t.Errorf("a broadcast took %v: the slow client blocked the fan-out", worst)
	}
	for i := range n {
		if m := fast.next(t, 10*time.Second); len(m["reason"].(string)) != 16<<10 {
			t.Fatalf("fast message %d wrong", i)
		}
	}
	t.Logf("%d messages of 16 KiB to the fast client in %v", n, time.Since(start))
	if got := testutil.ToFloat64(in.m.SlowDropped); got != 1 {
		t.Errorf("slow_clients_dropped_total = %v, want 1", got)
	}
	// The hub forgets a connection only after its goroutine closed it.
	waitFor(t, func() bool { return in.srv.Hub().Len() == 1 })
	if got := in.srv.Hub().Users(event); len(got) != 1 || got[0] != "fast" {
		t.Errorf("connected users = %v, want [fast]", got)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAuthBeforeUpgrade(t *testing.T) {
	store := newStore(t)
	in := startInstance(t, store, Config{}, "")
	event := newEvent(t, store, booking.EventConfig{})
	httpURL := "http" + strings.TrimPrefix(in.url, "ws")
	valid := sign(t, "u1", time.Hour, testSecret)

	cases := []struct {
		name   string
		query  string
		proto  string
		status int
	}{
		{"missing token", "?event_id=" + event, "", http.StatusUnauthorized},
		{"garbage token", "?event_id=" + event + "&token=abc.def.ghi", "", http.StatusUnauthorized},
		{"wrong secret", "?event_id=" + event + "&token=" + sign(t, "u1", time.Hour, "other"), "", http.StatusUnauthorized},
		{"expired", "?event_id=" + event + "&token=" + sign(t, "u1", -time.Minute, testSecret), "", http.StatusUnauthorized},
		{"bad subprotocol token", "?event_id=" + event, "bearer.nope", http.StatusUnauthorized},
		{"missing event", "?token=" + valid, "", http.StatusBadRequest},
		{"unknown event", "?event_id=nope&token=" + valid, "", http.StatusNotFound},
		{"query token", "?event_id=" + event + "&token=" + valid, "", http.StatusSwitchingProtocols},
		{"subprotocol token", "?event_id=" + event, Subprotocol + ", bearer." + valid, http.StatusSwitchingProtocols},
		// only boxoffice.v1 is ever selected: offered alone, the bearer
		// token is not echoed back (none is selected)
		{"bearer subprotocol only", "?event_id=" + event, "bearer." + valid, http.StatusSwitchingProtocols},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", httpURL+tc.query, nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			if tc.proto != "" {
				req.Header.Set("Sec-WebSocket-Protocol", tc.proto)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status == http.StatusSwitchingProtocols {
				wantProto := ""
				if strings.Contains(tc.proto, Subprotocol) {
					wantProto = Subprotocol
				}
				if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != wantProto {
					t.Errorf("selected subprotocol %q, want %q", got, wantProto)
				}
				return
			}
			var body struct {
				StatusCode int    `json:"statusCode"`
				Code       string `json:"code"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.StatusCode != tc.status {
				t.Errorf("error body %+v, %v", body, err)
			}
		})
	}
	// Only the two upgraded requests may still be registered.
	if n := in.srv.Hub().Len(); n > 2 {
		t.Errorf("%d connections registered, want at most 2", n)
	}
}
