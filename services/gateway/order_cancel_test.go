package main

import (
	"context"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// payMany takes user from join to a successful payment of seats (one
// order), the webhook's two steps directly; it returns the order.
func payMany(t *testing.T, hs *harness, l *ledger.Ledger, event, user string, seats ...string) ledger.Order {
	t.Helper()
	ctx := context.Background()
	tok := hs.token(user, "")
	want(t, hs.do("POST", "/api/booking/request", tok, map[string]any{"event_id": event}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", tok, map[string]any{"event_id": event, "seat_ids": seats}), 200, "")
	r := hs.do("POST", "/api/booking/payment/initiate", tok, map[string]any{"event_id": event})
	want(t, r, 200, "")
	pid := r.str("payment_id")
	res, err := hs.store.PaymentSuccess(ctx, event, user, pid)
	if err != nil {
		t.Fatal(err)
	}
	o, err := l.RecordSale(ctx, ledger.Sale{PaymentID: pid, EventID: event, UserID: user, SeatID: res.SeatID,
		Sequence: res.Sequence, SeatIDs: res.SeatIDs, SeatPrices: res.SeatPrices})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// seatRow is the status string of the event's first row ("ssaa").
func seatRow(t *testing.T, hs *harness, event string) string {
	t.Helper()
	r := hs.do("GET", "/api/seats/available?event_id="+event, "", nil)
	want(t, r, 200, "")
	secs, _ := r.body["sections"].([]any)
	if len(secs) == 0 {
		t.Fatalf("seat map: %s", r.raw)
	}
	return secs[0].(map[string]any)["status"].(string)
}

// factIDs counts the distinct facts of typ the gateway published, and
// all of them.
func factIDs(hs *harness, typ string) (distinct, all int) {
	seen := map[string]bool{}
	for _, e := range hs.rec.Events() {
		if e.Type == typ {
			all++
			seen[e.ID] = true
		}
	}
	return len(seen), all
}

func TestCancelOrderPartlyThenWholly(t *testing.T) {
	t.Parallel()
	hs, l, ref := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2, "max_seats_per_order": 3})
	o := payMany(t, hs, l, "e1", "alice", "A1", "A2", "A3")
	if o.Amount != 300 || seatRow(t, hs, "e1") != "sssa" {
		t.Fatalf("order %+v, seats %s", o, seatRow(t, hs, "e1"))
	}
	path := "/api/admin/orders/" + o.OrderID + "/cancel"

	// some seats
	r := hs.do("POST", path, hs.admin, map[string]any{"reason": "double charge", "seat_ids": []string{"A2"}})
	want(t, r, 200, "")
	x, _ := r.body["cancellation"].(map[string]any)
	if r.body["changed"] != true || x["amount"] != float64(100) || x["refund_status"] != "refunded" || x["reason"] != "double charge" {
		t.Fatalf("cancel A2: %s", r.raw)
	}
	if got := seatRow(t, hs, "e1"); got != "sasa" {
		t.Fatalf("seat map after A2's cancellation: %s", got)
	}
	// the same again: 200, nothing changes
	r = hs.do("POST", path, hs.admin, map[string]any{"reason": "double charge", "seat_ids": []string{"A2"}})
	if r.code != 200 || r.body["changed"] != false {
		t.Fatalf("repeat: %d %s", r.code, r.raw)
	}
	// bad input: nothing changes
	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "x", "seat_ids": []string{"A1", "A2"}}), 409, "seat_already_cancelled")
	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "x", "seat_ids": []string{"A4"}}), 400, "seat_not_in_order")
	want(t, hs.do("POST", path, hs.admin, map[string]any{"seat_ids": []string{"A1"}}), 400, "invalid_body")
	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "x", "seat_ids": []string{"A1", "A1"}}), 400, "invalid_body")
	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "a\nb"}), 400, "invalid_body")
	want(t, hs.do("POST", "/api/admin/orders/ord_nope/cancel", hs.admin, map[string]any{"reason": "x"}), 404, "order_not_found")
	want(t, hs.do("POST", "/api/admin/orders/a%00b/cancel", hs.admin, map[string]any{"reason": "x"}), 404, "order_not_found")
	want(t, hs.do("POST", path, hs.token("alice", ""), map[string]any{"reason": "x"}), 403, "")
	if got := seatRow(t, hs, "e1"); got != "sasa" {
		t.Fatalf("seat map after refused requests: %s", got)
	}

	// the rest: the order is cancelled, what is left of its amount refunded
	r = hs.do("POST", path, hs.admin, map[string]any{"reason": "show cancelled"})
	want(t, r, 200, "")
	x, _ = r.body["cancellation"].(map[string]any)
	ord, _ := r.body["order"].(map[string]any)
	if x["amount"] != float64(200) || x["whole_order"] != true || ord["status"] != "cancelled" {
		t.Fatalf("cancel the rest: %s", r.raw)
	}
	if got := seatRow(t, hs, "e1"); got != "aaaa" {
		t.Fatalf("seat map after the whole order: %s", got)
	}
	r = hs.do("POST", path, hs.admin, map[string]any{"reason": "show cancelled"})
	if r.code != 200 || r.body["changed"] != false {
		t.Fatalf("the whole order again: %d %s", r.code, r.raw)
	}
	want(t, hs.do("POST", "/api/admin/refunds/"+o.OrderID, hs.admin, nil), 409, "not_refundable")

	// the fan sees the cancelled order and its refunds, not who cancelled
	r = hs.do("GET", "/api/orders", hs.token("alice", ""), nil)
	list, _ := r.body["orders"].([]any)
	if len(list) != 1 || !strings.Contains(r.raw, `"status":"cancelled"`) || strings.Count(r.raw, `"refund_status":"refunded"`) != 2 ||
		strings.Contains(r.raw, "cancelled_by") {
		t.Fatalf("alice's orders: %s", r.raw)
	}
	// the money and the facts: once each
	if made := ref.made(); len(made) != 2 {
		t.Fatalf("refunds %v", made)
	}
	for _, typ := range []string{events.TopicOrderCancelled, events.TopicRefundIssued} {
		if distinct, all := factIDs(hs, typ); distinct != 2 || all != 2 {
			t.Fatalf("%s: %d facts, %d distinct", typ, all, distinct)
		}
	}
	// the seats are on sale again
	payMany(t, hs, l, "e1", "bob", "A2")
	if got := seatRow(t, hs, "e1"); got != "asaa" {
		t.Fatalf("seat map after A2 was sold again: %s", got)
	}
}

