package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

// Box-office sales sold in Redis whose request never reached the ledger,
// swept by six gateways at once: no sweep fails (the sold-seat index
// stops a second write of a sale before its payment id's conflict can,
// and the sale is read back), each sale becomes one order, with the
// sale's operator, channel and customer reference, written (so audited)
// by one of them, its record leaves Redis, and the order sweep publishes
// each booking_completed once.
func TestBoxOfficeSweepersRecordEachSaleOnce(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "counter", Name: "Counter", Rows: 4, SeatsPerRow: 10, Capacity: 40})
	ctx := context.Background()
	const n = 20
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
	for range 6 {
		wg.Go(func() {
			sw := &ledger.BoxOfficeSweeper{Ledger: g.led, Store: g.store, Age: time.Nanosecond,
				Recorded: func(_ context.Context, o ledger.Order, _ booking.BoxOfficeRecord) {
					mu.Lock()
					recorded[o.OrderID]++
					mu.Unlock()
				}}
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

// One sweep records the box-office sales of every event, read at once;
// while the ledger does not answer, the gauge counts the sales it could
// not record (and the records stay in Redis), and 0 once they are.
func TestBoxOfficeSweepOfManyEventsAndItsGauge(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "hall-0", Name: "Hall", Rows: 1, SeatsPerRow: 4, Capacity: 4})
	ctx := context.Background()
	const events = 12
	for i := range events {
		id := fmt.Sprintf("hall-%d", i)
		if i > 0 {
			cfg := booking.EventConfig{ID: id, Name: "Hall", Rows: 1, SeatsPerRow: 4, Capacity: 4}
			if _, _, err := g.led.CreateEvent(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if _, err := g.store.CreateEvent(ctx, cfg); err != nil {
				t.Fatal(err)
			}
		}
		for j := range 1 + i%2 {
			if _, err := g.store.SellAtBoxOffice(ctx, booking.BoxOfficeSale{EventID: id, SaleID: fmt.Sprintf("s%d", j),
				Count: 1, SoldBy: "otto"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	const sales = events + events/2
	down := ledgertest.Open(t, ledgertest.URL(t))
	down.Close()
	m := ledger.NewBoxOfficeMetrics(nil)
	sw := &ledger.BoxOfficeSweeper{Ledger: down, Store: g.store, Age: time.Nanosecond, Metrics: m}
	if n, err := sw.Sweep(ctx); n != 0 || err == nil {
		t.Fatalf("sweep with the ledger down: %d %v, want an error", n, err)
	}
	if got := testutil.ToFloat64(m.Pending()); got != sales {
		t.Fatalf("pending with the ledger down %v, want %d", got, sales)
	}
	sw.Ledger = g.led
	if n, err := sw.Sweep(ctx); n != sales || err != nil {
		t.Fatalf("sweep: %d %v, want %d", n, err, sales)
	}
	if got := testutil.ToFloat64(m.Pending()); got != 0 {
		t.Fatalf("pending after the sweep %v, want 0", got)
	}
	for i := range events {
		id := fmt.Sprintf("hall-%d", i)
		for j := range 1 + i%2 {
			if o, err := g.led.OrderByPayment(ctx, booking.BoxOfficePaymentID(id, fmt.Sprintf("s%d", j))); err != nil ||
				o.Status != ledger.StatusCompleted || o.EventID != id || o.SoldBy != "otto" {
				t.Fatalf("%s sale %d: %+v %v", id, j, o, err)
			}
		}
		if pending, err := g.store.PendingBoxOfficeSales(ctx, id, 0); err != nil || len(pending) != 0 {
			t.Fatalf("%s: pending after the sweep: %+v %v", id, pending, err)
		}
	}
}
