package main

import (
	"bytes"
	"context"
	"fmt"
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

// TestRepeatedWebhooksRepublishByteIdenticalRecords is issue 20's first
// point on the real brokers: a success webhook and a failure webhook, each
// repeated minutes later (the clock moves), publish booking_completed and
// payment_failed twice; the two Kafka records of each fact are the same
// bytes (key, value and the headers but request_id), time included.
func TestRepeatedWebhooksRepublishByteIdenticalRecords(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	var skew time.Duration
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	later := func(d time.Duration) { mu.Lock(); skew += d; mu.Unlock() }
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
	h := (&Webhooks{Store: store, Announcer: admission.New(store, pub, kp, log), Kafka: kp, Secret: secret, Log: log,
		Now: now}).Handler()
	post := func(path string, b []byte) {
		t.Helper()
		req := httptest.NewRequest("POST", path, strings.NewReader(string(b)))
		req.Header.Set(payment.SignatureHeader, payment.Sign(secret, now(), b))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body.String())
		}
	}

	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		Hold: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	pids := map[string]string{}
	for _, u := range []string{"ann", "bob"} {
		if _, err := store.Enqueue(ctx, "e1", u); err != nil {
			t.Fatal(err)
		}
		if _, err := store.LockSeat(ctx, "e1", u, map[string]string{"ann": "A1", "bob": "A2"}[u]); err != nil {
			t.Fatal(err)
		}
		p, err := store.InitiatePayment(ctx, "e1", u, "pay_"+u)
		if err != nil {
			t.Fatal(err)
		}
		pids[u] = p.PaymentID
	}
	for range 2 {
		post(payment.PathSuccess, body("ann", "A1", pids["ann"], ""))
		post(payment.PathFailure, failBody("bob", "A2", pids["bob"], "insufficient_funds"))
		later(5 * time.Minute)
	}

	var cmu sync.Mutex
	got := map[string][]kafka.Message{}
	var consumers sync.WaitGroup
	defer consumers.Wait()
	defer cancel()
	for _, topic := range []string{events.TopicBookingCompleted, events.TopicPaymentFailed} {
		consumers.Go(func() {
			_ = events.Consume(ctx, brokers, "test-republish", topic, func(_ context.Context, _ events.Event, m kafka.Message) error {
				cmu.Lock()
				got[m.Topic] = append(got[m.Topic], m)
				cmu.Unlock()
				return nil
			}, events.WithMaxWait(50*time.Millisecond))
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cmu.Lock()
		done, failed := got[events.TopicBookingCompleted], got[events.TopicPaymentFailed]
		cmu.Unlock()
		if len(done) == 2 && len(failed) == 2 {
			for _, pair := range [][]kafka.Message{done, failed} {
				if a, b := record(pair[0]), record(pair[1]); a != b {
					t.Errorf("republished record differs:\n%s\n%s", a, b)
				}
			}
			return
		}
		if time.Now().After(deadline) || len(done) > 2 || len(failed) > 2 {
			t.Fatalf("kafka: booking_completed %d, payment_failed %d", len(done), len(failed))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// record is a Kafka record's bytes: key, value and headers, except the
// request_id header, which traces the request that published this copy.
func record(m kafka.Message) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "key=%q value=%s", m.Key, m.Value)
	for _, h := range m.Headers {
		if h.Key != events.HeaderRequestID {
			fmt.Fprintf(&b, " %s=%q", h.Key, h.Value)
		}
	}
	return b.String()
}
