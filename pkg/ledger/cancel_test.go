package ledger_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// refunder is a provider that refunds once per key, or fails with err.
type refunder struct {
	mu   sync.Mutex
	keys map[string]int64
	made int // refunds made (a key's repeat is not one)
	err  error
}

func (r *refunder) Refund(_ context.Context, id string, amount int64, key string) (payment.Refund, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return payment.Refund{}, r.err
	}
	if r.keys == nil {
		r.keys = map[string]int64{}
	}
	if _, ok := r.keys[key]; !ok {
		r.keys[key] = amount
		r.made++
	}
	return payment.Refund{PaymentID: id, Status: "refunded", Amount: amount, RefundID: key}, nil
}

func (r *refunder) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

func (r *refunder) count() (int, map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.made, copyMap(r.keys)
}

func copyMap(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// cancelRig is an event of priced sections with one order of three seats
// (A1 and A2 on the floor at 50.00, B1 on the balcony at 30.00).
func cancelRig(t *testing.T) (*rig, ledger.Order, *refunder, *ledger.Canceller) {
	t.Helper()
	g := newRig(t, booking.EventConfig{ID: "gig", Name: "Gig", Capacity: 2, MaxSeatsPerOrder: 3, Currency: "EUR",
		Sections: []booking.Section{{Name: "Floor", Rows: 1, SeatsPerRow: 3, PriceCents: 5000},
			{Name: "Balcony", Rows: 1, SeatsPerRow: 3, PriceCents: 3000}}})
	ctx := context.Background()
	g.join("u1")
	if _, err := g.store.Promote(ctx, g.event, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := g.store.LockSeats(ctx, g.event, "u1", []string{"A1", "A2", "B1"}); err != nil {
		t.Fatal(err)
	}
	hold, err := g.store.InitiatePayment(ctx, g.event, "u1", "pay_u1")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.led.RecordPayment(ctx, ledger.Payment{PaymentID: hold.PaymentID, EventID: g.event, UserID: "u1",
		SeatID: hold.SeatID, Sequence: hold.Sequence, Amount: 13000, Currency: "EUR"}); err != nil {
		t.Fatal(err)
	}
	res, err := g.store.PaymentSuccess(ctx, g.event, "u1", hold.PaymentID)
	if err != nil {
		t.Fatal(err)
	}
	o, err := g.led.RecordSale(ctx, ledger.Sale{PaymentID: hold.PaymentID, EventID: g.event, UserID: "u1",
		SeatID: res.SeatID, Sequence: res.Sequence, SeatIDs: res.SeatIDs, SeatPrices: res.SeatPrices})
	if err != nil || o.Status != ledger.StatusCompleted || o.Amount != 13000 {
		t.Fatalf("sale: %+v %v", o, err)
	}
	ref := &refunder{}
	c := &ledger.Canceller{Ledger: g.led, Store: g.store, Refunds: ref, Kafka: g.rec, Age: time.Nanosecond}
	return g, o, ref, c
}

// factsOf counts the facts of typ by id, with their amounts.
func factsOf(rec *events.Recorder, typ string) (n int, ids map[string]int, amounts []int64) {
	ids = map[string]int{}
	for _, e := range rec.Events() {
		if e.Type == typ {
			n++
			ids[e.ID]++
			amounts = append(amounts, e.Amount)
		}
	}
	return n, ids, amounts
}

func (g *rig) seatState(seat string) booking.SeatStatus {
	g.t.Helper()
	all, err := g.store.Seats(context.Background(), g.event)
	if err != nil {
		g.t.Fatal(err)
	}
	for _, s := range all {
		if s.ID == seat {
			return s.Status
		}
	}
	g.t.Fatalf("no seat %s", seat)
	return ""
}

func TestCancelPartThenTheRestOfAnOrder(t *testing.T) {
	t.Parallel()
	g, o, ref, c := cancelRig(t)
	ctx := context.Background()

	// bad input changes nothing
	if _, err := g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: "ord_nope", Reason: "x", Actor: "ada"}); !errors.Is(err, ledger.ErrOrderNotFound) {
		t.Fatalf("unknown order: %v", err)
	}
	var se *ledger.SeatError
	_, err := g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, SeatIDs: []string{"A2", "C9"}, Reason: "x", Actor: "ada"})
	if !errors.As(err, &se) || !errors.Is(err, ledger.ErrSeatNotInOrder) || !slices.Equal(se.Seats, []string{"C9"}) {
		t.Fatalf("a seat not in the order: %v", err)
	}

	// part of it: A2 (50.00)
	res, err := g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, SeatIDs: []string{"A2"}, Reason: "double charge", Actor: "ada"})
	if err != nil || !res.Created || res.Cancellation.Amount != 5000 || res.Cancellation.Whole || res.Order.Status != ledger.StatusCompleted ||
		!slices.Equal(res.Order.CancelledSeatIDs, []string{"A2"}) || res.Cancellation.Actor != "ada" || res.Cancellation.Reason != "double charge" {
		t.Fatalf("cancel A2: %+v %v", res, err)
	}
	// recorded, not yet carried out: the seat is still sold in Redis
	if st := g.seatState("A2"); st != booking.SeatSold {
		t.Fatalf("A2 before Finish: %s", st)
	}
	x, err := c.Finish(ctx, res.Cancellation)
	if err != nil || !x.Finished() || x.RefundStatus != ledger.RefundRefunded || x.RefundedAt == nil {
		t.Fatalf("finish: %+v %v", x, err)
	}
	if st := g.seatState("A2"); st != booking.SeatAvailable {
		t.Fatalf("A2 after the cancellation: %s", st)
	}
	if st := g.seatState("A1"); st != booking.SeatSold {
		t.Fatalf("A1 after A2's cancellation: %s", st)
	}
	g.checkStatus()
	if made, keys := ref.count(); made != 1 || keys[ledger.RefundKey(x.ID)] != 5000 {
		t.Fatalf("refunds %d %v", made, keys)
	}

	// the same request again: nothing changes, the existing state answers
	again, err := g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, SeatIDs: []string{"A2"}, Reason: "again", Actor: "bob"})
	if err != nil || again.Created || again.Cancellation.ID != x.ID || len(again.Order.Cancellations) != 1 {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	// A2 with a seat not cancelled yet: 409-style, nothing changes
	_, err = g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, SeatIDs: []string{"A1", "A2"}, Reason: "x", Actor: "ada"})
	if !errors.As(err, &se) || !errors.Is(err, ledger.ErrSeatCancelled) || !slices.Equal(se.Seats, []string{"A2"}) {
		t.Fatalf("a cancelled seat with another: %v", err)
	}
	// reconciliation does not sell A2 again in Redis
	rec, err := g.r.Reconcile(ctx, g.event)
	if err != nil || len(rec.MissingInRedis) != 0 || len(rec.MissingInLedger) != 0 {
		t.Fatalf("reconcile after a partial cancellation: %+v %v", rec, err)
	}

	// the rest: A1 and B1, what is left of the amount (80.00)
	res, err = g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, Reason: "show cancelled", Actor: "ada"})
	if err != nil || !res.Created || res.Cancellation.Amount != 8000 || !res.Cancellation.Whole ||
		!slices.Equal(res.Cancellation.SeatIDs, []string{"A1", "B1"}) || res.Order.Status != ledger.StatusCancelled {
		t.Fatalf("cancel the rest: %+v %v", res, err)
	}
	if _, err := c.Finish(ctx, res.Cancellation); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"A1", "A2", "B1"} {
		if st := g.seatState(s); st != booking.SeatAvailable {
			t.Fatalf("%s after the whole order: %s", s, st)
		}
	}
	if counts, _ := g.store.Counts(ctx, g.event); counts.Sold != 0 {
		t.Fatalf("sold %d after every seat was cancelled", counts.Sold)
	}
	g.checkStatus()
	// a whole order cancelled again: nothing changes
	again, err = g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, Reason: "again", Actor: "ada"})
	if err != nil || again.Created || again.Order.Status != ledger.StatusCancelled || len(again.Order.Cancellations) != 2 {
		t.Fatalf("whole order again: %+v %v", again, err)
	}
	if _, err := g.led.MarkRefunded(ctx, o.OrderID); !errors.Is(err, ledger.ErrNotRefundable) {
		t.Fatalf("refund_due's refund of a cancelled order: %v", err)
	}
	// the buyer sees both, refunded
	mine, err := g.led.UserOrders(ctx, "u1", 10)
	if err != nil || len(mine) != 1 || len(mine[0].Cancellations) != 2 || mine[0].Cancellations[1].RefundStatus != ledger.RefundRefunded {
		t.Fatalf("the buyer's orders: %+v %v", mine, err)
	}
	// the money: two refunds adding up to the order, one fact of each per cancellation
	if made, keys := ref.count(); made != 2 || keys[ledger.RefundKey(res.Cancellation.ID)] != 8000 {
		t.Fatalf("refunds %d %v", made, keys)
	}
	for _, typ := range []string{events.TopicOrderCancelled, events.TopicRefundIssued} {
		n, ids, amounts := factsOf(g.rec, typ)
		if n != 2 || len(ids) != 2 || !slices.Equal(amounts, []int64{5000, 8000}) {
			t.Fatalf("%s: %d facts %v amounts %v", typ, n, ids, amounts)
		}
	}
	// Redis rebuilt from the ledger: the cancelled seats are free
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if sold := g.redisSold(); len(sold) != 0 {
		t.Fatalf("seats sold after the rebuild: %v", sold)
	}
	// and can be sold again, in the ledger too
	g.join("u2")
	if _, err := g.store.Promote(ctx, g.event, 0); err != nil {
		t.Fatal(err)
	}
	if ok, err := g.buy("u2", "A2"); !ok || err != nil {
		t.Fatalf("A2 sold again: %v %v", ok, err)
	}
	if sold := g.ledgerSold(); sold["A2"] != "u2" {
		t.Fatalf("ledger after A2 was sold again: %v", sold)
	}
}

