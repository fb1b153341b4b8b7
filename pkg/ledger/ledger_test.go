package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

func TestCreateEventIsIdempotentAndKeepsTheDefinition(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	start := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	cfg := booking.EventConfig{ID: "e1", Name: "Show", Rows: 2, SeatsPerRow: 3, Capacity: 5, Hold: 90 * time.Second, SalesStart: start}
	d, created, err := l.CreateEvent(ctx, cfg)
	if err != nil || !created {
		t.Fatalf("create: %v created=%v", err, created)
	}
	want := []string{"A1", "A2", "A3", "B1", "B2", "B3"}
	if diff := cmp.Diff(want, d.Config.Seats); diff != "" {
		t.Fatalf("seats (-want +got):\n%s", diff)
	}
	if d.Config.Rows != 2 || d.Config.SeatsPerRow != 3 || d.Config.Grace != booking.DefaultGrace || !d.Config.SalesStart.Equal(start) {
		t.Fatalf("definition: %+v", d.Config)
	}
	if _, created, err := l.CreateEvent(ctx, cfg); err != nil || created {
		t.Fatalf("same create again: err=%v created=%v, want nil false", err, created)
	}
	other := cfg
	other.Capacity = 7
	if _, _, err := l.CreateEvent(ctx, other); !errors.Is(err, ledger.ErrEventExists) {
		t.Fatalf("other definition: %v, want ErrEventExists", err)
	}
	if _, _, err := l.CreateEvent(ctx, booking.EventConfig{ID: "bad"}); !errors.Is(err, booking.ErrInvalidEvent) {
		t.Fatalf("no seats: %v, want ErrInvalidEvent", err)
	}
	paused, capacity, hold := true, 9, 30*time.Second
	d, err = l.UpdateEvent(ctx, "e1", booking.EventUpdate{Paused: &paused, Capacity: &capacity, Hold: &hold}, nil)
	if err != nil || !d.Paused || d.Config.Capacity != 9 || d.Config.Hold != hold {
		t.Fatalf("update: %v %+v", err, d)
	}
	if _, err := l.UpdateEvent(ctx, "nope", booking.EventUpdate{Paused: &paused}, nil); !errors.Is(err, ledger.ErrEventNotFound) {
		t.Fatalf("update unknown: %v", err)
	}
	ids, err := l.EventIDs(ctx)
	if err != nil || !cmp.Equal(ids, []string{"e1"}) {
		t.Fatalf("ids %v %v", ids, err)
	}
}

