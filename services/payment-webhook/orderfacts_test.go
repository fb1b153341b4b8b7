package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/segmentio/kafka-go"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

var errKafkaDown = errors.New("kafka: connection refused")

// sweepFacts runs one pass of the service's order-fact sweep, as its
// background loop does on a tick, taking every fact however young.
func (hs *harness) sweepFacts(l *ledger.Ledger) int {
	hs.t.Helper()
	n, err := (&ledger.OrderPublisher{Ledger: l, Kafka: hs.wh.Kafka, Age: time.Nanosecond}).Sweep(context.Background())
	if err != nil {
		hs.t.Fatal(err)
	}
	return n
}

// TestKafkaOutageLongerThanTheRetriesLosesNoSaleFact: Kafka is down when
// the success webhook (and a late one) comes and the provider gives up
// after its retries: each answer is 503, the orders are in the ledger.
// Once Kafka is back the sweep publishes booking_completed and
// payment_late, the facts the webhook would have published (same id and
// bytes); a second sweep publishes nothing more.
func TestKafkaOutageLongerThanTheRetriesLosesNoSaleFact(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	ctx := context.Background()
	sold, late := hs.issued(l, "alice", "A1"), hs.issued(l, "erin", "A2")
	hs.expire("erin")

	hs.rec.FailWith(errKafkaDown)
	for range 3 { // the provider's retries, then it gives up
		if r := hs.signed(payment.PathSuccess, body("alice", "A1", sold, "")); r.code != 503 {
			t.Fatalf("success with Kafka down: %d %s", r.code, r.raw)
		}
		if r := hs.signed(payment.PathSuccess, body("erin", "A2", late, "")); r.code != 503 {
			t.Fatalf("late success with Kafka down: %d %s", r.code, r.raw)
		}
	}
	for _, pid := range []string{sold, late} {
		if _, err := l.OrderByPayment(ctx, pid); err != nil {
			t.Fatalf("order of %s: %v", pid, err)
		}
	}
	hs.rec.FailWith(nil)
	if n := hs.sweepFacts(l); n != 2 {
		t.Fatalf("sweep published the facts of %d orders, want 2", n)
	}
	if n := hs.sweepFacts(l); n != 0 {
		t.Fatalf("second sweep published %d orders again", n)
	}
	completed, refunds := hs.rec.Topic(events.TopicBookingCompleted), hs.rec.Topic(events.TopicPaymentLate)
	if len(completed) != 1 || len(refunds) != 1 {
		t.Fatalf("after the outage: %d booking_completed, %d payment_late, want 1 each", len(completed), len(refunds))
	}

	// the facts are those the webhook publishes: a repeat now answers
	// 200 and publishes the same id, time and payload
	for _, w := range []struct {
		pid, user, seat, topic string
		swept                  events.Event
	}{{sold, "alice", "A1", events.TopicBookingCompleted, completed[0]}, {late, "erin", "A2", events.TopicPaymentLate, refunds[0]}} {
		if r := hs.signed(payment.PathSuccess, body(w.user, w.seat, w.pid, "")); r.code != 200 {
			t.Fatalf("repeat of %s: %d %s", w.pid, r.code, r.raw)
		}
		again := hs.rec.Topic(w.topic)
		if len(again) != 2 {
			t.Fatalf("%s: %d facts, want 2", w.topic, len(again))
		}
		if d := cmp.Diff(w.swept, again[1]); d != "" {
			t.Errorf("%s: the swept fact differs from the webhook's (-swept +webhook):\n%s", w.topic, d)
		}
		if w.swept.PaymentID != w.pid || w.swept.Amount != 5000 || w.swept.SeatID != w.seat {
			t.Errorf("%s: %+v", w.topic, w.swept)
		}
	}
	if n := hs.sweepFacts(l); n != 0 {
		t.Fatalf("sweep after the repeats published %d orders", n)
	}
}

// outage is a Kafka producer that can be cut off.
type outage struct {
	producer
	down atomic.Bool
}

func (o *outage) Publish(ctx context.Context, evs ...events.Event) error {
	if o.down.Load() {
		return errKafkaDown
	}
	return o.producer.Publish(ctx, evs...)
}

