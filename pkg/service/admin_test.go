package service

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// startAdmin runs an admin server on a free loopback port until the test ends.
func startAdmin(t *testing.T, a *Admin) string {
	t.Helper()
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("admin Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("admin Run did not return after cancel")
		}
	})
	return "http://" + a.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestAdminHealthzAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "boxoffice_test_things_total", Help: "things"})
	reg.MustRegister(c)
	c.Add(3)
	base := startAdmin(t, NewAdmin("127.0.0.1:0", nil, reg))

	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	code, body := get(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{"boxoffice_test_things_total 3", "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, _ := get(t, base+"/nope"); code != 404 {
		t.Errorf("/nope = %d, want 404", code)
	}
}

func TestAdminReadyz(t *testing.T) {
	tests := []struct {
		name     string
		checks   map[string]func(context.Context) error
		order    []string
		wantCode int
		want     ReadyReport
	}{
		{"no checks", nil, nil, 200, ReadyReport{Status: "ok", Checks: []CheckResult{}}},
		{"all pass", map[string]func(context.Context) error{
			"redis": func(context.Context) error { return nil },
			"amqp":  func(context.Context) error { return nil },
		}, []string{"redis", "amqp"}, 200, ReadyReport{Status: "ok", Checks: []CheckResult{
			{Name: "redis", OK: true}, {Name: "amqp", OK: true},
		}}},
		{"one fails", map[string]func(context.Context) error{
			"redis": func(context.Context) error { return nil },
			"amqp":  func(context.Context) error { return errors.New("connection refused") },
		}, []string{"redis", "amqp"}, 503, ReadyReport{Status: "unavailable", Checks: []CheckResult{
			{Name: "redis", OK: true}, {Name: "amqp", Error: "connection refused"},
		}}},
		{"slow check times out", map[string]func(context.Context) error{
			"slow": func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		}, []string{"slow"}, 503, ReadyReport{Status: "unavailable", Checks: []CheckResult{
			{Name: "slow", Error: "context deadline exceeded"},
		}}},
		{"panicking check fails", map[string]func(context.Context) error{
			"boom": func(context.Context) error { panic("boom") },
		}, []string{"boom"}, 503, ReadyReport{Status: "unavailable", Checks: []CheckResult{
			{Name: "boom", Error: "panic: boom"},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAdmin("127.0.0.1:0", nil, nil)
			for _, n := range tt.order {
				a.AddCheck(n, tt.checks[n])
			}
			base := startAdmin(t, a)
			resp, err := http.Get(base + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			var got ReadyReport
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			tt.want.PID = os.Getpid() // the answering process names itself
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdminReadyzFollowsRedis(t *testing.T) {
	rdb, err := NewRedis(Common{RedisAddr: []string{"127.0.0.1:6379"}})
	if err != nil {
		t.Fatalf("redis on 127.0.0.1:6379 (run scripts/ensure-infra.sh): %v", err)
	}
	a := NewAdmin("127.0.0.1:0", nil, nil)
	a.AddCheck("redis", RedisCheck(rdb))
	base := startAdmin(t, a)
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz with Redis up = %d %s", code, body)
	}
	_ = rdb.Close()
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "closed") {
		t.Fatalf("/readyz with Redis closed = %d %s", code, body)
	}
}

func TestAdminRunFailsOnBusyPort(t *testing.T) {
	a := NewAdmin("127.0.0.1:0", nil, nil)
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	defer a.ln.Close()
	b := NewAdmin(a.Addr().String(), nil, nil)
	if err := b.Run(context.Background()); err == nil {
		t.Fatal("Run on a busy port returned nil")
	}
}

func TestAdminSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewAdmin("127.0.0.1:0", nil, reg)
	NewAdmin("127.0.0.1:0", nil, reg) // collectors already there: no panic, no error
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) == 0 {
		t.Fatal("no metrics gathered")
	}
}

// /debug/pprof is served only when ADMIN_PPROF is on.
func TestAdminPprofOnlyWhenConfigured(t *testing.T) {
	for _, on := range []bool{false, true} {
		a := NewAdminFor(Common{AdminAddr: "127.0.0.1:0", AdminPprof: on}, nil, nil)
		w := httptest.NewRecorder()
		a.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/debug/pprof/", nil))
		if got := w.Code == http.StatusOK; got != on {
			t.Errorf("ADMIN_PPROF=%v: /debug/pprof/ answered %d", on, w.Code)
		}
	}
}