func TestRecordSaleIsIdempotentAndNeverSellsASeatTwice(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	if err := l.RecordPayment(ctx, ledger.Payment{PaymentID: "p1", EventID: "e", UserID: "u1", SeatID: "A1", Sequence: 1, Amount: 5000, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	o1, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p1", EventID: "e", UserID: "u1", SeatID: "A1", Sequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	if o1.Status != ledger.StatusCompleted || o1.Amount != 5000 || o1.Currency != "USD" || o1.SeatID != "A1" {
		t.Fatalf("order %+v", o1)
	}
	again, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p1", EventID: "e", UserID: "u1", SeatID: "A1", Sequence: 1})
	if err != nil || again.OrderID != o1.OrderID {
		t.Fatalf("repeat: %v %+v, want order %s", err, again, o1.OrderID)
	}
	// another payment for the same seat: money without a ticket
	o2, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p2", EventID: "e", UserID: "u2", SeatID: "A1", Sequence: 2})
	if err != nil || o2.Status != ledger.StatusRefundDue || o2.RefundReason != ledger.RefundSeatTaken {
		t.Fatalf("second sale of A1: %v %+v", err, o2)
	}
	late, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p3", EventID: "e", UserID: "u3", SeatID: "A2", Sequence: 3, RefundReason: ledger.RefundLate})
	if err != nil || late.Status != ledger.StatusRefundDue {
		t.Fatalf("late: %v %+v", err, late)
	}
	if p, err := l.Payment(ctx, "p3"); err != nil || p.Outcome != ledger.OutcomeLate {
		t.Fatalf("payment p3: %v %+v", err, p)
	}
	if p, err := l.Payment(ctx, "p1"); err != nil || p.Outcome != ledger.OutcomeSucceeded {
		t.Fatalf("payment p1: %v %+v", err, p)
	}
	// a failure webhook after the success does not undo it
	if _, err := l.RecordFailure(ctx, ledger.Failure{PaymentID: "p1", EventID: "e", UserID: "u1", SeatID: "A1", Reason: "declined"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := l.Payment(ctx, "p1"); p.Outcome != ledger.OutcomeSucceeded {
		t.Fatalf("p1 after failure: %+v", p)
	}
	if _, err := l.RecordFailure(ctx, ledger.Failure{PaymentID: "p4", EventID: "e", UserID: "u4", Reason: "card_declined"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := l.Payment(ctx, "p4"); p.Outcome != ledger.OutcomeFailed || p.Reason != "card_declined" {
		t.Fatalf("p4: %+v", p)
	}
	due, err := l.RefundsDue(ctx, 100)
	if err != nil || len(due) != 2 {
		t.Fatalf("refunds due %v %+v", err, due)
	}
	if _, err := l.MarkRefunded(ctx, o1.OrderID); !errors.Is(err, ledger.ErrNotRefundable) {
		t.Fatalf("refund a ticket: %v", err)
	}
	r, err := l.MarkRefunded(ctx, o2.OrderID)
	if err != nil || r.Status != ledger.StatusRefunded || r.RefundedAt == nil {
		t.Fatalf("mark refunded: %v %+v", err, r)
	}
	if r2, err := l.MarkRefunded(ctx, o2.OrderID); err != nil || r2.Status != ledger.StatusRefunded {
		t.Fatalf("mark refunded again: %v %+v", err, r2)
	}
	if _, err := l.MarkRefunded(ctx, "ord_nope"); !errors.Is(err, ledger.ErrOrderNotFound) {
		t.Fatalf("unknown order: %v", err)
	}
	mine, err := l.UserOrders(ctx, "u1", 10)
	if err != nil || len(mine) != 1 || mine[0].OrderID != o1.OrderID {
		t.Fatalf("u1 orders %v %+v", err, mine)
	}
	if _, err := l.UserOrder(ctx, "u2", o1.OrderID); !errors.Is(err, ledger.ErrOrderNotFound) {
		t.Fatalf("someone else's order: %v", err)
	}
	sold, err := l.SoldOrders(ctx, "e")
	if err != nil || len(sold) != 1 {
		t.Fatalf("sold %v %+v", err, sold)
	}
	if n, err := l.MaxSequence(ctx, "e"); err != nil || n != 3 {
		t.Fatalf("max sequence %d %v", n, err)
	}
}

func TestUserOrdersNewestFirst(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	var ids []string
	for i, ev := range []string{"e1", "e2", "e3"} {
		o, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p" + ev, EventID: ev, UserID: "u", SeatID: "A1", Sequence: int64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.OrderID)
	}
	got, err := l.UserOrders(ctx, "u", 2)
	if err != nil || len(got) != 2 || got[0].OrderID != ids[2] || got[1].OrderID != ids[1] {
		t.Fatalf("newest two: %v %+v, want %s then %s", err, got, ids[2], ids[1])
	}
	if none, err := l.UserOrders(ctx, "nobody", 10); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("no orders: %v %#v (want an empty, non-nil list)", err, none)
	}
}

func TestOpenFailsWhenPostgresDoesNotAnswer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := ledger.Open(ctx, "postgres://boxoffice:boxoffice@127.0.0.1:1/boxoffice?sslmode=disable&connect_timeout=2"); err == nil {
		t.Fatal("Open against a closed port succeeded")
	}
	if _, err := ledger.Open(ctx, "://not a url"); err == nil {
		t.Fatal("Open with a malformed URL succeeded")
	}
}

func TestInstancesStartingTogetherMigrateOnce(t *testing.T) {
	t.Parallel()
	url := ledgertest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			l, err := ledger.Open(ctx, url) // with the migration lock, as services do
			if err == nil {
				_, _, err = l.CreateEvent(ctx, booking.EventConfig{ID: "e", Rows: 1, SeatsPerRow: 2})
				l.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
