package stacktest_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

func TestMain(m *testing.M) { stacktest.Main(m) }

// TestStartGateway starts the smallest stack (the gateway on Redis,
// RabbitMQ and Kafka) and talks to it.
func TestStartGateway(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Services: []string{stacktest.Gateway}})

	gw := s.Service(stacktest.Gateway)
	for _, u := range []string{"http://" + gw.AdminAddr + "/healthz", "http://" + gw.AdminAddr + "/readyz", s.GatewayURL() + "/"} {
		resp, err := s.HTTP.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", u, resp.StatusCode)
		}
	}
	if s.Service(stacktest.Notifier) != nil {
		t.Error("notifier present in a gateway-only stack")
	}
	if !strings.HasPrefix(s.Prefix, "t:") || !strings.Contains(s.AMQPURL, "/test-") || len(s.Brokers) == 0 {
		t.Errorf("infrastructure: prefix %q, vhost %q, brokers %v", s.Prefix, s.AMQPURL, s.Brokers)
	}

	// A user's token works; the admin's creates an event under the
	// test's prefix; the user joins it and is admitted (room of 1).
	s.CreateEvent(t, stacktest.Event{ID: "st", Name: "Stack test", Rows: 1, SeatsPerRow: 2, Capacity: 1, HoldSeconds: 60})
	var join struct {
		Status   string `json:"status"`
		Sequence int64  `json:"sequence"`
	}
	if code, err := s.Client(t, "alice", "").Do("POST", "/api/booking/request", map[string]string{"event_id": "st"}, &join); err != nil || code != http.StatusOK {
		t.Fatalf("join: %d %v", code, err)
	}
	if join.Sequence != 1 {
		t.Errorf("join: %+v, want sequence 1", join)
	}
	n, err := s.Redis.Keys(t.Context(), s.Prefix+"*").Result()
	if err != nil || len(n) == 0 {
		t.Errorf("no keys under the stack's prefix %q: %v", s.Prefix, err)
	}
	if code, _ := (&stacktest.Client{HTTP: s.HTTP, Base: s.GatewayURL()}).Do("GET", "/api/booking/position?event_id=st", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("position without a token: %d, want 401", code)
	}
}

// TestFreePort: ports come from outside the kernel's ephemeral range, where
// outgoing connections cannot take them, and are free.
func TestFreePort(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		addr := stacktest.FreePort(t)
		_, ps, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(ps)
		if port >= lo && port <= hi {
			t.Fatalf("FreePort %s is in the ephemeral range %d-%d", addr, lo, hi)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("FreePort %s: %v", addr, err)
		}
		ln.Close()
	}
}

// TestHalfOpenStallsTheGateway: the fault suite's half-open Redis (no
// byte passes either way, connections stay open) stalls a join until it
// is removed, and the join then completes: the fault bites, and the
// gateway recovers from it without the client's help (the suite's round
// lasts 5 s; this one 4 s, past go-redis's read timeout, so the client's
// retry on a new connection is stalled as well).
func TestHalfOpenStallsTheGateway(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Services: []string{stacktest.Gateway}, Faults: true})
	s.CreateEvent(t, stacktest.Event{ID: "ho", Name: "Half-open", Rows: 1, SeatsPerRow: 4, Capacity: 1, HoldSeconds: 60})
	join := func(user string) (int, error) {
		return s.Client(t, user, "").Do("POST", "/api/booking/request", map[string]string{"event_id": "ho"}, nil)
	}
	if code, err := join("before"); err != nil || code != http.StatusOK {
		t.Fatalf("join before the fault: %d %v", code, err)
	}
	remove := s.Faults().HalfOpen(t, stacktest.TargetRedis)
	type answer struct {
		code int
		err  error
		at   time.Time
	}
	done := make(chan answer, 1)
	go func() {
		code, err := join("during")
		done <- answer{code, err, time.Now()}
	}()
	select {
	case a := <-done:
		remove()
		t.Fatalf("a join answered %d %v while Redis was half-open", a.code, a.err)
	case <-time.After(4 * time.Second): // past go-redis's 3 s read timeout: its retry is stalled too
	}
	removed := time.Now()
	remove()
	select {
	case a := <-done:
		if a.err != nil || (a.code != http.StatusOK && a.code != http.StatusServiceUnavailable) {
			t.Fatalf("join after the fault: %d %v", a.code, a.err)
		}
		t.Logf("the stalled join answered %d %v after the fault ended", a.code, a.at.Sub(removed).Round(10*time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled join did not answer within 30 s of the fault's end")
	}
	if code, err := join("after"); err != nil || code != http.StatusOK {
		t.Fatalf("join after the fault: %d %v", code, err)
	}
}
