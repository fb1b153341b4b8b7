package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/requestid"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

var at = time.Date(2026, 3, 14, 12, 0, 0, 123456789, time.UTC)

// oneOfEach returns one valid event of every type, for concert eventID.
func oneOfEach(eventID string) []events.Event {
	return []events.Event{
		events.BookingRequested(eventID, "user_1", 1234, at),
		events.UserPromoted(eventID, "user_1", 1234, at),
		events.PaymentInitiated(eventID, "user_1", "A12", "pay_789", 1234, at),
		events.BookingCompleted(eventID, "user_1", "A12", "pay_789", 1234, at),
		events.PaymentFailed(eventID, "user_2", "B3", "pay_790", 1235, "insufficient_funds", at),
		events.BookingCancelled(eventID, "user_3", "", 1236, events.CancelledFromQueue, at),
		events.BookingExpired(eventID, "user_4", "C7", 1237, at),
		events.PaymentLate(eventID, "user_4", "C7", "pay_791", 1237, at),
		events.EventRestored(eventID, 1763900000000000, "seats=100 sold=3 completed_users=3", at),
		events.EventCreated(eventID, "capacity=100 seats=500", at),
		events.EventUpdated(eventID, 1, "capacity=150", at),
		events.EventSoldOut(eventID, at),
		events.QueueRandomized(eventID, 1000, "5eed", "c0ffee", "d19e57", fairness.Beacon{}, at),
		events.ProviderDegraded(eventID, at, 12, "operator"),
		events.ProviderRecovered(eventID, at, 12, "breaker", at.Add(time.Minute)),
		events.OperatorAction(17, at, "alice", "session", "operator", "event.update", eventID, "", "203.0.113.7",
			[]byte(`{"paused":false}`), []byte(`{"paused":true}`)),
		events.OrderCancelled(3, eventID, "user_1", "A12", "pay_789", "show cancelled", 5000, "EUR", at),
		events.RefundIssued(3, eventID, "user_1", "A12", "pay_789", "show cancelled", 5000, "EUR", at),
		events.SeatsHeld(4, eventID, "alice", "A1,A2", "sponsor", at),
		events.SeatsKilled(5, eventID, "alice", "Z9", at),
		events.SeatsReleased(6, eventID, "alice", "A1,A2", at),
		events.SeatsAllocated(7, eventID, "alice", "A1,A2", "channel=partner", at),
		events.AllocationReleased(8, eventID, "alice", "A1", "channel=partner", at),
		events.AdmissionLogged(eventID, 1, 1234, "9a3c", "promoted", "0b1d", "77e2", at),
		events.CodeRedeemed(eventID, "u1", 3, 7, 1, "", at),
		events.PhaseStarted(4, eventID, "otto", "general", "public", at),
		events.PhaseEnded(4, eventID, "otto", "fanclub", at),
		events.RegistrationOpened(eventID, "otto", "verified", "ab12", at, at.Add(time.Hour)),
		events.Registered(5, eventID, "u1", at),
		events.SelectionDrawn(eventID, "otto", "draw", "cd34", 100, 2500, at),
		events.WaitlistJoined(eventID, "user_5", 1240, "2", at),
		events.OfferMade(eventID, "user_5", "C7", 1240, at.Add(time.Minute), at),
		offerEnded(eventID, "accepted"), offerEnded(eventID, "declined"), offerEnded(eventID, "expired"),
	}
}

func offerEnded(eventID, outcome string) events.Event {
	e, _ := events.OfferEnded(eventID, "user_5", "C7", 1240, outcome, at)
	return e
}

func TestConstructorsCoverEveryTopic(t *testing.T) {
	var got []string
	for _, e := range oneOfEach("evt") {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", e.Type, err)
		}
		got = append(got, e.Type)
	}
	if diff := cmp.Diff(events.AllTopics, got); diff != "" {
		t.Errorf("types (-AllTopics +constructors):\n%s", diff)
	}
}

func TestEnvelopeJSON(t *testing.T) {
	e := events.PaymentInitiated("event_456", "user_123", "A12", "pay_789", 0, at)
	b, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id":          e.ID,
		"type":        "payment_initiated",
		"version":     float64(3),
		"source":      "/boxoffice/bo",
		"occurred_at": "2026-03-14T12:00:00.123Z",
		"user_id":     "user_123",
		"event_id":    "event_456",
		"seat_id":     "A12",
		"payment_id":  "pay_789",
		"timestamp":   float64(at.Unix()),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("envelope (-want +got):\n%s", diff)
	}
}

