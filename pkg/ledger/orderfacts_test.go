package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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

// Two replicas sweep at once, each publishing slowly: together they
// publish every order's facts, and no order's twice (each takes the rows
// the other does not hold, FOR UPDATE SKIP LOCKED).
func TestTwoOrderSweepsPublishEachOrderOnce(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	const n = 250 // more than one batch
	sales(t, l, n)
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
