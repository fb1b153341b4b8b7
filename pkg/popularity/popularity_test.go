package popularity

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
)

var at = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// redisPrefix connects to the Redis on loopback and returns a key prefix
// used by this test only, deleted at cleanup.
func redisPrefix(t *testing.T) (*redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis on 127.0.0.1:6379: %v", err)
	}
	prefix := "test:" + uuid.NewString()
	t.Cleanup(func() {
		iter := rdb.Scan(ctx, 0, prefix+":*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	return rdb, prefix
}

func TestCountIsIdempotentPerMessage(t *testing.T) {
	rdb, prefix := redisPrefix(t)
	ctx := context.Background()
	c := NewCounter(rdb, prefix, time.Minute)
	e := events.BookingCompleted("evtA", "u1", "A1", "pay1", 1, at)
	for i, want := range []bool{true, false, false} {
		got, err := c.Count(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("count #%d = %v, want %v", i+1, got, want)
		}
	}
	ttl, err := rdb.TTL(ctx, SeenKey(prefix, e.ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > time.Minute {
		t.Errorf("seen marker TTL = %v, want (0, 1m]", ttl)
	}
	if _, err := c.Count(ctx, events.PaymentInitiated("evtA", "u1", "A1", "pay1", 1, at)); !errors.Is(err, ErrNotBookingCompleted) {
		t.Errorf("other type: %v, want ErrNotBookingCompleted", err)
	}
	got, err := Top(ctx, rdb, prefix, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Entry{{"evtA", 1}}, got); diff != "" {
		t.Errorf("ranking (-want +got):\n%s", diff)
	}
	// an order of three seats counts three seats sold, once
	multi := events.BookingCompleted("evtA", "u2", "A2,A3,C1", "pay2", 2, at)
	for range 2 {
		if _, err := c.Count(ctx, multi); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := Top(ctx, rdb, prefix, 10); !cmp.Equal([]Entry{{"evtA", 4}}, got) {
		t.Errorf("ranking after a 3-seat order: %+v, want evtA 4", got)
	}
}

func TestKeysShareOneHashTag(t *testing.T) {
	for _, k := range []string{RankingKey(""), SeenKey("", "id"), RankingKey("x"), SeenKey("x", "id")} {
		if slot(k) != slot(RankingKey("bo")) {
			t.Errorf("%s has hash tag %q, want %q", k, slot(k), slot(RankingKey("bo")))
		}
	}
	if RankingKey("") != "bo:{popular}:ranking" {
		t.Errorf("default ranking key = %s", RankingKey(""))
	}
}

// slot is the Redis Cluster hash tag: the text between the first { and }.
func slot(k string) string {
	for i := 0; i < len(k); i++ {
		if k[i] == '{' {
			for j := i + 1; j < len(k); j++ {
				if k[j] == '}' {
					return k[i+1 : j]
				}
			}
		}
	}
	return k
}

// runConsumer runs a consumer of group until it handled want messages.
func runConsumer(t *testing.T, brokers []string, group string, rdb *redis.Client, prefix string, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := NewConsumer(Config{Brokers: brokers, GroupID: group, Prefix: prefix}, rdb, nil)
	var handled atomic.Int64
	inner := c.Handle
	err := events.Consume(ctx, brokers, group, events.TopicBookingCompleted,
		func(ctx context.Context, e events.Event, m kafka.Message) error {
			if err := inner(ctx, e, m); err != nil {
				return err
			}
			if handled.Add(1) == want {
				cancel()
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if handled.Load() != want {
		t.Fatalf("handled %d messages, want %d", handled.Load(), want)
	}
}

func TestConsumerRanksEachBookingOnce(t *testing.T) {
	brokers := kafkatest.Start(t)
	rdb, prefix := redisPrefix(t)
	ctx := context.Background()
	p, err := events.NewKafkaProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	bookings := []events.Event{
		events.BookingCompleted("evtA", "u1", "A1", "pay1", 1, at),
		events.BookingCompleted("evtA", "u2", "A2", "pay2", 2, at),
		events.BookingCompleted("evtA", "u3", "A3", "pay3", 3, at),
		events.BookingCompleted("evtB", "u1", "B1", "pay4", 1, at),
		events.BookingCompleted("evtC", "u5", "C1", "pay5", 1, at),
		events.BookingCompleted("evtC", "u6", "C2", "pay6", 2, at),
	}
	if err := p.Publish(ctx, bookings...); err != nil {
		t.Fatal(err)
	}
	// A publisher retried: the same facts written again as new messages.
	if err := p.Publish(ctx, bookings[3], bookings[0], bookings[3]); err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"evtA", 3}, {"evtC", 2}, {"evtB", 1}}

	runConsumer(t, brokers, "popularity-1", rdb, prefix, 9)
	got, err := Top(ctx, rdb, prefix, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ranking (-want +got):\n%s", diff)
	}

	// Every message delivered again (a new group replays the topic, as a
	// consumer that crashed before committing would): nothing changes.
	runConsumer(t, brokers, "popularity-2", rdb, prefix, 9)
	got, err = Top(ctx, rdb, prefix, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[:2], got); diff != "" {
		t.Errorf("ranking after redelivery (-want +got):\n%s", diff)
	}
}

func TestConsumerRun(t *testing.T) {
	brokers := kafkatest.Start(t)
	rdb, prefix := redisPrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := events.NewKafkaProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan error, 1)
	go func() { done <- NewConsumer(Config{Brokers: brokers, Prefix: prefix}, rdb, nil).Run(ctx) }()

	e := events.BookingCompleted("evtZ", "u1", "Z1", "pay1", 1, at)
	if err := p.Publish(ctx, e, e); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := Top(ctx, rdb, prefix, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 {
			if diff := cmp.Diff([]Entry{{"evtZ", 1}}, got); diff != "" {
				t.Errorf("ranking (-want +got):\n%s", diff)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("booking never counted")
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

func TestTopEmptyAndBounds(t *testing.T) {
	rdb, prefix := redisPrefix(t)
	ctx := context.Background()
	got, err := Top(ctx, rdb, prefix, 5)
	if err != nil || len(got) != 0 {
		t.Errorf("empty ranking: %v, %v", got, err)
	}
	if got, err := Top(ctx, rdb, prefix, 0); err != nil || got != nil {
		t.Errorf("n=0: %v, %v", got, err)
	}
}