// TestSeveralSeats (envelope version 3): a fact of an order of several
// seats carries seat_ids, and seat_id the seats joined by ','; a one-seat
// fact carries no seat_ids.
func TestSeveralSeats(t *testing.T) {
	e := events.BookingCompleted("event_456", "user_123", "A1,A2,C1", "pay_789", 3, at).WithMoney(13000, "USD")
	b, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := events.Decode(b)
	if err != nil || !cmp.Equal(back.SeatIDs, []string{"A1", "A2", "C1"}) || back.SeatID != "A1,A2,C1" || back.Amount != 13000 {
		t.Fatalf("decoded %+v %v from %s", back, err, b)
	}
	one, _ := events.Encode(events.BookingCompleted("event_456", "user_123", "A1", "pay_789", 3, at))
	if strings.Contains(string(one), "seat_ids") {
		t.Fatalf("one seat with seat_ids: %s", one)
	}
}

func TestIDIsDeterministic(t *testing.T) {
	a := events.BookingCompleted("evt", "u1", "A1", "pay1", 7, at)
	b := events.BookingCompleted("evt", "u1", "A1", "pay1", 7, at.Add(time.Hour))
	if a.ID != b.ID {
		t.Errorf("same fact, different ids: %s %s", a.ID, b.ID)
	}
	others := []events.Event{
		events.BookingCompleted("evt2", "u1", "A1", "pay1", 7, at),
		events.BookingCompleted("evt", "u2", "A1", "pay1", 7, at),
		events.BookingCompleted("evt", "u1", "A1", "pay2", 7, at),
		events.BookingCompleted("evt", "u1", "A1", "pay1", 8, at),
		events.PaymentInitiated("evt", "u1", "A1", "pay1", 7, at),
	}
	for _, o := range others {
		if o.ID == a.ID {
			t.Errorf("different fact %+v has the same id", o)
		}
	}
}

// TestIDIsStable pins the id of one fact: consumers dedupe across releases,
// so the id rule (namespace, field order) must never change.
func TestIDIsStable(t *testing.T) {
	got := events.BookingCompleted("event_456", "user_123", "A12", "pay_789", 1234, at).ID
	if want := "b73a77fe-ca77-5304-9893-64ac89389541"; got != want {
		t.Errorf("id = %s, want %s (the id rule changed)", got, want)
	}
}