// TestSweptSaleFactsAreTheWebhooksBytes: on the real brokers, three
// sales complete, then Kafka is cut off for the last seat's: its webhook
// answers 503 until the provider gives up. Kafka back, the sweep
// publishes its booking_completed and the event_sold_out; the provider's
// late repeat publishes both again, and each pair of Kafka records is the
// same bytes (key, value, headers but request_id): a consumer dedupes by
// id.
func TestSweptSaleFactsAreTheWebhooksBytes(t *testing.T) {
	hs, brokers := newBrokerHarness(t)
	l := ledgertest.Open(t, ledgertest.URL(t))
	hs.wh.Ledger = l
	kfk := &outage{producer: hs.wh.Kafka}
	hs.wh.Kafka = kfk
	for i, user := range []string{"ann", "bob", "cat"} {
		seat := fmt.Sprintf("A%d", i+1)
		if r := hs.signed(payment.PathSuccess, body(user, seat, hs.issued(l, user, seat), "")); r.code != 200 {
			t.Fatalf("%s: %d %s", user, r.code, r.raw)
		}
	}
	last := hs.issued(l, "dan", "A4")
	kfk.down.Store(true)
	for range 2 {
		if r := hs.signed(payment.PathSuccess, body("dan", "A4", last, "")); r.code != 503 {
			t.Fatalf("last seat with Kafka down: %d %s", r.code, r.raw)
		}
	}
	kfk.down.Store(false)
	if n := hs.sweepFacts(l); n != 1 {
		t.Fatalf("sweep published %d orders, want 1", n)
	}
	if r := hs.signed(payment.PathSuccess, body("dan", "A4", last, "")); r.code != 200 || r.body["outcome"] != "duplicate" {
		t.Fatalf("late repeat: %d %s", r.code, r.raw)
	}

	got := consumeExactly(t, brokers, map[string]int{events.TopicBookingCompleted: 5, events.TopicEventSoldOut: 2})
	var dan []kafka.Message
	for _, m := range got[events.TopicBookingCompleted] {
		if e := decoded(t, []kafka.Message{m})[0]; e.PaymentID == last {
			dan = append(dan, m)
		}
	}
	for topic, pair := range map[string][]kafka.Message{events.TopicBookingCompleted: dan, events.TopicEventSoldOut: got[events.TopicEventSoldOut]} {
		if len(pair) != 2 {
			t.Fatalf("%s: %d records of the fact, want 2", topic, len(pair))
		}
		if a, b := record(pair[0]), record(pair[1]); a != b {
			t.Errorf("%s: the swept record differs from the webhook's:\n%s\n%s", topic, a, b)
		}
	}
}

// TestKafkaOutageLongerThanTheRetriesLosesNoFailureFact: Kafka is down
// when the failure webhook comes and the provider gives up after its
// retries: each answer is 503, the failure is in the ledger. Once Kafka
// is back the sweep publishes payment_failed, the fact the webhook would
// have published (same id and bytes, the first webhook's reason), once;
// a repeat after the sweep publishes the same again and puts nothing
// back for the sweep.
func TestKafkaOutageLongerThanTheRetriesLosesNoFailureFact(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	ctx := context.Background()
	pid := hs.issued(l, "alice", "A1")

	hs.rec.FailWith(errKafkaDown)
	for i := range 3 { // the provider's retries, then it gives up
		reason := "insufficient_funds"
		if i > 0 {
			reason = "timeout" // a repeat does not change the fact
		}
		if r := hs.signed(payment.PathFailure, failBody("alice", "A1", pid, reason)); r.code != 503 {
			t.Fatalf("failure with Kafka down: %d %s", r.code, r.raw)
		}
	}
	if p, err := l.Payment(ctx, pid); err != nil || p.Outcome != ledger.OutcomeFailed {
		t.Fatalf("payment %s: %v %+v", pid, err, p)
	}
	hs.rec.FailWith(nil)
	if n := hs.sweepFacts(l); n != 1 {
		t.Fatalf("sweep published %d facts, want the failure's", n)
	}
	if n := hs.sweepFacts(l); n != 0 {
		t.Fatalf("second sweep published %d again", n)
	}
	failed := hs.rec.Topic(events.TopicPaymentFailed)
	if len(failed) != 1 {
		t.Fatalf("after the outage: %d payment_failed, want 1", len(failed))
	}
	swept := failed[0]
	if swept.PaymentID != pid || swept.SeatID != "A1" || swept.Amount != 5000 || swept.Currency != "EUR" ||
		swept.Reason != "insufficient_funds" || swept.Sequence == 0 ||
		swept.ID != events.ID(events.TopicPaymentFailed, "e1", "alice", swept.Sequence, pid) {
		t.Fatalf("swept fact %+v", swept)
	}

	if r := hs.signed(payment.PathFailure, failBody("alice", "A1", pid, "cancelled")); r.code != 200 || r.body["outcome"] != "duplicate" {
		t.Fatalf("repeat after the sweep: %d %s", r.code, r.raw)
	}
	again := hs.rec.Topic(events.TopicPaymentFailed)
	if len(again) != 2 {
		t.Fatalf("%d payment_failed, want 2", len(again))
	}
	if d := cmp.Diff(swept, again[1]); d != "" {
		t.Errorf("the swept fact differs from the webhook's (-swept +webhook):\n%s", d)
	}
	if n := hs.sweepFacts(l); n != 0 {
		t.Fatalf("sweep after the repeat published %d", n)
	}
}

