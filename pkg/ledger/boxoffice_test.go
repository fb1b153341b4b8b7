package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// Box-office sales sold in Redis whose request never reached the ledger,
// swept by two gateways at once: each sale becomes one order, with the
// sale's operator, channel and customer reference, written (so audited)
// by one of them, its record leaves Redis, and the order sweep publishes
// each booking_completed once.
func TestBoxOfficeSweepersRecordEachSaleOnce(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "counter", Name: "Counter", Rows: 1, SeatsPerRow: 8, Capacity: 8})
	ctx := context.Background()
	const n = 3
	for i := range n {
		if _, err := g.store.SellAtBoxOffice(ctx, booking.BoxOfficeSale{EventID: g.event, SaleID: fmt.Sprintf("s%d", i),
			Channel: "desk", Count: 2, SoldBy: "otto", CustomerRef: fmt.Sprintf("walk-up %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if pending, err := g.store.PendingBoxOfficeSales(ctx, g.event, 0); err != nil || len(pending) != n {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	recorded := map[string]int{} // order id -> the sweeps that wrote it (and would audit it)
	for range 2 {
		wg.Go(func() {
			sw := &ledger.BoxOfficeSweeper{Ledger: g.led, Store: g.store, Age: time.Nanosecond,
				Recorded: func(_ context.Context, o ledger.Order) { mu.Lock(); recorded[o.OrderID]++; mu.Unlock() }}
			if _, err := sw.Sweep(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(recorded) != n {
		t.Fatalf("orders written: %v, want %d once each", recorded, n)
	}
	for id, k := range recorded {
		if k != 1 {
			t.Fatalf("order %s written by %d sweeps", id, k)
		}
	}
	for i := range n {
		o, err := g.led.OrderByPayment(ctx, booking.BoxOfficePaymentID(g.event, fmt.Sprintf("s%d", i)))
		if err != nil || o.Status != ledger.StatusCompleted || len(o.SeatIDs) != 2 || o.Channel != "desk" || o.SoldBy != "otto" ||
			o.CustomerRef != fmt.Sprintf("walk-up %d", i) || o.FactAt == nil {
			t.Fatalf("sale %d: %+v %v", i, o, err)
		}
	}
	if pending, err := g.store.PendingBoxOfficeSales(ctx, g.event, 0); err != nil || len(pending) != 0 {
		t.Fatalf("pending after the sweeps: %+v %v", pending, err)
	}
	if got, err := (&ledger.OrderPublisher{Ledger: g.led, Kafka: g.rec, Age: time.Nanosecond}).Sweep(ctx); got != n || err != nil {
		t.Fatalf("order sweep published %d: %v", got, err)
	}
	if done := g.rec.Topic(events.TopicBookingCompleted); len(done) != n {
		t.Fatalf("booking_completed: %d, want %d", len(done), n)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.MissingInLedger) != 0 || len(rec.MissingInRedis) != 0 {
		t.Fatalf("reconcile: %+v %v", rec, err)
	}
}
