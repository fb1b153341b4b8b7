//go:build bench

// The messaging benchmarks quoted in docs/benchmarks.md ("Promotion
// announced").
// They need the local Redis and RabbitMQ and start an embedded Kafka:
//
//	go test -tags bench -run 'TestBench' -v -count=1 ./services/slot-released-consumer/
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

func benchStore(t *testing.T) (*redis.Client, *booking.Store) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", PoolSize: 64})
	prefix := "bench" + strings.ToLower(rand.Text()[:8])
	t.Cleanup(func() {
		ctx := context.Background()
		it := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for it.Next(ctx) {
			rdb.Del(ctx, it.Val())
		}
		rdb.Close()
	})
	return rdb, booking.New(rdb, booking.WithPrefix(prefix))
}

// TestBenchPromotionRate: slot released → users admitted → timeouts
// scheduled (confirmed), your_turn published, user_promoted acked by Kafka.
// Phase 1 fills an empty room of 5000 from 20000 waiting users with one
// slot-released message; phase 2 raises the capacity to 20000 and admits the
// remaining 15000 with one more.
//
// BENCH_WAITING and BENCH_CAPACITY change the queue and the first room
// (default 20000 and 5000), e.g. BENCH_WAITING=1000000 BENCH_CAPACITY=20000
// for "at 1,000,000 waiting"; the second phase raises the room
// to four times BENCH_CAPACITY (at most the queue) and admits the rest.
func TestBenchPromotionRate(t *testing.T) {
	capacity, waiting := envInt(t, "BENCH_CAPACITY", 5000), envInt(t, "BENCH_WAITING", 20000)
	ctx := context.Background()
	rdb, store := benchStore(t)
	url := amqptest.Vhost(t)
	pub, err := amqpx.NewPublisher(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	kp, err := events.NewKafkaProducer(kafkatest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer kp.Close()

	const id = "bench-promote"
	fillStart := time.Now()
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: id, Rows: 200, SeatsPerRow: max(200, 4*capacity/200),
		Capacity: capacity, Hold: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	paused := true
	store.UpdateEvent(ctx, id, booking.EventUpdate{Paused: &paused})
	// The first 20,000 join through the script; the rest of a larger queue
	// is written as joins leave it once their facts are published (one
	// waiting entry per user, score = sequence; docs/booking-engine.md),
	// 10,000 per pipelined ZADD: joining a million users one by one takes
	// longer than a benchmark run on a loaded two-core machine should take.
	joined := min(waiting, 20000)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 32 {
		wg.Go(func() {
			for n := next.Add(1); n <= int64(joined); n = next.Add(1) {
				if _, err := store.Enqueue(ctx, id, fmt.Sprintf("user-%06d", n)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	keys := booking.EventKeys(store.Prefix(), id)
	for from := joined + 1; from <= waiting; from += 10000 {
		z := make([]redis.Z, 0, 10000)
		for n := from; n < from+10000 && n <= waiting; n++ {
			z = append(z, redis.Z{Score: float64(n), Member: fmt.Sprintf("user-%06d", n)})
		}
		if err := rdb.ZAdd(ctx, keys[3], z...).Err(); err != nil { // waiting
			t.Fatal(err)
		}
	}
	if waiting > joined {
		if err := rdb.Set(ctx, keys[5], waiting, 0).Err(); err != nil { // the sequence counter
			t.Fatal(err)
		}
	}
	t.Logf("%d users queued in %v", waiting, time.Since(fillStart).Round(time.Millisecond))
	paused = false
	store.UpdateEvent(ctx, id, booking.EventUpdate{Paused: &paused})

	m := admission.NewMetrics(nil)
	ann := admission.New(store, pub, kp, zap.NewNop(), admission.WithMetrics(m),
		admission.WithConcurrency(envInt(t, "BENCH_CONCURRENCY", 1024)))
	p := admission.NewPromoter(store, ann, zap.NewNop())
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		amqpx.NewConsumer(url).Consume(cctx, amqpx.SlotReleasedQueue, p.HandleSlotReleased, amqpx.ConsumeOptions{Workers: 4})
	}()
	defer func() { cancel(); <-done }()

	admitted := func() int64 {
		c, err := store.Counts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return c.Active
	}
	outboxKey := booking.EventKeys(store.Prefix(), id)[7]
	outboxLen := func() int64 {
		n, err := rdb.HLen(ctx, outboxKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	phase := func(name string, want int64) {
		ob0 := outboxLen()
		before := admitted()
		start := time.Now()
		if err := ann.ReleaseSlot(ctx, id, messages.ReasonCapacity, ""); err != nil {
			t.Fatal(err)
		}
		for {
			if admitted() >= want && outboxLen() == ob0 {
				break
			}
			if time.Since(start) > 5*time.Minute {
				t.Fatalf("%s: timed out", name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		el := time.Since(start)
		n := admitted() - before
		t.Logf("%s: %d users admitted and announced in %v: %.0f users/s", name, n, el.Round(time.Millisecond), float64(n)/el.Seconds())
	}
	phase(fmt.Sprintf("fill empty room (capacity %d, %d waiting)", capacity, waiting), int64(capacity))
	c := min(4*capacity, waiting)
	if _, err := store.UpdateEvent(ctx, id, booking.EventUpdate{Capacity: &c}); err != nil {
		t.Fatal(err)
	}
	phase(fmt.Sprintf("capacity raised to %d (%d more)", c, c-capacity), int64(c))
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestBenchTimeoutLateness: 1000 timeout messages with a 1 s delay through
// the TTL wait queue; lateness is delivery time minus deadline.
func TestBenchTimeoutLateness(t *testing.T) {
	const n, delay = 1000, time.Second
	ctx := context.Background()
	url := amqptest.Vhost(t)
	pub, err := amqpx.NewPublisher(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	var mu sync.Mutex
	var late []time.Duration
	var early int
	got := make(chan struct{}, n)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		amqpx.NewConsumer(url).Consume(cctx, amqpx.TimeoutQueue, func(_ context.Context, d amqpx.Delivery) error {
			now := time.Now()
			m, err := messages.DecodeTimeout(d.Body)
			if err != nil {
				return amqpx.Permanent(err)
			}
			l := now.Sub(m.Deadline())
			mu.Lock()
			late = append(late, l)
			if l < 0 {
				early++
			}
			mu.Unlock()
			got <- struct{}{}
			return nil
		}, amqpx.ConsumeOptions{Workers: 8})
	}()
	defer func() { cancel(); <-done }()

	var wg sync.WaitGroup
	var next atomic.Int64
	start := time.Now()
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= n; i = next.Add(1) {
				deadline := time.Now().Add(delay)
				body, _ := json.Marshal(messages.NewTimeout("bench", fmt.Sprintf("u%d", i), i, deadline, time.Now()))
				if err := pub.PublishDelayed(ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey,
					amqpx.Message{Body: body}, time.Until(deadline)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	pubTime := time.Since(start)
	for range n {
		select {
		case <-got:
		case <-time.After(30 * time.Second):
			t.Fatal("timeouts missing")
		}
	}
	slices.Sort(late)
	q := func(p float64) time.Duration { return late[int(p*float64(len(late)-1))].Round(100 * time.Microsecond) }
	t.Logf("%d timeouts, delay %v (published in %v): lateness p50 %v, p90 %v, p99 %v, max %v; early %d",
		n, delay, pubTime.Round(time.Millisecond), q(0.5), q(0.9), q(0.99), late[len(late)-1].Round(100*time.Microsecond), early)
	if early > 0 {
		t.Errorf("%d messages delivered before their deadline", early)
	}
}
