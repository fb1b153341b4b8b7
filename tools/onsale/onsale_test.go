package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

func TestMain(m *testing.M) { stacktest.Main(m) }

// stack starts every service with a pass key (queued joins carry receipts).
func stack(t testing.TB, logDir string, env map[string]string) *stacktest.Stack {
	e := map[string]string{"PASS_KEYS": "onsale:lb3E06HVniHLsVjhSd1bQHPg-Y5kHfQjBsVGW8uUcMo"}
	maps.Copy(e, env)
	return stacktest.Start(t, stacktest.Options{LogDir: logDir, Env: e})
}

func configFor(s *stacktest.Stack, users int) Config {
	c := DefaultConfig()
	c.Gateway, c.Notifier, c.Redis, c.Secret = s.GatewayURL(), s.NotifierWS(), redistest.Addr, stacktest.JWTSecret
	c.EventID, c.Create, c.Users = "onsale", true, users
	return c
}

// A few hundred users play a whole on-sale against the real stack: every
// one joins (with a receipt), the sale ends within its bound (sold out),
// and the report adds up: every admission ended paid or abandoned, every
// payment is a seat sold, the room is empty, nobody was sold a seat
// twice, polls and the WebSocket sample ran, and nothing failed.
func TestOnsaleSmoke(t *testing.T) {
	s := stack(t, "", nil)
	c := configFor(s, 300)
	c.Rows, c.PerRow, c.Capacity = 5, 10, 20
	c.Arrive, c.Duration, c.Think, c.PollEvery = 2*time.Second, 2*time.Minute, 100*time.Millisecond, 200*time.Millisecond
	c.Conns, c.Pollers, c.Buyers, c.WSSample, c.WSEvery = 16, 4, 16, 10, 3
	r, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	var out testWriter
	r.Print(&out)
	t.Log("\n" + string(out))
	joined, admitted := r.Joined.Load(), r.Admitted.Load()
	switch {
	case !r.Finished:
		t.Error("the sale did not end within its bound")
	case r.ErrorCount() != 0:
		t.Errorf("%d errors", r.ErrorCount())
	case joined != int64(c.Users) || r.Receipts.Load()+r.JoinedActive.Load() != joined:
		t.Errorf("joined %d of %d; %d receipts + %d admitted at once", joined, c.Users, r.Receipts.Load(), r.JoinedActive.Load())
	case admitted != r.Paid.Load()+r.Abandoned.Load():
		t.Errorf("admitted %d != paid %d + abandoned %d", admitted, r.Paid.Load(), r.Abandoned.Load())
	case r.Paid.Load() != int64(c.Rows*c.PerRow):
		t.Errorf("paid %d, want every seat (%d) sold", r.Paid.Load(), c.Rows*c.PerRow)
	case r.Join.Count() != c.Users || r.Position.Count() < int(admitted) || r.ProgressPolls.Load() == 0:
		t.Errorf("samples: join %d, position %d (admitted %d), progress polls %d", r.Join.Count(), r.Position.Count(), admitted, r.ProgressPolls.Load())
	case r.Sockets.Load() == 0:
		t.Error("no WebSocket held")
	}
	// The webhooks land after the sandbox's answer: the ledger's view
	// converges to the report's.
	deadline := time.Now().Add(30 * time.Second)
	for r.Event.Sold != r.Paid.Load() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if err := r.Refresh(); err != nil {
			t.Fatal(err)
		}
	}
	// a user found sold out still waits (in the queue, told it is over)
	if e := r.Event; e.Sold != r.Paid.Load() || e.Sold > e.Total || e.Active != 0 || joined != e.Waiting+admitted {
		t.Errorf("event %+v after %d paid, %d admitted, %d found sold out", e, r.Paid.Load(), admitted, r.SoldOut.Load())
	}
}

// BenchmarkOnsale is `make bench-onsale`: ONSALE_USERS users (default
// 1,000,000) into one event's queue on a stack of its own, the report
// printed (docs/benchmarks.md), the run bounded by ONSALE_DURATION
// (default 20m). One iteration whatever b.N.
func BenchmarkOnsale(b *testing.B) {
	users := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("ONSALE_USERS")); err == nil && v > 0 {
		users = v
	}
	root, err := redistest.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	logs := filepath.Join(root, "test-output", "onsale")
	_ = os.MkdirAll(logs, 0o755)
	// the services' profiles on their admin ports while it runs
	// (/debug/pprof; the ports are in test-output/onsale/*.log), and the
	// production default of RECONCILE_INTERVAL (the test stacks use 1s)
	s := stack(b, logs, map[string]string{"ADMIN_PPROF": "true", "RECONCILE_INTERVAL": "30s"})
	c := configFor(s, users)
	// More seats than the run can sell and a room served by as many
	// buyers as it holds, who take up to 5 s each: the queue builds up
	// behind the room (a million joins at once), admissions go on at the
	// buyers' pace, and the run ends at its bound.
	c.Rows, c.PerRow, c.Capacity, c.Hold, c.Think = 200, 500, 500, 2*time.Minute, 5*time.Second
	c.Arrive, c.Spike, c.Duration = 60*time.Second, 0.6, 20*time.Minute
	if d, err := time.ParseDuration(os.Getenv("ONSALE_DURATION")); err == nil && d > 0 {
		c.Duration = d
	}
	c.Conns, c.Pollers, c.Buyers, c.WSSample, c.WSEvery = 64, 8, 500, 50, 100
	for b.Loop() {
		r, err := Run(context.Background(), c)
		if err != nil {
			b.Fatal(err)
		}
		r.Print(os.Stdout)
	}
}

// BenchmarkChanceCalibration is the chance of a ticket against what
// happened (docs/benchmarks.md, "Chance of a ticket"): ONSALE_USERS users
// (default 100,000) for ONSALE_ROWS rows of 50 seats (default 40: 2,000
// seats), on a stack of its own. Each queued
// user's chance is the one its page shows at the first progress poll
// after the join; the run fails when users told under 10 % were admitted
// more than 20 % of the time, or users told over 90 % less than 80 %.
func BenchmarkChanceCalibration(b *testing.B) {
	users := 100_000
	if v, err := strconv.Atoi(os.Getenv("ONSALE_USERS")); err == nil && v > 0 {
		users = v
	}
	rows := 40
	if v, err := strconv.Atoi(os.Getenv("ONSALE_ROWS")); err == nil && v > 0 {
		rows = v
	}
	s := stack(b, "", nil)
	c := configFor(s, users)
	c.Rows, c.PerRow, c.Capacity = rows, 50, 200
	c.Duration, c.Buyers, c.FreeSeats = 15*time.Minute, 128, true
	for b.Loop() {
		r, err := Run(context.Background(), c)
		if err != nil {
			b.Fatal(err)
		}
		r.Print(os.Stdout)
		cal := r.Calibration()
		low, high := cal.Bins[0], cal.Bins[9]
		if low.Users > 0 && float64(low.Admitted) > 0.2*float64(low.Users) {
			b.Errorf("told under 10%%: %d of %d admitted", low.Admitted, low.Users)
		}
		if high.Users > 0 && float64(high.Admitted) < 0.8*float64(high.Users) {
			b.Errorf("told over 90%%: %d of %d admitted", high.Admitted, high.Users)
		}
		b.ReportMetric(cal.Brier, "brier")
	}
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