func TestDecodeRejects(t *testing.T) {
	valid, err := events.Encode(events.BookingRequested("evt", "u1", 1, at))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   string
	}{
		{"not json", `{`},
		{"unknown type", strings.Replace(string(valid), `"booking_request"`, `"booking_whatever"`, 1)},
		{"unknown version", strings.Replace(string(valid), `"version":3`, `"version":4`, 1)},
		{"version 2 without source", strings.Replace(string(valid), `"source":"/boxoffice/bo",`, ``, 1)},
		{"amount without currency", strings.Replace(string(valid), `"timestamp"`, `"amount":5000,"timestamp"`, 1)},
		{"bad currency", strings.Replace(string(valid), `"timestamp"`, `"amount":5000,"currency":"eur","timestamp"`, 1)},
		{"no user", strings.Replace(string(valid), `"user_id":"u1"`, `"user_id":""`, 1)},
		{"no event", strings.Replace(string(valid), `"event_id":"evt"`, `"event_id":""`, 1)},
		{"no sequence", strings.Replace(string(valid), `"sequence":1,`, ``, 1)},
		{"bad time", strings.Replace(string(valid), `"occurred_at":"`, `"occurred_at":"x`, 1)},
		{"completed without payment", `{"id":"x","type":"booking_completed","version":1,"occurred_at":"2026-03-14T12:00:00.000Z","user_id":"u","event_id":"e","seat_id":"A1","timestamp":1}`},
		{"cancelled from nowhere", `{"id":"x","type":"booking_cancelled","version":1,"occurred_at":"2026-03-14T12:00:00.000Z","user_id":"u","event_id":"e","sequence":1,"reason":"bored","timestamp":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in == string(valid) {
				t.Fatal("test input did not change the valid event")
			}
			_, err := events.Decode([]byte(tt.in))
			if !errors.Is(err, events.ErrInvalid) {
				t.Errorf("Decode = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := events.Decode(valid); err != nil {
		t.Errorf("valid event rejected: %v", err)
	}
}

func newProducer(t testing.TB, brokers []string, opts ...events.ProducerOption) *events.KafkaProducer {
	t.Helper()
	p, err := events.NewKafkaProducer(brokers, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type received struct {
	ev  events.Event
	key string
	hdr map[string]string
}

// consumeN consumes topic with a fresh group until n messages arrived.
func consumeN(t *testing.T, brokers []string, topic string, n int) []received {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		got []received
	)
	err := events.Consume(ctx, brokers, "test-"+t.Name(), topic, func(_ context.Context, e events.Event, m kafka.Message) error {
		hdr := map[string]string{}
		for _, h := range m.Headers {
			hdr[h.Key] = string(h.Value)
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, received{ev: e, key: string(m.Key), hdr: hdr})
		if len(got) == n {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("consume %s: %v", topic, err)
	}
	if len(got) != n {
		t.Fatalf("consume %s: got %d messages, want %d (timed out)", topic, len(got), n)
	}
	return got
}

func TestEveryTypeRoundTripsThroughKafka(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newProducer(t, brokers, events.WithSource("/boxoffice/test"))
	ctx := context.Background()
	sent := oneOfEach("event_456")
	for i := range sent {
		sent[i].Source = "/boxoffice/test" // the producer's source replaces the default
	}
	if err := p.Publish(ctx, sent...); err != nil {
		t.Fatalf("publish: %v", err)
	}
	// A publisher retry: the same facts again, later. Same ids.
	again := oneOfEach("event_456")
	for i := range again {
		again[i].Source = "/boxoffice/test"
		again[i].OccurredAt = again[i].OccurredAt.Add(time.Second)
		again[i].Timestamp++
	}
	if err := p.Publish(ctx, again...); err != nil {
		t.Fatalf("publish again: %v", err)
	}
	for i, want := range sent {
		t.Run(want.Type, func(t *testing.T) {
			got := consumeN(t, brokers, want.Type, 2)
			if diff := cmp.Diff(want, got[0].ev); diff != "" {
				t.Errorf("round trip (-sent +received):\n%s", diff)
			}
			if diff := cmp.Diff(again[i], got[1].ev); diff != "" {
				t.Errorf("second publish (-sent +received):\n%s", diff)
			}
			if got[0].ev.ID != got[1].ev.ID {
				t.Errorf("same fact published twice has ids %s and %s", got[0].ev.ID, got[1].ev.ID)
			}
			for _, r := range got {
				if r.key != "event_456" {
					t.Errorf("key = %q, want the event_id", r.key)
				}
				wantHdr := map[string]string{"id": want.ID, "type": want.Type,
					"ce_specversion": "1.0", "ce_id": want.ID, "ce_source": "/boxoffice/test",
					"ce_type": "boxoffice." + want.Type, "ce_time": r.ev.OccurredAt.Format("2006-01-02T15:04:05.000Z"),
					"ce_subject": "event_456", "content-type": "application/json"}
				if diff := cmp.Diff(wantHdr, r.hdr); diff != "" {
					t.Errorf("headers (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestOneConcertStaysInOrder(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newProducer(t, brokers)
	const perEvent = 30
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= perEvent; i++ {
				e := events.BookingRequested(fmt.Sprintf("evt-%d", c), fmt.Sprintf("u%d", i), int64(i), at)
				if err := p.Publish(context.Background(), e); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := consumeN(t, brokers, events.TopicBookingRequest, 4*perEvent)
	last := map[string]int64{}
	for _, r := range got {
		if r.ev.Sequence <= last[r.ev.EventID] {
			t.Fatalf("%s: sequence %d after %d", r.ev.EventID, r.ev.Sequence, last[r.ev.EventID])
		}
		last[r.ev.EventID] = r.ev.Sequence
	}
}

func TestPublishToStoppedBrokerFails(t *testing.T) {
	c := kafkatest.NewCluster(t)
	p := newProducer(t, c.ListenAddrs(), events.WithMaxAttempts(2), events.WithWriteTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Publish(ctx, events.BookingRequested("evt", "u1", 1, at)); err != nil {
		t.Fatalf("publish while up: %v", err)
	}
	c.Close()
	start := time.Now()
	err := p.Publish(ctx, events.BookingRequested("evt", "u2", 2, at))
	if err == nil {
		t.Fatal("publish to a stopped broker returned nil")
	}
	if ctx.Err() != nil {
		t.Fatalf("publish failed only through the test deadline after %v: %v", time.Since(start), err)
	}
	t.Logf("failed after %v: %v", time.Since(start), err)
}

func TestPublishRejectsInvalidEvents(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newProducer(t, brokers)
	bad := events.BookingCompleted("evt", "u1", "A1", "", 1, at) // no payment id
	err := p.Publish(context.Background(), events.BookingRequested("evt", "u1", 1, at), bad)
	if !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("Publish = %v, want ErrInvalid", err)
	}
}

func TestConsumeRetriesUntilHandlerSucceeds(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newProducer(t, brokers)
	want := events.BookingExpired("evt", "u1", "A1", 9, at)
	if err := p.Publish(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var calls []string
	err := events.Consume(ctx, brokers, "retry", events.TopicBookingExpired,
		func(ctx context.Context, e events.Event, _ kafka.Message) error {
			calls = append(calls, events.MessageID(ctx))
			if len(calls) < 3 {
				return errors.New("redis down")
			}
			cancel()
			return nil
		}, events.WithRetryBackoff(10*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{want.ID, want.ID, want.ID}, calls); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}

	// The offset was committed after the success: the group does not see
	// the message again, a new message is the next one delivered.
	next := events.BookingExpired("evt", "u2", "A2", 10, at)
	if err := p.Publish(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if first := firstID(t, brokers, "retry", events.TopicBookingExpired); first != next.ID {
		t.Errorf("after commit the group got %s, want the next message %s", first, next.ID)
	}
}

func TestConsumeGivesUpAfterMaxRetriesWithoutCommitting(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newProducer(t, brokers)
	want := events.UserPromoted("evt", "u1", 1, at)
	if err := p.Publish(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("boom")
	err := events.Consume(ctx, brokers, "giveup", events.TopicUserPromoted,
		func(context.Context, events.Event, kafka.Message) error { return boom },
		events.WithMaxRetries(2), events.WithRetryBackoff(time.Millisecond, time.Millisecond))
	if !errors.Is(err, boom) {
		t.Fatalf("Consume = %v, want the handler's error", err)
	}
	// Not committed: a restarted consumer gets the same message.
	if got := firstID(t, brokers, "giveup", events.TopicUserPromoted); got != want.ID {
		t.Errorf("redelivered %q, want %q", got, want.ID)
	}
}

// A permanent handler error dead-letters the message at once (no retry,
// whatever the backoff) and a message that does not decode is
// dead-lettered too; both are committed and the partition goes on.
func TestConsumeDeadLettersPermanentErrorsAndInvalidMessages(t *testing.T) {
	brokers := kafkatest.Start(t)
	topic := events.TopicBookingExpired
	// Same key as the events below: one partition, so the order is known.
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), kafka.Message{Key: []byte("evt"), Value: []byte("not an event")}); err != nil {
		t.Fatal(err)
	}
	p := newProducer(t, brokers)
	poison := events.BookingExpired("evt", "u1", "A1", 9, at)
	good := events.BookingExpired("evt", "u2", "A2", 10, at)
	if err := p.Publish(context.Background(), poison, good); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("seat id unknown")
	var handled, dead []string
	err := events.Consume(ctx, brokers, "dead", topic,
		func(_ context.Context, e events.Event, _ kafka.Message) error {
			handled = append(handled, e.ID)
			if e.ID == poison.ID {
				return retry.Permanent(boom)
			}
			cancel()
			return nil
		},
		events.WithRetryBackoff(time.Millisecond, time.Millisecond),
		events.WithDeadLetter(func(_ context.Context, m kafka.Message, reason string, err error) error {
			id := string(m.Value)
			if e, derr := events.Decode(m.Value); derr == nil {
				id = e.ID
			}
			if reason == events.DeadReasonPermanent && !errors.Is(err, boom) {
				t.Errorf("dead letter %s: error %v does not wrap the handler's", id, err)
			}
			dead = append(dead, reason+" "+id)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{poison.ID, good.ID}, handled); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
	want := []string{events.DeadReasonInvalid + " not an event", events.DeadReasonPermanent + " " + poison.ID}
	if diff := cmp.Diff(want, dead); diff != "" {
		t.Errorf("dead letters (-want +got):\n%s", diff)
	}

	// All three are committed: the group's next message is a new one.
	next := events.BookingExpired("evt", "u3", "A3", 11, at)
	if err := p.Publish(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if first := firstID(t, brokers, "dead", topic); first != next.ID {
		t.Errorf("after the dead letters the group got %s, want the next message %s", first, next.ID)
	}
}

// A dead-letter function that fails stops Consume without committing: the
// message comes back to the group.
func TestConsumeStopsWhenDeadLetteringFails(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newProducer(t, brokers)
	poison := events.UserPromoted("evt", "u1", 1, at)
	if err := p.Publish(context.Background(), poison); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := errors.New("dead-letter store unavailable")
	err := events.Consume(ctx, brokers, "dead-fails", events.TopicUserPromoted,
		func(context.Context, events.Event, kafka.Message) error { return retry.Permanent(errors.New("bad")) },
		events.WithDeadLetter(func(context.Context, kafka.Message, string, error) error { return full }))
	if !errors.Is(err, full) {
		t.Fatalf("Consume = %v, want the dead-letter error", err)
	}
	if got := firstID(t, brokers, "dead-fails", events.TopicUserPromoted); got != poison.ID {
		t.Errorf("redelivered %q, want %q", got, poison.ID)
	}
}

// firstID consumes topic as group until the first message and returns its
// event id: what the group's committed offset delivers next.
func firstID(t *testing.T, brokers []string, group, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first string
	err := events.Consume(ctx, brokers, group, topic, func(_ context.Context, e events.Event, _ kafka.Message) error {
		first = e.ID
		cancel()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return first
}

func TestRecorder(t *testing.T) {
	var r events.Recorder
	var _ events.Producer = &r
	ctx := context.Background()
	a := events.BookingRequested("evt", "u1", 1, at)
	b := events.UserPromoted("evt", "u1", 1, at)
	if err := r.Publish(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	if err := r.Publish(ctx, events.BookingCompleted("evt", "u1", "", "", 1, at)); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("invalid event: %v, want ErrInvalid", err)
	}
	down := errors.New("down")
	r.FailWith(down)
	if err := r.Publish(ctx, a); !errors.Is(err, down) {
		t.Errorf("FailWith: %v", err)
	}
	if diff := cmp.Diff([]events.Event{a, b}, r.Events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]events.Event{b}, r.Topic(events.TopicUserPromoted)); diff != "" {
		t.Errorf("topic (-want +got):\n%s", diff)
	}
}

// The request id of the publisher's context travels as a header (not in the
// envelope) and is back in the consumer handler's context; an event's own
// RequestID (set by a relay publishing for many requests) wins.
func TestRequestIDTravels(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newProducer(t, brokers)
	at := time.UnixMilli(1_800_000_000_000)
	ctx := requestid.With(context.Background(), "REQ123")
	own := events.BookingRequested("e1", "u2", 2, at)
	own.RequestID = "REQ456"
	none := events.BookingRequested("e1", "u3", 3, at)
	none.RequestID = events.NoRequestID // no request caused it: no header, whatever the context says
	if err := p.Publish(ctx, events.BookingRequested("e1", "u1", 1, at), own, none); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]string{}
	err := events.Consume(cctx, brokers, "test-rid", events.TopicBookingRequest, func(ctx context.Context, e events.Event, m kafka.Message) error {
		got[e.UserID] = requestid.From(ctx)
		for _, h := range m.Headers {
			if h.Key == events.HeaderRequestID {
				got[e.UserID+" header"] = string(h.Value)
			}
		}
		if len(got) == 5 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["u1"] != "REQ123" || got["u2"] != "REQ456" || got["u3 header"] != "" {
		t.Fatalf("handler saw request ids %v", got)
	}
}

// TestDecodeAcceptsVersion1: records written before the version 2 upgrade
// (no source, no money) stay readable for the topics' retention.
func TestDecodeAcceptsVersion1(t *testing.T) {
	v1 := `{"id":"b73a77fe-ca77-5304-9893-64ac89389541","type":"booking_completed","version":1,"occurred_at":"2026-03-14T12:00:00.123Z","user_id":"user_123","event_id":"event_456","seat_id":"A12","payment_id":"pay_789","sequence":1234,"timestamp":1773489600}`
	e, err := events.Decode([]byte(v1))
	if err != nil || e.Version != 1 || e.Source != "" {
		t.Fatalf("Decode(v1) = %+v, %v", e, err)
	}
}

// Publish counts every event it wrote under its topic, however the
// topics of one call interleave.
func TestPublishCountsEachTopicsEvents(t *testing.T) {
	brokers := kafkatest.Start(t)
	reg := prometheus.NewRegistry()
	p := newProducer(t, brokers, events.WithRegisterer(reg))
	at := time.UnixMilli(1_800_000_000_000)
	evs := []events.Event{events.BookingRequested("e1", "u1", 1, at), events.BookingRequested("e1", "u2", 2, at),
		events.BookingCancelled("e1", "u1", "", 1, events.CancelledFromQueue, at), events.BookingRequested("e1", "u3", 3, at)}
	if err := p.Publish(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP boxoffice_events_published_total Events written to Kafka and acknowledged (acks=all), by topic.
# TYPE boxoffice_events_published_total counter
boxoffice_events_published_total{topic="booking_cancelled"} 1
boxoffice_events_published_total{topic="booking_request"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "boxoffice_events_published_total"); err != nil {
		t.Fatal(err)
	}
}
