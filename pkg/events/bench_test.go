package events_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
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
