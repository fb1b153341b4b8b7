package main

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// newLedgerHarness is a harness whose webhooks write a ledger on a schema
// of the test's own; it returns the ledger and its URL.
func newLedgerHarness(t *testing.T) (*harness, *ledger.Ledger, string) {
	hs := newHarness(t)
	url := ledgertest.URL(t)
	l := ledgertest.Open(t, url)
	hs.wh.Ledger = l
	return hs, l, url
}

// issued brings user to payment_pending on seat (pending) and records the
// payment in l as issued, as the gateway does at initiate; it returns the
// payment id.
func (hs *harness) issued(l *ledger.Ledger, user, seat string) string {
	pid := hs.pending(user, seat)
	if err := l.RecordPayment(context.Background(), ledger.Payment{PaymentID: pid, EventID: "e1", UserID: user,
		SeatID: seat, Amount: 5000, Currency: "EUR"}); err != nil {
		hs.t.Fatal(err)
	}
	return pid
}

func TestSuccessWithPostgresDownIs503ThenOneOrderOnRetry(t *testing.T) {
	t.Parallel()
	hs, l, url := newLedgerHarness(t)
	ctx := context.Background()
	pid := hs.issued(l, "alice", "A1")

	// PostgreSQL unreachable: a ledger whose pool is closed
	down := ledgertest.Open(t, url)
	down.Close()
	hs.wh.Ledger = down
	b := body("alice", "A1", pid, "")
	for range 2 {
		r := hs.signed(payment.PathSuccess, b)
		if r.code != 503 || r.body["code"] != "unavailable" {
			t.Fatalf("ledger down: %d %s, want 503 unavailable", r.code, r.raw)
		}
	}
	if n := len(hs.rec.Topic(events.TopicBookingCompleted)); n != 0 {
		t.Fatalf("published booking_completed before the order was durable (%d)", n)
	}

	// the provider retries once PostgreSQL is back
	hs.wh.Ledger = l
	for i := range 3 {
		r := hs.signed(payment.PathSuccess, b)
		if r.code != 200 || r.body["outcome"] != "duplicate" {
			t.Fatalf("retry %d: %d %s", i, r.code, r.raw)
		}
	}
	orders, err := l.EventOrders(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	if len(orders) != 1 || orders[0].PaymentID != pid || orders[0].SeatID != "A1" || orders[0].UserID != "alice" ||
		orders[0].Status != ledger.StatusCompleted || orders[0].Amount != 5000 {
		t.Fatalf("orders %+v, want one completed order for A1", orders)
	}
	if p, _ := l.Payment(ctx, pid); p.Outcome != ledger.OutcomeSucceeded {
		t.Fatalf("payment %+v", p)
	}
}

func TestSuccessRecordsTheOrderBeforeThe2xx(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	pid := hs.issued(l, "bob", "A2")
	r := hs.signed(payment.PathSuccess, body("bob", "A2", pid, ""))
	if r.code != 200 || r.body["outcome"] != "completed" {
		t.Fatalf("success: %d %s", r.code, r.raw)
	}
	o, err := l.OrderByPayment(context.Background(), pid)
	if err != nil || o.Status != ledger.StatusCompleted || o.SeatID != "A2" || o.Sequence == 0 {
		t.Fatalf("order %+v %v", o, err)
	}
}

func TestLatePaymentBecomesRefundDue(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	ctx := context.Background()
	pid := hs.issued(l, "erin", "A1")
	hs.expire("erin")
	for range 2 {
		if r := hs.signed(payment.PathSuccess, body("erin", "A1", pid, "")); r.code != 200 || r.body["outcome"] != "refund" {
			t.Fatalf("late: %d %s", r.code, r.raw)
		}
	}
	due, err := l.RefundsDue(ctx, 10)
	if err != nil || len(due) != 1 || due[0].PaymentID != pid || due[0].RefundReason != ledger.RefundLate {
		t.Fatalf("refunds due %+v %v", due, err)
	}
	if sold, _ := l.SoldOrders(ctx, "e1"); len(sold) != 0 {
		t.Fatalf("a late payment sold a seat in the ledger: %+v", sold)
	}
}

func TestSuccessForABookingRedisLostIsRefundDue(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	ctx := context.Background()
	pid := hs.issued(l, "carol", "A3")
	hs.loseRedis()
	r := hs.signed(payment.PathSuccess, body("carol", "A3", pid, ""))
	if r.code != 200 || r.body["outcome"] != "refund" {
		t.Fatalf("lost booking: %d %s", r.code, r.raw)
	}
	if o, err := l.OrderByPayment(ctx, pid); err != nil || o.Status != ledger.StatusRefundDue || o.RefundReason != ledger.RefundNoBooking {
		t.Fatalf("order %+v %v", o, err)
	}
	// a payment id the ledger never issued is still not found
	if r := hs.signed(payment.PathSuccess, body("carol", "A3", "pay_forged", "")); r.code != 404 {
		t.Fatalf("unknown payment: %d %s", r.code, r.raw)
	}
}

func TestFailureRecordsTheOutcome(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	pid := hs.issued(l, "dave", "A4")
	if r := hs.signed(payment.PathFailure, failBody("dave", "A4", pid, "card_declined")); r.code != 200 {
		t.Fatalf("failure: %d %s", r.code, r.raw)
	}
	p, err := l.Payment(context.Background(), pid)
	if err != nil || p.Outcome != ledger.OutcomeFailed || p.Reason != "card_declined" {
		t.Fatalf("payment %+v %v", p, err)
	}
}

// A payment the ledger issued whose booking Redis lost, arriving after the
// event was rebuilt and the user joined again and holds a new payment: the
// registry in Redis no longer knows the old id (payment_mismatch), but the
// ledger does, so the money is classified as a refund, never left as a 409
// the provider cannot act on.
func TestSuccessAfterRebuildAndRejoinIsRefundDue(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	ctx := context.Background()
	old := hs.issued(l, "fay", "A1")
	hs.loseRedis()
	hs.createEvent() // rebuilt
	hs.pendingAs("fay", "A2", "pay_fay_2")
	r := hs.signed(payment.PathSuccess, body("fay", "A1", old, ""))
	if r.code != 200 || r.body["outcome"] != "refund" {
		t.Fatalf("old payment after rebuild and rejoin: %d %s, want 200 refund", r.code, r.raw)
	}
	if o, err := l.OrderByPayment(ctx, old); err != nil || o.Status != ledger.StatusRefundDue {
		t.Fatalf("order %+v %v, want refund_due", o, err)
	}
	// the new hold is untouched and completes
	if r := hs.signed(payment.PathSuccess, body("fay", "A2", "pay_fay_2", "")); r.code != 200 || r.body["outcome"] != "completed" {
		t.Fatalf("new payment: %d %s", r.code, r.raw)
	}
}

// A reason the ledger cannot store (a NUL byte: PostgreSQL's text refuses
// it) is the provider's bad input, a 400 invalid_argument before anything
// is written, never a 503 it would retry for ever; the booking, Redis and
// the ledger are unchanged, and a good webhook afterwards goes through.
func TestNULInReasonIs4xx(t *testing.T) {
	t.Parallel()
	hs, l, _ := newLedgerHarness(t)
	pid := hs.issued(l, "erin", "A2")
	for _, reason := range []string{"card\x00declined", "\x00"} {
		for _, path := range []string{payment.PathFailure, payment.PathSuccess} {
			b := failBody("erin", "A2", pid, reason)
			if path == payment.PathSuccess {
				b = body("erin", "A2", pid, reason)
			}
			r := hs.signed(path, b)
			if r.code != 400 || r.body["code"] != "invalid_argument" {
				t.Fatalf("%s, reason %q: %d %s, want 400 invalid_argument", path, reason, r.code, r.raw)
			}
		}
	}
	if r := hs.signed(payment.PathSuccess, body("erin", "A\x002", pid, "")); r.code != 400 || r.body["code"] != "invalid_argument" {
		t.Fatalf("a NUL in seat_id: %d %s, want 400 invalid_argument", r.code, r.raw)
	}
	if st := hs.state("erin"); st.State != booking.StatePaymentPending {
		t.Fatalf("state changed: %+v", st)
	}
	if p, err := l.Payment(context.Background(), pid); err != nil || p.Outcome != ledger.OutcomeInitiated {
		t.Fatalf("payment %+v %v", p, err)
	}
	if r := hs.signed(payment.PathFailure, failBody("erin", "A2", pid, "card_declined")); r.code != 200 {
		t.Fatalf("a good failure afterwards: %d %s", r.code, r.raw)
	}
}
