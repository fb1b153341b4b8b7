package events_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
)

// BenchmarkPublishParallel measures synchronous Publish calls of one event
// each from many goroutines (as HTTP handlers do) against the embedded
// broker. Run with:
//
//	go test -run '^$' -bench PublishParallel -benchtime 5s ./pkg/events/
func BenchmarkPublishParallel(b *testing.B) {
	for _, par := range []int{1, 8, 32, 128} {
		// RunParallel starts par*GOMAXPROCS goroutines.
		b.Run(fmt.Sprintf("goroutines=%d", par*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			brokers := kafkatest.Start(b)
			p := newProducer(b, brokers)
			ctx := context.Background()
			// Warm up metadata and connections outside the timer.
			if err := p.Publish(ctx, events.BookingRequested("warm", "u", 1, time.Now())); err != nil {
				b.Fatal(err)
			}
			var seq atomic.Int64
			b.SetParallelism(par)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					e := events.BookingRequested(fmt.Sprintf("evt-%d", n%8), fmt.Sprintf("u%d", n), n, time.Now())
					if err := p.Publish(ctx, e); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkPublishBatch measures Publish calls of 64 booking_request
// facts each, as the gateway's outbox relay makes them, against the
// embedded broker (in this process: its CPU and allocations count too).
//
//	go test -run '^$' -bench PublishBatch ./pkg/events/
func BenchmarkPublishBatch(b *testing.B) {
	brokers := kafkatest.Start(b)
	p := newProducer(b, brokers)
	ctx := context.Background()
	if err := p.Publish(ctx, events.BookingRequested("warm", "u", 1, time.Now())); err != nil {
		b.Fatal(err)
	}
	evs := make([]events.Event, 64)
	var n int64
	b.ReportAllocs()
	cpu0 := cpuNanos(b)
	for b.Loop() {
		for i := range evs {
			n++
			evs[i] = events.BookingRequested("evt", fmt.Sprintf("u%d", n), n, time.Now())
		}
		if err := p.Publish(ctx, evs...); err != nil {
			b.Fatal(err)
		}
	}
	// (the wall clock is the writer's 2 ms batch timeout)
	b.ReportMetric(float64(cpuNanos(b)-cpu0)/float64(n), "cpu-ns/event")
}

// cpuNanos is the process's user and system CPU time.
func cpuNanos(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
