package ledger_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// An order holds all its seats, one line per seat with its
// price, and a seat is sold at most once across orders of any size.
func TestOrdersOfSeveralSeats(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	if err := l.RecordPayment(ctx, ledger.Payment{PaymentID: "p1", EventID: "e", UserID: "u1", SeatID: "A1,A2,C1", Amount: 13000, Currency: "GBP"}); err != nil {
		t.Fatal(err)
	}
	o1, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p1", EventID: "e", UserID: "u1", SeatID: "A1,A2,C1",
		SeatIDs: []string{"A1", "A2", "C1"}, SeatPrices: []int64{5000, 5000, 3000}, Sequence: 1})
	if err != nil || o1.Status != ledger.StatusCompleted || o1.Amount != 13000 || o1.Currency != "GBP" ||
		!slices.Equal(o1.SeatIDs, []string{"A1", "A2", "C1"}) || !slices.Equal(o1.SeatPrices, []int64{5000, 5000, 3000}) {
		t.Fatalf("order %v %+v", err, o1)
	}
	// an order sharing one seat with it is money without a ticket
	o2, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p2", EventID: "e", UserID: "u2", SeatIDs: []string{"B1", "C1"}, Sequence: 2})
	if err != nil || o2.Status != ledger.StatusRefundDue || o2.RefundReason != ledger.RefundSeatTaken || o2.SeatID != "B1,C1" {
		t.Fatalf("overlapping order: %v %+v", err, o2)
	}
	// a one-seat order of a seat of the first: refund too
	o3, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p3", EventID: "e", UserID: "u3", SeatID: "A2", Sequence: 3})
	if err != nil || o3.Status != ledger.StatusRefundDue || !slices.Equal(o3.SeatIDs, []string{"A2"}) {
		t.Fatalf("one seat of it: %v %+v", err, o3)
	}
	// once refunded, its seats are not sold: B1 sells
	if _, err := l.MarkRefunded(ctx, o2.OrderID); err != nil {
		t.Fatal(err)
	}
	if o4, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p4", EventID: "e", UserID: "u4", SeatIDs: []string{"B1"}, Sequence: 4}); err != nil || o4.Status != ledger.StatusCompleted {
		t.Fatalf("B1 after the refund: %v %+v", err, o4)
	}
	sold, err := l.SoldOrders(ctx, "e")
	if err != nil || len(sold) != 2 {
		t.Fatalf("sold %v %+v", err, sold)
	}
}

// Racing orders of overlapping seats: one sale per seat, the others
// refund_due, whatever the interleaving (the unique index decides).
func TestOverlappingOrdersRace(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	sets := [][]string{{"A1", "A2"}, {"A2", "A3"}, {"A3", "A4"}, {"A4", "A1"}, {"A5"}, {"A5", "A6", "A7"}}
	var wg sync.WaitGroup
	orders := make([]ledger.Order, len(sets))
	for i, seats := range sets {
		wg.Go(func() {
			s := ledger.Sale{PaymentID: "p" + string(rune('a'+i)), EventID: "e", UserID: "u" + string(rune('a'+i)), SeatIDs: seats}
			for {
				o, err := l.RecordSale(ctx, s)
				if ledger.IsSeatConflict(err) {
					continue // the retry records it as refund_due
				}
				if err != nil {
					t.Error(err)
				}
				orders[i] = o
				return
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, o := range orders {
		if o.Status != ledger.StatusCompleted {
			continue
		}
		for _, s := range o.SeatIDs {
			if seen[s] {
				t.Fatalf("seat %s sold twice: %+v", s, orders)
			}
			seen[s] = true
		}
	}
	if len(seen) == 0 {
		t.Fatal("nothing sold")
	}
}

// A restore from the ledger brings a multi-seat order back whole.
func TestRestoreMultiSeatOrder(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	cfg := booking.EventConfig{ID: "ms", Capacity: 5, Currency: "USD", MaxSeatsPerOrder: 3, Sections: []booking.Section{
		{Name: "Floor", Rows: 1, SeatsPerRow: 4, PriceCents: 5000}, {Name: "Box", Seats: []string{"X1", "X2"}, PriceCents: 9000}}}
	d, _, err := l.CreateEvent(ctx, cfg)
	if err != nil || len(d.Config.Sections) != 2 || d.Config.Currency != "USD" || d.Config.MaxSeatsPerOrder != 3 ||
		!slices.Equal(d.Config.Seats, []string{"A1", "A2", "A3", "A4", "X1", "X2"}) {
		t.Fatalf("definition %v %+v", err, d.Config)
	}
	if _, created, err := l.CreateEvent(ctx, cfg); err != nil || created {
		t.Fatalf("same again: %v %v", err, created)
	}
	if _, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p1", EventID: "ms", UserID: "u1", SeatIDs: []string{"A2", "X1"}, Sequence: 1}); err != nil {
		t.Fatal(err)
	}
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)))
	t.Cleanup(store.Close)
	r := &ledger.Restorer{Ledger: l, Store: store}
	if _, err := r.Restore(ctx, "ms"); err != nil {
		t.Fatal(err)
	}
	e, err := store.GetEvent(ctx, "ms")
	if err != nil || e.Counts.Sold != 2 || e.Currency != "USD" || e.MaxSeatsPerOrder != 3 || e.PriceMaxCents != 9000 || len(e.Sections) != 2 {
		t.Fatalf("restored %v %+v", err, e)
	}
	st, err := store.Position(ctx, "ms", "u1")
	if err != nil || st.State != booking.StateCompleted || st.SeatID != "A2,X1" {
		t.Fatalf("u1 %v %+v", err, st)
	}
	if _, err := store.Enqueue(ctx, "ms", "u2"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.LockSeats(ctx, "ms", "u2", []string{"X1", "X2"}); !errors.Is(err, booking.ErrSeatUnavailable) {
		t.Fatalf("sold seat after restore: %v", err)
	}
	if _, err := store.LockSeats(ctx, "ms", "u2", []string{"A1", "X2"}); err != nil {
		t.Fatal(err)
	}
	if ph, err := store.InitiatePayment(ctx, "ms", "u2", "p2"); err != nil || ph.AmountCents != 14000 {
		t.Fatalf("amount after restore %v %+v", err, ph)
	}
}