// TestFailureFactAcknowledgedIsNotSwept: a failure webhook whose
// payment_failed Kafka acknowledged leaves nothing for the sweep, and a
// failure that released no hold (no fact) leaves nothing either.
func TestFailureFactAcknowledgedIsNotSwept(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	pid := hs.issued(l, "alice", "A1")
	if r := hs.signed(payment.PathFailure, failBody("alice", "A1", pid, "")); r.code != 200 {
		t.Fatalf("failure: %d %s", r.code, r.raw)
	}
	late := hs.issued(l, "erin", "A2")
	hs.expire("erin")
	if r := hs.signed(payment.PathFailure, failBody("erin", "A2", late, "")); r.code != 200 || r.body["outcome"] != "no_hold" {
		t.Fatalf("failure without a hold: %d %s", r.code, r.raw)
	}
	if n := hs.sweepFacts(l); n != 0 {
		t.Fatalf("sweep published %d facts, want none", n)
	}
	if got := hs.rec.Topic(events.TopicPaymentFailed); len(got) != 1 || got[0].PaymentID != pid {
		t.Fatalf("payment_failed %+v, want alice's once", got)
	}
}

// TestSweptFailureFactIsTheWebhooksBytes: on the real brokers, Kafka is
// cut off for a failure webhook until the provider gives up; Kafka back,
// the sweep publishes its payment_failed and the provider's late repeat
// (with another reason) publishes it again: the two Kafka records are the
// same bytes (key, value, headers but request_id).
func TestSweptFailureFactIsTheWebhooksBytes(t *testing.T) {
	hs, brokers := newBrokerHarness(t)
	l := ledgertest.Open(t, ledgertest.URL(t))
	hs.wh.Ledger = l
	kfk := &outage{producer: hs.wh.Kafka}
	hs.wh.Kafka = kfk
	pid := hs.issued(l, "ann", "A1")
	kfk.down.Store(true)
	for range 2 {
		if r := hs.signed(payment.PathFailure, failBody("ann", "A1", pid, "insufficient_funds")); r.code != 503 {
			t.Fatalf("failure with Kafka down: %d %s", r.code, r.raw)
		}
	}
	kfk.down.Store(false)
	if n := hs.sweepFacts(l); n != 1 {
		t.Fatalf("sweep published %d, want the failure", n)
	}
	if r := hs.signed(payment.PathFailure, failBody("ann", "A1", pid, "timeout")); r.code != 200 || r.body["outcome"] != "duplicate" {
		t.Fatalf("late repeat: %d %s", r.code, r.raw)
	}
	pair := consumeExactly(t, brokers, map[string]int{events.TopicPaymentFailed: 2})[events.TopicPaymentFailed]
	if a, b := record(pair[0]), record(pair[1]); a != b {
		t.Errorf("the swept record differs from the webhook's:\n%s\n%s", a, b)
	}
	if e := decoded(t, pair[:1])[0]; e.Reason != "insufficient_funds" || e.PaymentID != pid || e.Amount != 5000 {
		t.Errorf("swept fact %+v", e)
	}
}

// TestNoHoldFailureRepeatedWhileKafkaIsDown: a failure webhook for a
// payment whose hold had already ended answers no_hold and has no
// payment_failed (docs/events-kafka.md); its repeats, while Kafka is down
// and after, answer the same: 200 no_hold, no fact for the webhook nor the
// sweep, so what is published never depends on whether the provider
// retried or Kafka was up. Its success after it is late, as after any
// failure.
func TestNoHoldFailureRepeatedWhileKafkaIsDown(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	ctx := context.Background()
	pid := hs.issued(l, "erin", "A2")
	hs.expire("erin")
	if r := hs.signed(payment.PathFailure, failBody("erin", "A2", pid, "insufficient_funds")); r.code != 200 || r.body["outcome"] != "no_hold" {
		t.Fatalf("failure without a hold: %d %s", r.code, r.raw)
	}
	hs.rec.FailWith(errKafkaDown)
	for range 3 {
		if r := hs.signed(payment.PathFailure, failBody("erin", "A2", pid, "timeout")); r.code != 200 || r.body["outcome"] != "no_hold" {
			t.Fatalf("repeat with Kafka down: %d %s", r.code, r.raw)
		}
	}
	hs.rec.FailWith(nil)
	if n := hs.sweepFacts(l); n != 0 {
		t.Fatalf("sweep published %d facts, want none", n)
	}
	if r := hs.signed(payment.PathFailure, failBody("erin", "A2", pid, "timeout")); r.code != 200 || r.body["outcome"] != "no_hold" {
		t.Fatalf("repeat with Kafka back: %d %s", r.code, r.raw)
	}
	if got := hs.rec.Topic(events.TopicPaymentFailed); len(got) != 0 {
		t.Fatalf("payment_failed %+v, want none", got)
	}
	if p, err := l.Payment(ctx, pid); err != nil || p.Outcome != ledger.OutcomeFailed || p.Reason != "insufficient_funds" || p.FailedAt != nil {
		t.Fatalf("payment %+v %v", p, err)
	}
	if r := hs.signed(payment.PathSuccess, body("erin", "A2", pid, "")); r.code != 200 || r.body["outcome"] != "refund" {
		t.Fatalf("success after the failure: %d %s", r.code, r.raw)
	}
}
