package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// newBrokerHarness is a harness on the real brokers: its webhooks announce
// through the real RabbitMQ (a vhost of the test's own) and publish to the
// embedded Kafka, on the harness's clock. It returns the Kafka brokers.
func newBrokerHarness(t *testing.T) (*harness, []string) {
	hs := newHarness(t)
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	pub, err := amqpx.NewPublisher(context.Background(), amqptest.Vhost(t), amqpx.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	brokers := kafkatest.Start(t)
	kp, err := events.NewKafkaProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kp.Close() })
	hs.wh.Announcer, hs.wh.Kafka, hs.wh.Log, hs.wh.Now = admission.New(hs.store, pub, kp, log), kp, log, hs.now
	hs.h = hs.wh.Handler()
	return hs, brokers
}

// consumeExactly reads the topics of want (a consumer group of its own)
// until each has delivered exactly its number of records, and returns them
// by topic. It fails the test after 30 s, or as soon as a topic delivers
// more.
func consumeExactly(t *testing.T, brokers []string, want map[string]int) map[string][]kafka.Message {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var consumers sync.WaitGroup
	defer consumers.Wait()
	defer cancel()
	var mu sync.Mutex
	got := map[string][]kafka.Message{}
	for topic := range want {
		consumers.Go(func() {
			_ = events.Consume(ctx, brokers, "test-"+strings.ToLower(t.Name()), topic,
				func(_ context.Context, _ events.Event, m kafka.Message) error {
					mu.Lock()
					got[topic] = append(got[topic], m)
					mu.Unlock()
					return nil
				}, events.WithMaxWait(50*time.Millisecond))
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		done, over := true, false
		for topic, n := range want {
			done = done && len(got[topic]) == n
			over = over || len(got[topic]) > n
		}
		if done {
			defer mu.Unlock()
			return got
		}
		if over || time.Now().After(deadline) {
			counts := map[string]int{}
			for topic := range want {
				counts[topic] = len(got[topic])
			}
			mu.Unlock()
			t.Fatalf("kafka records %v, want %v", counts, want)
		}
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
}

// decoded is the events of Kafka records.
func decoded(t *testing.T, ms []kafka.Message) []events.Event {
	t.Helper()
	out := make([]events.Event, len(ms))
	for i, m := range ms {
		e, err := events.Decode(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e
	}
	return out
}

// TestLatePaymentAfterRejoinOnRealBrokers: P1's hold and grace expire, the
// user joins again and pays P2, then P1's success webhook arrives (and is
// retried), on the real Redis, RabbitMQ and the embedded Kafka. P1: 200
// refund and one payment_late fact (the retry carries the same id and
// time); P2 completes with one booking_completed.
func TestLatePaymentAfterRejoinOnRealBrokers(t *testing.T) {
	hs, brokers := newBrokerHarness(t)
	p1 := hs.pendingAs("ivy", "A1", "pay_ivy_1")
	hs.expire("ivy")
	p2 := hs.pendingAs("ivy", "A2", "pay_ivy_2")
	if st := hs.state("ivy"); st.Sequence != 2 {
		t.Fatalf("P2's hold: %+v", st)
	}
	for range 2 {
		if r := hs.signed(payment.PathSuccess, body("ivy", "A1", p1, "")); r.code != 200 || r.body["outcome"] != "refund" {
			t.Fatalf("P1: %d %s", r.code, r.raw)
		}
	}
	if r := hs.signed(payment.PathSuccess, body("ivy", "A2", p2, "")); r.code != 200 || r.body["outcome"] != "completed" {
		t.Fatalf("P2: %d %s", r.code, r.raw)
	}

	got := consumeExactly(t, brokers, map[string]int{events.TopicPaymentLate: 2, events.TopicBookingCompleted: 1})
	late, done := decoded(t, got[events.TopicPaymentLate]), decoded(t, got[events.TopicBookingCompleted])
	if late[0].ID != late[1].ID || !late[0].OccurredAt.Equal(late[1].OccurredAt) ||
		late[0].PaymentID != p1 || late[0].Sequence != 1 || late[0].SeatID != "A1" {
		t.Fatalf("payment_late %+v", late)
	}
	if done[0].PaymentID != p2 || done[0].Sequence != 2 || done[0].SeatID != "A2" {
		t.Fatalf("booking_completed %+v", done)
	}
}
