package main

import (
	"context"
	"net/http/httptest"
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
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestLatePaymentAfterRejoinOnRealBrokers is issue 11's first ordering
// end to end on the real Redis, RabbitMQ and the embedded Kafka: P1's hold
// and grace expire, the user joins again and pays P2, then P1's success
// webhook arrives (and is retried). P1: 200 refund and one payment_late
// fact (the retry carries the same id and time); P2 completes with one
// booking_completed.
func TestLatePaymentAfterRejoinOnRealBrokers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	var skew time.Duration
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)), booking.WithClock(now))
	pub, err := amqpx.NewPublisher(ctx, amqptest.Vhost(t), amqpx.WithLogger(log))
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
	h := (&Webhooks{Store: store, Announcer: admission.New(store, pub, kp, log), Kafka: kp, Secret: secret, Log: log}).Handler()
	post := func(path string, b []byte) (int, string) {
		req := httptest.NewRequest("POST", path, strings.NewReader(string(b)))
		req.Header.Set(payment.SignatureHeader, payment.Sign(secret, time.Now(), b))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}

	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		Hold: 10 * time.Second, Grace: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	store.Enqueue(ctx, "e1", "ivy")
	store.LockSeat(ctx, "e1", "ivy", "A1")
	p1, err := store.InitiatePayment(ctx, "e1", "ivy", "pay_ivy_1")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	skew = 20 * time.Second
	mu.Unlock()
	for range 2 {
		store.HandleTimeout(ctx, "e1", "ivy")
	}
	store.Enqueue(ctx, "e1", "ivy")
	store.LockSeat(ctx, "e1", "ivy", "A2")
	p2, err := store.InitiatePayment(ctx, "e1", "ivy", "pay_ivy_2")
	if err != nil || p2.Sequence != 2 {
		t.Fatalf("P2: %+v %v", p2, err)
	}
	for range 2 {
		if code, body := post(payment.PathSuccess, body("ivy", "A1", p1.PaymentID, "")); code != 200 || !strings.Contains(body, `"outcome":"refund"`) {
			t.Fatalf("P1: %d %s", code, body)
		}
	}
	if code, body := post(payment.PathSuccess, body("ivy", "A2", p2.PaymentID, "")); code != 200 || !strings.Contains(body, `"outcome":"completed"`) {
		t.Fatalf("P2: %d %s", code, body)
	}

	var cmu sync.Mutex
	var consumers sync.WaitGroup
	defer consumers.Wait() // after cancel (deferred earlier, runs later)
	defer cancel()
	got := map[string][]events.Event{}
	for _, topic := range []string{events.TopicPaymentLate, events.TopicBookingCompleted} {
		consumers.Go(func() {
			_ = events.Consume(ctx, brokers, "test-late", topic, func(_ context.Context, ev events.Event, _ kafka.Message) error {
				cmu.Lock()
				got[ev.Type] = append(got[ev.Type], ev)
				cmu.Unlock()
				return nil
			}, events.WithMaxWait(50*time.Millisecond))
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cmu.Lock()
		late, done := got[events.TopicPaymentLate], got[events.TopicBookingCompleted]
		cmu.Unlock()
		if len(late) == 2 && len(done) == 1 {
			if late[0].ID != late[1].ID || !late[0].OccurredAt.Equal(late[1].OccurredAt) ||
				late[0].PaymentID != p1.PaymentID || late[0].Sequence != 1 || late[0].SeatID != "A1" {
				t.Fatalf("payment_late %+v", late)
			}
			if done[0].PaymentID != p2.PaymentID || done[0].Sequence != 2 || done[0].SeatID != "A2" {
				t.Fatalf("booking_completed %+v", done)
			}
			return
		}
		if time.Now().After(deadline) || len(late) > 2 || len(done) > 1 {
			t.Fatalf("kafka: payment_late %+v, booking_completed %+v", late, done)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