// TestCancellationFinishesAfterAFailureBetweenSteps: a cancellation
// recorded and then interrupted at each step (the process killed after the
// intent, Kafka down, the provider refusing) is finished by the sweep,
// with the seats released once, the money refunded once and each fact
// published once.
func TestCancellationFinishesAfterAFailureBetweenSteps(t *testing.T) {
	t.Parallel()
	g, o, ref, c := cancelRig(t)
	ctx := context.Background()

	// 1. the intent only: the process died before Redis heard of it
	res, err := g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, SeatIDs: []string{"B1"}, Reason: "fraud", Actor: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	// 2. a sweep with Kafka down and the provider refusing: the seat is
	// released, the refund stays pending with the reason
	g.rec.FailWith(errors.New("kafka down"))
	ref.fail(&payment.Error{Status: 409, Code: "not_refundable", Message: "the payment is pending, not paid"})
	if n, err := c.Sweep(ctx); n != 0 || err == nil {
		t.Fatalf("sweep with Kafka down: %d %v", n, err)
	}
	x, err := g.led.Cancellation(ctx, res.Cancellation.ID)
	if err != nil || x.Released == nil || x.CancelledPublished || x.RefundStatus != ledger.RefundPending {
		t.Fatalf("after the first sweep: %+v %v", x, err)
	}
	if st := g.seatState("B1"); st != booking.SeatAvailable {
		t.Fatalf("B1: %s", st)
	}
	g.rec.FailWith(nil)
	if _, err := c.Sweep(ctx); !errors.Is(err, ledger.ErrRefundPending) {
		t.Fatalf("sweep with the provider refusing: %v", err)
	}
	x, _ = g.led.Cancellation(ctx, res.Cancellation.ID)
	if x.RefundStatus != ledger.RefundPending || !strings.Contains(x.RefundError, "not_refundable") || x.RefundAttempts != 1 || !x.CancelledPublished {
		t.Fatalf("a refused refund: %+v", x)
	}
	// the buyer sees it pending with the reason
	mine, _ := g.led.UserOrder(ctx, "u1", o.OrderID)
	if len(mine.Cancellations) != 1 || mine.Cancellations[0].RefundStatus != ledger.RefundPending || mine.Cancellations[0].RefundError == "" {
		t.Fatalf("the buyer's order: %+v", mine)
	}
	// 3. a provider timeout, then it works
	ref.fail(errors.New("context deadline exceeded"))
	if _, err := c.Sweep(ctx); !errors.Is(err, ledger.ErrRefundPending) {
		t.Fatalf("sweep with the provider down: %v", err)
	}
	ref.fail(nil)
	if n, err := c.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("the last sweep: %d %v", n, err)
	}
	x, _ = g.led.Cancellation(ctx, res.Cancellation.ID)
	if !x.Finished() || x.RefundAttempts != 3 || x.RefundError != "" {
		t.Fatalf("finished: %+v", x)
	}
	// a sweep after that, or a Finish of an old copy, changes nothing
	if n, err := c.Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("a sweep with nothing open: %d %v", n, err)
	}
	if _, err := c.Finish(ctx, res.Cancellation); err != nil {
		t.Fatal(err)
	}
	if counts, _ := g.store.Counts(ctx, g.event); counts.Sold != 2 {
		t.Fatalf("sold %d, want 2 (B1 released once)", counts.Sold)
	}
	if made, keys := ref.count(); made != 1 || keys[ledger.RefundKey(x.ID)] != 3000 {
		t.Fatalf("refunds %d %v", made, keys)
	}
	for _, typ := range []string{events.TopicOrderCancelled, events.TopicRefundIssued} {
		// the stale Finish republished with the same id: one fact
		if _, ids, _ := factsOf(g.rec, typ); len(ids) != 1 {
			t.Fatalf("%s: %v", typ, ids)
		}
	}
	g.checkStatus()
}