func TestCancelOrderRefundRefusedStaysPendingThenRetried(t *testing.T) {
	t.Parallel()
	hs, l, ref := ledgerHarness(t)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	pid := pay(t, hs, l, "alice", "A1")
	o, _ := l.OrderByPayment(ctx, pid)
	path := "/api/admin/orders/" + o.OrderID + "/cancel"

	ref.setFail(&payment.Error{Status: 409, Code: "not_refundable", Message: "the payment is pending, not paid"})
	r := hs.do("POST", path, hs.admin, map[string]any{"reason": "fraud"})
	want(t, r, 200, "")
	x, _ := r.body["cancellation"].(map[string]any)
	if x["refund_status"] != "pending" || !strings.Contains(x["refund_error"].(string), "not_refundable") {
		t.Fatalf("a refused refund: %s", r.raw)
	}
	// cancelled and back on sale even so; the fan sees the refund pending
	if got := seatRow(t, hs, "e1"); got != "aaaa" {
		t.Fatalf("seat map: %s", got)
	}
	r = hs.do("GET", "/api/orders/"+o.OrderID, hs.token("alice", ""), nil)
	if !strings.Contains(r.raw, `"refund_status":"pending"`) || !strings.Contains(r.raw, "not_refundable") {
		t.Fatalf("alice's order: %s", r.raw)
	}
	// the operator retries once the provider accepts: refunded, once
	ref.setFail(nil)
	r = hs.do("POST", path, hs.admin, map[string]any{"reason": "fraud"})
	x, _ = r.body["cancellation"].(map[string]any)
	if r.code != 200 || r.body["changed"] != false || x["refund_status"] != "refunded" {
		t.Fatalf("retry: %d %s", r.code, r.raw)
	}
	r = hs.do("POST", path, hs.admin, map[string]any{"reason": "fraud"})
	if made := ref.made(); r.code != 200 || len(made) != 1 {
		t.Fatalf("refunds %v after a third request", made)
	}
	if distinct, all := factIDs(hs, events.TopicRefundIssued); distinct != 1 || all != 1 {
		t.Fatalf("refund_issued: %d, %d distinct", all, distinct)
	}
	if distinct, all := factIDs(hs, events.TopicOrderCancelled); distinct != 1 || all != 1 {
		t.Fatalf("order_cancelled: %d, %d distinct", all, distinct)
	}

	// a refund due is not a sold ticket
	late, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "pay_late", EventID: "e1", UserID: "bob", SeatID: "A2", RefundReason: ledger.RefundLate})
	if err != nil {
		t.Fatal(err)
	}
	want(t, hs.do("POST", "/api/admin/orders/"+late.OrderID+"/cancel", hs.admin, map[string]any{"reason": "x"}), 409, "not_cancellable")
}

