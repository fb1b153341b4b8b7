package main

import (
	"context"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// A fan cancels their own order until the event's refundable_until, by
// the operator's path: the seats back on sale, the money back once, the
// ledger naming the fan and their reason. Someone else's order, an event
// that lets no fan cancel, a passed deadline and bad input change
// nothing; a repeat says so.
func TestFanCancelsOwnOrder(t *testing.T) {
	t.Parallel()
	hs, l, ref := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2, "max_seats_per_order": 2,
		"refundable_until": "2099-01-01T00:00:00Z"})
	hs.createEvent(map[string]any{"id": "never", "rows": 1, "seats_per_row": 2})
	hs.createEvent(map[string]any{"id": "past", "rows": 1, "seats_per_row": 2, "refundable_until": "2000-01-01T00:00:00Z"})
	o := payMany(t, hs, l, "e1", "alice", "A1", "A2")
	alice, bob := hs.token("alice", ""), hs.token("bob", "")
	path := "/api/orders/" + o.OrderID + "/cancel"

	want(t, hs.do("POST", path, bob, map[string]any{}), 404, "order_not_found")
	want(t, hs.do("POST", path, "", map[string]any{}), 401, "")
	want(t, hs.do("POST", path, alice, map[string]any{"reason": "a\nb"}), 400, "invalid_body")
	want(t, hs.do("POST", path, alice, map[string]any{"seat_ids": []string{"A4"}}), 400, "seat_not_in_order")
	want(t, hs.do("POST", "/api/orders/ord_nope/cancel", alice, map[string]any{}), 404, "order_not_found")
	for ev, code := range map[string]string{"never": "not_refundable", "past": "refund_deadline_passed"} {
		other := payMany(t, hs, l, ev, "alice", "A1")
		want(t, hs.do("POST", "/api/orders/"+other.OrderID+"/cancel", alice, map[string]any{}), 409, code)
		if got := seatRow(t, hs, ev); got != "sa" {
			t.Fatalf("%s: seats after a refused cancellation: %s", ev, got)
		}
	}
	if got := seatRow(t, hs, "e1"); got != "ssaa" || len(ref.made()) != 0 {
		t.Fatalf("seats after refused requests: %s, refunds %v", got, ref.made())
	}

	r := hs.do("POST", path, alice, map[string]any{"reason": "cannot come"})
	want(t, r, 200, "")
	x, _ := r.body["cancellation"].(map[string]any)
	ord, _ := r.body["order"].(map[string]any)
	if r.body["changed"] != true || x["amount"] != float64(200) || x["refund_status"] != "refunded" ||
		x["reason"] != "cannot come" || ord["status"] != "cancelled" || strings.Contains(r.raw, "cancelled_by") {
		t.Fatalf("cancel: %s", r.raw)
	}
	if got := seatRow(t, hs, "e1"); got != "aaaa" {
		t.Fatalf("seats after the cancellation: %s", got)
	}
	rec, err := l.Order(context.Background(), o.OrderID)
	if err != nil || len(rec.Cancellations) != 1 || rec.Cancellations[0].Actor != "fan:alice" ||
		rec.Cancellations[0].Reason != "cannot come" {
		t.Fatalf("ledger: %+v %v", rec, err)
	}
	r = hs.do("POST", path, alice, map[string]any{})
	if r.code != 200 || r.body["changed"] != false {
		t.Fatalf("again: %d %s", r.code, r.raw)
	}
	if made := ref.made(); len(made) != 1 {
		t.Fatalf("refunds %v", made)
	}
	if distinct, all := factIDs(hs, events.TopicOrderCancelled); distinct != 1 || all != 1 {
		t.Fatalf("order_cancelled: %d facts, %d distinct", all, distinct)
	}
}

// TestFanCancelOpenAPIContract: a fan's cancellation, its error cases and
// every body the document refuses, against docs/openapi.yaml; refused
// requests change nothing.
func TestFanCancelOpenAPIContract(t *testing.T) {
	t.Parallel()
	hs, l, ref := ledgerHarness(t)
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2, "max_seats_per_order": 3,
		"refundable_until": "2099-01-01T00:00:00Z", "finish_after_end": true})
	hs.createEvent(map[string]any{"id": "past", "rows": 1, "seats_per_row": 2, "refundable_until": "2000-01-01T00:00:00Z"})
	o := payMany(t, hs, l, "e1", "alice", "A1", "A2", "A3")
	late := payMany(t, hs, l, "past", "alice", "A1")
	alice := hs.token("alice", "")
	path := "/api/orders/" + o.OrderID + "/cancel"

	want(t, hs.do("GET", "/api/events/e1", "", nil), 200, "")
	want(t, hs.do("POST", path, alice, map[string]any{"seat_ids": []string{"A2"}}), 200, "")
	want(t, hs.do("POST", path, alice, map[string]any{"seat_ids": []string{"A2"}, "reason": "again"}), 200, "")
	want(t, hs.do("POST", path, alice, map[string]any{"seat_ids": []string{"A1", "A2"}}), 409, "seat_already_cancelled")
	want(t, hs.do("POST", path, alice, map[string]any{"seat_ids": []string{"B9"}}), 400, "seat_not_in_order")
	want(t, hs.do("POST", path, hs.token("bob", ""), map[string]any{}), 404, "order_not_found")
	want(t, hs.do("POST", "/api/orders/"+late.OrderID+"/cancel", alice, map[string]any{}), 409, "refund_deadline_passed")
	bad("POST", path, "", map[string]any{}, 401, "unauthorized")
	bad("POST", path, alice, `{"reason":`, 400, "invalid_body")
	ct.refusals("POST", path, alice, func() map[string]any { return map[string]any{"reason": "x", "seat_ids": []string{"A1"}} })
	if got := seatRow(t, hs, "e1"); got != "sasa" {
		t.Fatalf("refused requests changed the seats: %s", got)
	}
	if made := ref.made(); len(made) != 1 {
		t.Fatalf("refunds %v", made)
	}
	want(t, hs.do("POST", path, alice, map[string]any{}), 200, "")
	want(t, hs.do("GET", "/api/orders", alice, nil), 200, "")
	ct.Report()
}
