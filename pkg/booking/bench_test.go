package booking

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/redis/go-redis/v9"
)

// Benchmarks of the hot scripts through the Go package, 50 concurrent
// callers on a 50-connection pool: the same client count that
// scripts/bench.sh gives redis-benchmark running the same scripts, so the
// two are comparable in one run (docs/benchmarks.md).

const benchClients = 50

func benchStore(b *testing.B, cfg EventConfig) (*Store, context.Context) {
	b.Helper()
	base := redistest.Client(b)
	rdb := redis.NewClient(&redis.Options{Addr: base.(*redis.Client).Options().Addr, PoolSize: benchClients})
	b.Cleanup(func() { rdb.Close() })
	s := New(rdb, WithPrefix(redistest.Prefix(b)+"b"))
	b.Cleanup(s.Close)
	ctx := context.Background()
	if err := s.Load(ctx); err != nil {
		b.Fatal(err)
	}
	if cfg.ID == "" {
		cfg.ID = "bench"
	}
	if _, err := s.CreateEvent(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	return s, ctx
}

func parallel(b *testing.B, fn func(i int64)) {
	var n atomic.Int64
	b.SetParallelism((benchClients + 1) / 2) // × GOMAXPROCS(2) ≈ 50 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			fn(n.Add(1))
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkEnqueue: a distinct new user per call into a full room (every
// join lands in the waiting list: the common case during an on-sale).
func BenchmarkEnqueue(b *testing.B) {
	s, ctx := benchStore(b, EventConfig{Rows: 10, SeatsPerRow: 10, Capacity: 1})
	s.Enqueue(ctx, "bench", "first")
	parallel(b, func(i int64) {
		if _, err := s.Enqueue(ctx, "bench", "u"+strconv.FormatInt(i, 10)); err != nil {
			b.Error(err)
		}
	})
}

// BenchmarkPosition: position of waiting users in a queue of 100,000.
func BenchmarkPosition(b *testing.B) {
	s, ctx := benchStore(b, EventConfig{Rows: 10, SeatsPerRow: 10, Capacity: 1})
	const queued = 100_000
	fill(b, s, ctx, "bench", queued)
	parallel(b, func(i int64) {
		if _, err := s.Position(ctx, "bench", "u"+strconv.FormatInt(i%queued, 10)); err != nil {
			b.Error(err)
		}
	})
}

// BenchmarkPromote: users admitted per second into an empty room, batches
// of 500, from a queue of b.N users (one op = one user admitted). The room
// never holds more users than there are seats, so the event has b.N seats
// (run it with -benchtime Nx, N <= MaxSeats).
func BenchmarkPromote(b *testing.B) {
	if b.N > MaxSeats {
		b.Skipf("b.N %d > MaxSeats: use -benchtime Nx", b.N)
	}
	s, ctx := benchStore(b, EventConfig{Rows: 1, SeatsPerRow: max(b.N, 1), Capacity: b.N + 1, BatchSize: 500})
	paused, running := true, false
	s.UpdateEvent(ctx, "bench", EventUpdate{Paused: &paused})
	fill(b, s, ctx, "bench", b.N)
	s.UpdateEvent(ctx, "bench", EventUpdate{Paused: &running})
	b.ResetTimer()
	admitted := 0
	for admitted < b.N {
		p, err := s.Promote(ctx, "bench", 500)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Promoted) == 0 {
			b.Fatalf("stalled at %d of %d: %s", admitted, b.N, p.Reason)
		}
		admitted += len(p.Promoted)
	}
	b.ReportMetric(float64(admitted)/b.Elapsed().Seconds(), "users/s")
}

// fill enqueues users u0…u(n-1) with pipelining.
func fill(b *testing.B, s *Store, ctx context.Context, event string, n int) {
	b.Helper()
	start := time.Now()
	const conc = 50
	var next atomic.Int64
	done := make(chan struct{})
	for range conc {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if _, err := s.Enqueue(ctx, event, "u"+strconv.FormatInt(i, 10)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for range conc {
		<-done
	}
	b.Logf("queued %d users in %v", n, time.Since(start))
}

// BenchmarkLimitArgs: the keys and arguments of a join with both abuse
// limits on (limitArgs, ownLimit), built on every join and poll: the
// interval is not formatted per call, the user's key not built to find
// its limit, the arguments not appended to a second slice
// (docs/benchmarks.md "The abuse limits inside the scripts" has the figures).
func BenchmarkLimitArgs(b *testing.B) {
	s := &Store{prefix: "bo"}
	limits := []Limit{{Subject: "ip:127.0.0.1", Rate: 100000000, Period: time.Minute}, {Subject: UserSubject("user-123456"), Rate: 100, Period: time.Second}}
	b.ReportAllocs()
	for b.Loop() {
		own := ownLimit(limits, "user-123456")
		_, _, _ = s.limitArgs("evt-1", limits, "user-123456", int64(1732650000000), own)
	}
}