// TestCancelOrderSweepFinishesWhatTheRequestLeft: the gateway recorded a
// cancellation and died before Redis or the provider heard of it; the
// sweep finishes it.
func TestCancelOrderSweepFinishesWhatTheRequestLeft(t *testing.T) {
	t.Parallel()
	hs, l, ref := ledgerHarness(t)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	pid := pay(t, hs, l, "alice", "A1")
	o, _ := l.OrderByPayment(ctx, pid)
	if _, err := l.CancelOrder(ctx, ledger.CancelRequest{OrderID: o.OrderID, Reason: "fraud", Actor: "ada"}); err != nil {
		t.Fatal(err)
	}
	if got := seatRow(t, hs, "e1"); got != "saaa" {
		t.Fatalf("seat map before the sweep: %s", got)
	}
	c := hs.srv.canceller()
	c.Age = 1
	if n, err := c.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if got := seatRow(t, hs, "e1"); got != "aaaa" || len(ref.made()) != 1 {
		t.Fatalf("after the sweep: seats %s, refunds %v", got, ref.made())
	}
	if distinct, all := factIDs(hs, events.TopicRefundIssued); distinct != 1 || all != 1 {
		t.Fatalf("refund_issued: %d, %d distinct", all, distinct)
	}
}

func TestCancelOrderIsForOperatorsAndAudited(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ctx := context.Background()
	h.account("otto", operators.Operator)
	h.account("vera", operators.Viewer)
	otto, vera := h.signIn("otto", opPassword), h.signIn("vera", opPassword)
	h.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	pid := pay(t, h.harness, h.l, "alice", "A1")
	o, _ := h.l.OrderByPayment(ctx, pid)
	path := "/api/admin/orders/" + o.OrderID + "/cancel"
	r, _ := h.send("POST", path, vera, map[string]any{"reason": "fraud"})
	want(t, r, 403, "forbidden")
	if got := seatRow(t, h.harness, "e1"); got != "saaa" {
		t.Fatalf("a viewer's request changed the seats: %s", got)
	}
	r, _ = h.send("POST", path, otto, map[string]any{"reason": "fraud"})
	want(t, r, 200, "")
	if x, _ := r.body["cancellation"].(map[string]any); x["cancelled_by"] != "otto" {
		t.Fatalf("cancellation: %s", r.raw)
	}
	r, _ = h.send("POST", path, otto, map[string]any{"reason": "fraud"}) // a repeat: no record
	want(t, r, 200, "")
	acts, _, err := h.srv.Operators.Audit(ctx, operators.AuditFilter{Action: operators.ActionOrderCancel, Limit: 10})
	if err != nil || len(acts) != 1 || acts[0].Actor != "otto" || acts[0].Target != o.OrderID || !strings.Contains(string(acts[0].After), `"fraud"`) {
		t.Fatalf("audit: %+v %v", acts, err)
	}
	if n := h.srv.unaudited.Load(); n != 0 {
		t.Fatalf("%d unaudited admin changes", n)
	}
}
