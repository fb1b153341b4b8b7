package events_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
)

// TestConsumeOutlivesABrokerOutage: Consume keeps going through a broker
// outage (its fetches fail meanwhile) and handles what is published once
// the broker is back. Found by the fault suite: popularity exited
// ("fetch booking_completed: failed to dial") during a Kafka outage.
func TestConsumeOutlivesABrokerOutage(t *testing.T) {
	c := kafkatest.NewCluster(t)
	addr := c.ListenAddrs()[0]
	_, portS, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portS)
	p := newProducer(t, []string{addr})
	first := events.BookingCompleted("evt", "u1", "A1", "pay_1", 1, at)
	if err := p.Publish(context.Background(), first); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- events.Consume(ctx, []string{addr}, "outage", events.TopicBookingCompleted,
			func(_ context.Context, e events.Event, _ kafka.Message) error {
				got <- e.ID
				return nil
			}, events.WithRetryBackoff(100*time.Millisecond, time.Second))
	}()
	select {
	case id := <-got:
		if id != first.ID {
			t.Fatalf("got %s, want %s", id, first.ID)
		}
	case err := <-done:
		t.Fatalf("Consume returned before the outage: %v", err)
	case <-ctx.Done():
		t.Fatal("first message not consumed")
	}

	c.Close() // the outage
	select {
	case err := <-done:
		t.Fatalf("Consume returned during the broker outage: %v", err)
	case <-time.After(8 * time.Second):
	}
	// the broker is back (empty: kfake keeps nothing) on the same port
	kafkatest.NewCluster(t, kfake.Ports(port))
	second := events.BookingCompleted("evt", "u2", "A2", "pay_2", 2, at)
	for {
		if err := p.Publish(ctx, second); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("publish after the outage: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for {
		select {
		case id := <-got:
			if id == second.ID {
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Consume: %v", err)
				}
				return
			}
		case err := <-done:
			t.Fatalf("Consume returned after the outage: %v", err)
		case <-ctx.Done():
			t.Fatal("the message published after the outage was not consumed")
		}
	}
}
