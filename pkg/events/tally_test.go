package events_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
)

// TestTally: a tally over two topics counts each fact once, however often
// it is published, retries a failing Count, and stops with nil when its
// context is cancelled.
func TestTally(t *testing.T) {
	brokers := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := events.NewKafkaProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	facts := []events.Event{
		events.BookingRequested("e1", "u1", 1, at),
		events.BookingRequested("e1", "u2", 2, at),
		events.BookingCompleted("e1", "u1", "A1", "pay1", 1, at),
	}
	if err := p.Publish(ctx, append(facts, facts[0], facts[2])...); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[string]bool{}
	failOnce := true
	all := make(chan struct{})
	count := func(_ context.Context, e events.Event) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if failOnce {
			failOnce = false
			return false, errors.New("redis down")
		}
		if seen[e.ID] {
			return false, nil
		}
		seen[e.ID] = true
		if len(seen) == len(facts) {
			close(all)
		}
		return true, nil
	}
	tally := events.Tally{Brokers: brokers, GroupID: "tally-test", Count: count,
		Topics:  []string{events.TopicBookingRequest, events.TopicBookingCompleted},
		Options: []events.ConsumerOption{events.WithMaxWait(50 * time.Millisecond), events.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond)}}
	done := make(chan error, 1)
	go func() { done <- tally.Run(ctx) }()
	select {
	case <-all:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("counted %d of %d facts", len(seen), len(facts))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}

	if err := (events.Tally{Brokers: brokers, GroupID: "g"}).Run(context.Background()); err == nil {
		t.Error("a tally without topics and Count ran")
	}
}
