package amqpx_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
)

// BenchmarkPublishConfirmed measures confirmed, persistent publishes from
// many goroutines sharing one Publisher (confirms pipeline on one channel).
//
//	go test -run '^$' -bench PublishConfirmed -cpu 2 ./pkg/amqpx/
func BenchmarkPublishConfirmed(b *testing.B) {
	url := amqptest.Vhost(b)
	p := newPublisher(b, url, nil)
	body := []byte(`{"event_id":"evt-1","reason":"timeout","timestamp":1234567890}`)
	b.SetParallelism(32) // 32 × GOMAXPROCS publishers in flight
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if err := p.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{Body: body}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// TestDelayLateness publishes 1000 messages with a 1 s delay through the TTL
// wait queue and reports how late they arrive (p50/p99/max). It asserts only
// that none arrives early.
//
//	go test -run TestDelayLateness -v ./pkg/amqpx/
func TestDelayLateness(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil)
	const n, delay = 1000, time.Second

	var mu sync.Mutex
	sent := make(map[string]time.Time, n)
	var late []time.Duration
	done := make(chan struct{})
	startConsumer(t, url, amqpx.TimeoutQueue, func(ctx context.Context, d amqpx.Delivery) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		at, ok := sent[d.MessageID]
		if !ok {
			return fmt.Errorf("unknown id %q", d.MessageID)
		}
		delete(sent, d.MessageID)
		late = append(late, now.Sub(at.Add(delay)))
		if len(late) == n {
			close(done)
		}
		return nil
	}, amqpx.ConsumeOptions{Workers: 4, Prefetch: 200}, nil)

	// Warm the wait queue so the first message does not pay the declare.
	if err := p.PublishDelayed(context.Background(), amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, amqpx.Message{ID: "warm"}, delay); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sent["warm"] = time.Now()
	mu.Unlock()
	time.Sleep(2 * delay)
	mu.Lock()
	late = late[:0]
	mu.Unlock()

	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				id := fmt.Sprintf("late-%04d", i)
				mu.Lock()
				sent[id] = time.Now()
				mu.Unlock()
				if err := p.PublishDelayed(context.Background(), amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, amqpx.Message{ID: id, Body: []byte(`{}`)}, delay); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("only %d of %d delayed messages arrived", len(late), n)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(late)
	if late[0] < 0 {
		t.Errorf("a message arrived %v early", -late[0])
	}
	q := func(p float64) time.Duration { return late[int(p*float64(len(late)-1))] }
	t.Logf("delay %v, %d messages: lateness min %v p50 %v p99 %v max %v",
		delay, len(late), late[0].Round(time.Microsecond), q(0.50).Round(time.Microsecond), q(0.99).Round(time.Microsecond), late[len(late)-1].Round(time.Microsecond))
}