// TestConcurrentCancellationsOfOneSeatRecordOne: two operators cancelling
// the same seat at once record one cancellation.
func TestConcurrentCancellationsOfOneSeatRecordOne(t *testing.T) {
	t.Parallel()
	g, o, _, _ := cancelRig(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	created := make(chan bool, 8)
	for range 8 {
		wg.Go(func() {
			res, err := g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, SeatIDs: []string{"A1"}, Reason: "x", Actor: "ada"})
			if err != nil {
				t.Error(err)
			}
			created <- res.Created
		})
	}
	wg.Wait()
	close(created)
	n := 0
	for c := range created {
		if c {
			n++
		}
	}
	cs, err := g.led.OrderCancellations(ctx, o.OrderID)
	if n != 1 || err != nil || len(cs) != 1 {
		t.Fatalf("%d created, %d recorded (%v)", n, len(cs), err)
	}
}

// TestCancellationRecordsAnyProviderReason: a provider's answer with a NUL
// byte, invalid UTF-8 or too long is recorded (PostgreSQL's text takes
// neither of the first two), and a cancellation needs a reason.
func TestCancellationRecordsAnyProviderReason(t *testing.T) {
	t.Parallel()
	g, o, _, _ := cancelRig(t)
	ctx := context.Background()
	if _, err := g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, Reason: " ", Actor: "ada"}); err == nil {
		t.Fatal("a cancellation without a reason was recorded")
	}
	res, err := g.led.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, Reason: "x", Actor: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	x, err := g.led.MarkRefundFailed(ctx, res.Cancellation.ID, "refused: a\x00b \xff"+strings.Repeat("é", 400))
	if err != nil || !strings.HasPrefix(x.RefundError, "refused: ab ") || len(x.RefundError) > 500 || x.RefundAttempts != 1 {
		t.Fatalf("%q %v", x.RefundError, err)
	}
}
