package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

// slowKafka records what it is given after a pause, so that sweeps
// running side by side overlap.
type slowKafka struct {
	events.Recorder
	pause time.Duration
}

func (k *slowKafka) Publish(ctx context.Context, evs ...events.Event) error {
	time.Sleep(k.pause)
	return k.Recorder.Publish(ctx, evs...)
}

// sales records n completed sales of event e1, one seat each, their
// facts unpublished (no webhook got them out).
func sales(t *testing.T, l *ledger.Ledger, n int) {
	t.Helper()
	at := time.Date(2026, 3, 14, 12, 0, 0, 123e6, time.UTC)
	for i := range n {
		if _, err := l.RecordSale(context.Background(), ledger.Sale{PaymentID: fmt.Sprintf("pay_%d", i), EventID: "e1",
			UserID: fmt.Sprintf("u%d", i), SeatID: fmt.Sprintf("S%d", i), Sequence: int64(i + 1), At: at}); err != nil {
			t.Fatal(err)
		}
	}
}

// sweepTogether runs two sweeps at once, as two replicas would, each
// publishing slowly to its own recorder; it answers the recorders and
// how many rows each sweep published.
func sweepTogether(t *testing.T, l *ledger.Ledger) ([]*slowKafka, []int) {
	t.Helper()
	kafka := []*slowKafka{{pause: 50 * time.Millisecond}, {pause: 50 * time.Millisecond}}
	var wg sync.WaitGroup
	swept := make([]int, 2)
	for i, k := range kafka {
		wg.Go(func() {
			var err error
			swept[i], err = (&ledger.OrderPublisher{Ledger: l, Kafka: k, Age: time.Nanosecond}).Sweep(context.Background())
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	return kafka, swept
}

// Two replicas sweep at once, each publishing slowly: together they
// publish every order's facts, and no order's twice (each takes the rows
// the other does not hold, FOR UPDATE SKIP LOCKED).
func TestTwoOrderSweepsPublishEachOrderOnce(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	const n = 250 // more than one batch
	sales(t, l, n)
	kafka, swept := sweepTogether(t, l)
	seen := map[string]int{}
	for _, k := range kafka {
		for _, e := range k.Topic(events.TopicBookingCompleted) {
			seen[e.PaymentID]++
		}
	}
	if swept[0]+swept[1] != n || len(seen) != n {
		t.Fatalf("sweeps published %v orders, %d distinct, want %d", swept, len(seen), n)
	}
	for pid, c := range seen {
		if c != 1 {
			t.Errorf("%s published %d times", pid, c)
		}
	}
	if swept[0] == 0 || swept[1] == 0 {
		t.Logf("one sweep did all the work: %v", swept)
	}
}

// The sweep leaves young orders to their webhook, and an order whose
// webhook recorded Kafka's acknowledgement is never swept; with Kafka
// down the backlog is counted and kept, and published once Kafka is back.
func TestOrderSweepAgeAcknowledgementAndBacklog(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	sales(t, l, 3)
	acked, err := l.OrderByPayment(ctx, "pay_0")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.FactsPublished(ctx, acked.OrderID); err != nil {
		t.Fatal(err)
	}
	k := &events.Recorder{}
	m := ledger.NewOrderFactMetrics(nil)
	p := &ledger.OrderPublisher{Ledger: l, Kafka: k, Metrics: m, Age: time.Hour}
	if n, err := p.Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("sweep of young orders: %d %v, want none", n, err)
	}
	if got := testutil.ToFloat64(m.Unpublished()); got != 2 {
		t.Fatalf("backlog %v, want 2", got)
	}
	p.Age = time.Nanosecond
	k.FailWith(errors.New("kafka down"))
	if n, err := p.Sweep(ctx); n != 0 || err == nil {
		t.Fatalf("sweep with Kafka down: %d %v, want an error", n, err)
	}
	if got := testutil.ToFloat64(m.Unpublished()); got != 2 {
		t.Fatalf("backlog with Kafka down %v, want 2", got)
	}
	k.FailWith(nil)
	if n, err := p.Sweep(ctx); n != 2 || err != nil {
		t.Fatalf("sweep: %d %v, want 2", n, err)
	}
	got := k.Topic(events.TopicBookingCompleted)
	if len(got) != 2 || got[0].PaymentID != "pay_1" || got[1].PaymentID != "pay_2" {
		t.Fatalf("published %+v, want pay_1 and pay_2", got)
	}
	if want := time.Date(2026, 3, 14, 12, 0, 0, 123e6, time.UTC); !got[0].OccurredAt.Equal(want) ||
		got[0].ID != events.ID(events.TopicBookingCompleted, "e1", "u1", 2, "pay_1") {
		t.Fatalf("fact %+v: not the sale's time and id", got[0])
	}
	if b := testutil.ToFloat64(m.Unpublished()); b != 0 {
		t.Fatalf("backlog after the sweep %v", b)
	}
	// a repeat of a sale whose facts are out puts nothing back
	sales(t, l, 3)
	if n, err := p.Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("sweep after repeats: %d %v", n, err)
	}
}

// failures records n first failures of event e1 that released a hold,
// one seat each, their facts unpublished (no webhook got them out).
func failures(t *testing.T, l *ledger.Ledger, n int) {
	t.Helper()
	at := time.Date(2026, 3, 14, 12, 0, 1, 456e6, time.UTC)
	for i := range n {
		if _, err := l.RecordFailure(context.Background(), ledger.Failure{PaymentID: fmt.Sprintf("fail_%d", i), EventID: "e1",
			UserID: fmt.Sprintf("f%d", i), SeatID: fmt.Sprintf("F%d", i), Sequence: int64(i + 1), Reason: "declined", At: at}); err != nil {
			t.Fatal(err)
		}
	}
}

// Two replicas sweep failed payments at once: together they publish
// every payment_failed, and none twice.
func TestTwoSweepsPublishEachFailureOnce(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	const n = 250 // more than one batch
	failures(t, l, n)
	sales(t, l, 3)
	kafka, swept := sweepTogether(t, l)
	seen, orders := map[string]int{}, 0
	for _, k := range kafka {
		for _, e := range k.Topic(events.TopicPaymentFailed) {
			seen[e.PaymentID]++
		}
		orders += len(k.Topic(events.TopicBookingCompleted))
	}
	if swept[0]+swept[1] != n+3 || len(seen) != n || orders != 3 {
		t.Fatalf("sweeps published %v rows, %d distinct failures, %d orders, want %d and 3", swept, len(seen), orders, n)
	}
	for pid, c := range seen {
		if c != 1 {
			t.Errorf("%s published %d times", pid, c)
		}
	}
}

// The first failure fixes the fact and writes the outbox row; a repeat
// (another reason, another time) writes nothing: no row after the
// acknowledgement, the same fact before it. A failure that released no
// hold has no fact and no row; the backlog counts failures with orders.
func TestFailureFactFixedByTheFirstFailure(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	if err := l.RecordPayment(ctx, ledger.Payment{PaymentID: "p1", EventID: "e1", UserID: "u1", SeatID: "A1,A2", Sequence: 7,
		Amount: 9000, Currency: "EUR"}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 14, 12, 0, 0, 123e6, time.UTC)
	first, err := l.RecordFailure(ctx, ledger.Failure{PaymentID: "p1", EventID: "e1", UserID: "u1", SeatID: "A1,A2", Sequence: 7,
		Reason: "insufficient_funds", At: at})
	if err != nil {
		t.Fatal(err)
	}
	facts := first.Facts()
	want := events.PaymentFailed("e1", "u1", "A1,A2", "p1", 7, "insufficient_funds", at).WithMoney(9000, "EUR")
	if len(facts) != 1 || !cmp.Equal(facts[0], want) {
		t.Fatalf("facts %+v, want %+v", facts, want)
	}
	repeat, err := l.RecordFailure(ctx, ledger.Failure{PaymentID: "p1", EventID: "e1", UserID: "u1", SeatID: "A1,A2", Sequence: 7,
		Reason: "timeout", At: at.Add(time.Minute)})
	if err != nil || !cmp.Equal(repeat.Facts(), facts) {
		t.Fatalf("repeat: %v %+v, want the first failure's fact", err, repeat.Facts())
	}
	if _, err := l.RecordFailure(ctx, ledger.Failure{PaymentID: "p2", EventID: "e1", UserID: "u2", Reason: "declined"}); err != nil {
		t.Fatal(err)
	}
	sales(t, l, 1)

	k := &events.Recorder{}
	m := ledger.NewOrderFactMetrics(nil)
	p := &ledger.OrderPublisher{Ledger: l, Kafka: k, Metrics: m, Age: time.Hour}
	if n, err := p.Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("sweep of young rows: %d %v", n, err)
	}
	if got := testutil.ToFloat64(m.Unpublished()); got != 2 {
		t.Fatalf("backlog %v, want the order and p1", got)
	}
	if err := l.FailureFactsPublished(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordFailure(ctx, ledger.Failure{PaymentID: "p1", EventID: "e1", UserID: "u1", Reason: "timeout", At: at}); err != nil {
		t.Fatal(err)
	}
	p.Age = time.Nanosecond
	if n, err := p.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v, want the order only", n, err)
	}
	if got := k.Topic(events.TopicPaymentFailed); len(got) != 0 {
		t.Fatalf("published %+v: acknowledged, repeated or without a fact", got)
	}
}
