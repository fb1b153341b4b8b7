package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// ledgerOutage makes the ledger at url drop its connection at the first
// write of a payment (the box-office sale's first ledger write, after its
// Lua step), as a PostgreSQL that goes away at that moment; the returned
// func brings it back.
func ledgerOutage(t *testing.T, url string) (back func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE FUNCTION ledger_gone() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$;
		CREATE TRIGGER ledger_gone BEFORE INSERT ON payments FOR EACH ROW EXECUTE FUNCTION ledger_gone()`); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.Exec(ctx, `DROP TRIGGER ledger_gone ON payments`); err != nil {
			t.Fatal(err)
		}
	}
}

// boxOfficeHarness is ledgerHarnessAt with the operators' audit trail.
func boxOfficeHarness(t *testing.T, url string) (*harness, *ledger.Ledger) {
	hs, l, _ := ledgerHarnessAt(t, url)
	hs.srv.Operators = operators.New(l.Pool(), hs.srv.Redis, hs.srv.Prefix)
	hs.srv.AuditPublisher = &operators.Publisher{Store: hs.srv.Operators, Kafka: hs.rec}
	hs.rebuild()
	return hs, l
}

// saleAudits are the audit records of box-office sales.
func saleAudits(t *testing.T, hs *harness) []operators.Action {
	t.Helper()
	acts, _, err := hs.srv.Operators.Audit(context.Background(), operators.AuditFilter{Action: operators.ActionBoxOfficeSell, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

// completedFacts are the booking_completed facts of payment id pid.
func completedFacts(hs *harness, pid string) []events.Event {
	var out []events.Event
	for _, e := range hs.rec.Topic(events.TopicBookingCompleted) {
		if e.PaymentID == pid {
			out = append(out, e)
		}
	}
	return out
}

// A box-office sale whose ledger write fails after its seats were sold in
// Redis: the retry with the same sale id records exactly one order and
// publishes its fact once, audited once; the sweep then finds nothing
// left.
func TestBoxOfficeSaleRetryAfterLedgerOutage(t *testing.T) {
	t.Parallel()
	url := ledgertest.URL(t)
	hs, l := boxOfficeHarness(t, url)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	back := ledgerOutage(t, url)
	body := map[string]any{"seat_ids": []string{"A1"}, "customer_ref": "walk-up #1"}
	want(t, hs.do("POST", boxOfficePath, hs.admin, body, "Idempotency-Key", "k1"), 503, "unavailable")
	if got := seatRow(t, hs, "e1"); got[0] != 's' {
		t.Fatalf("seats after the failed sale: %s", got)
	}
	pid := booking.BoxOfficePaymentID("e1", "k1")
	if _, err := l.OrderByPayment(ctx, pid); !errors.Is(err, ledger.ErrOrderNotFound) {
		t.Fatalf("order while the ledger was down: %v", err)
	}
	back()
	r := hs.do("POST", boxOfficePath, hs.admin, body, "Idempotency-Key", "k1")
	want(t, r, 201, "")
	o, _ := r.body["order"].(map[string]any)
	if o["status"] != "completed" || o["customer_ref"] != "walk-up #1" || o["channel"] != "box_office" {
		t.Fatalf("retry: %s", r.raw)
	}
	sw := hs.srv.boxOfficeSweeper()
	sw.Age = time.Nanosecond
	if n, err := sw.Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("sweep after the retry recorded %d: %v", n, err)
	}
	if n, err := (&ledger.OrderPublisher{Ledger: l, Kafka: hs.rec, Age: time.Nanosecond}).Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("order sweep after the retry published %d: %v", n, err)
	}
	if done := completedFacts(hs, pid); len(done) != 1 || done[0].Channel != "box_office" {
		t.Fatalf("booking_completed: %+v", done)
	}
	if got := seatRow(t, hs, "e1"); got[0] != 's' || got[1] != 'a' {
		t.Fatalf("seats after the retry: %s", got)
	}
	if acts := saleAudits(t, hs); len(acts) != 1 || acts[0].Target != o["order_id"] || acts[0].Via == operators.ViaSystem {
		t.Fatalf("audit: %+v", acts)
	}
	if acts := interruptedCalls(t, hs); len(acts) != 0 {
		t.Fatalf("the sale is on record, yet its first call is recorded as interrupted: %+v", acts)
	}
}

// interruptedCalls settles every audit intent left (whatever its age)
// and returns the request.interrupted records.
func interruptedCalls(t *testing.T, hs *harness) []operators.Action {
	t.Helper()
	hs.srv.AuditPublisher.IntentAge = time.Nanosecond
	time.Sleep(2 * time.Millisecond) // intents are timed to the millisecond
	if _, err := hs.srv.AuditPublisher.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	acts, _, err := hs.srv.Operators.Audit(context.Background(), operators.AuditFilter{Action: operators.ActionInterrupted, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

// A box-office sale whose ledger write fails and is never retried: the
// sale waits in Redis (written by its Lua step) and the sweep records the
// order once PostgreSQL answers, with the sale's channel, operator and
// customer reference, audited as the operator's sale via system; its fact
// goes out once; a late retry answers it.
func TestBoxOfficeSaleRecordedBySweepAfterLedgerOutage(t *testing.T) {
	t.Parallel()
	url := ledgertest.URL(t)
	hs, l := boxOfficeHarness(t, url)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	back := ledgerOutage(t, url)
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"count": 2, "channel": "desk", "customer_ref": "Ms Smith"},
		"Idempotency-Key", "k2"), 503, "unavailable")
	sw := hs.srv.boxOfficeSweeper()
	sw.Age = time.Nanosecond
	if n, err := sw.Sweep(ctx); n != 0 || err == nil {
		t.Fatalf("sweep while the ledger is down: %d %v", n, err)
	}
	pid := booking.BoxOfficePaymentID("e1", "k2")
	if _, err := l.OrderByPayment(ctx, pid); !errors.Is(err, ledger.ErrOrderNotFound) {
		t.Fatalf("order while the ledger was down: %v", err)
	}
	back()
	if n, err := sw.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	o, err := l.OrderByPayment(ctx, pid)
	if err != nil || o.Status != ledger.StatusCompleted || len(o.SeatIDs) != 2 || o.Amount != 200 || o.Channel != "desk" ||
		o.SoldBy == "" || o.CustomerRef != "Ms Smith" || o.UserID != booking.BoxOfficeBuyer("k2") {
		t.Fatalf("order recorded by the sweep: %+v %v", o, err)
	}
	if n, err := sw.Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("second sweep: %d %v", n, err)
	}
	if n, err := (&ledger.OrderPublisher{Ledger: l, Kafka: hs.rec, Age: time.Nanosecond}).Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("order sweep: %d %v", n, err)
	}
	if done := completedFacts(hs, pid); len(done) != 1 || done[0].Channel != "desk" || done[0].Amount != 200 {
		t.Fatalf("booking_completed: %+v", done)
	}
	r := hs.do("POST", boxOfficePath, hs.admin, map[string]any{"count": 1}, "Idempotency-Key", "k2")
	want(t, r, 200, "")
	if x, _ := r.body["order"].(map[string]any); r.body["replayed"] != true || x["order_id"] != o.OrderID {
		t.Fatalf("late retry: %s", r.raw)
	}
	if got := seatRow(t, hs, "e1"); got[:2] != "ss" || got[2:] != "aa" {
		t.Fatalf("seats: %s", got)
	}
	if acts := saleAudits(t, hs); len(acts) != 1 || acts[0].Target != o.OrderID || acts[0].Actor != o.SoldBy ||
		acts[0].Via != operators.ViaSystem || acts[0].EventID != "e1" {
		t.Fatalf("audit: %+v", acts)
	}
	if acts := interruptedCalls(t, hs); len(acts) != 0 {
		t.Fatalf("the sale the sweep recorded is also recorded as an interrupted call: %+v", acts)
	}
}

// A sale the sweep finds the ledger has a seat of sold to another order
// (Redis lost that sale): recorded refund_due, the money to go back at the
// counter, and its seats released in Redis, so no seat is sold twice.
func TestBoxOfficeSaleSweptIntoASeatTheLedgerSold(t *testing.T) {
	t.Parallel()
	url := ledgertest.URL(t)
	hs, l, _ := ledgerHarnessAt(t, url)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	if _, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "pay_lost", EventID: "e1", UserID: "zed", SeatID: "A3"}); err != nil {
		t.Fatal(err)
	}
	back := ledgerOutage(t, url)
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"A3", "A4"}}, "Idempotency-Key", "k3"), 503, "unavailable")
	back()
	sw := hs.srv.boxOfficeSweeper()
	sw.Age = time.Nanosecond
	if n, err := sw.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	o, err := l.OrderByPayment(ctx, booking.BoxOfficePaymentID("e1", "k3"))
	if err != nil || o.Status != ledger.StatusRefundDue {
		t.Fatalf("order: %+v %v", o, err)
	}
	if got := seatRow(t, hs, "e1"); got[2:] != "aa" {
		t.Fatalf("the refused sale's seats stayed sold: %s", got)
	}
}
