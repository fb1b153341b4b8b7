package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

const boxOfficePath = "/api/admin/events/e1/box-office/sales"

// TestBoxOfficeSaleOpenAPIContract: a sale at the box office, its repeat,
// its refusals, its report, its cancellation and a rebuild, each request
// and answer validated against docs/openapi.yaml.
func TestBoxOfficeSaleOpenAPIContract(t *testing.T) {
	t.Parallel()
	hs, l, ref := ledgerHarness(t)
	ctx := context.Background()
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 10, "capacity": 2, "max_seats_per_order": 3})
	release := time.Now().Add(time.Hour)
	if _, err := hs.store.AllocateSeats(ctx, "e1", booking.ChannelBoxOffice, release, []string{"A1", "A2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.store.AllocateSeats(ctx, "e1", "partner", release, []string{"A3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.store.MarkSeats(ctx, "e1", booking.MarkHold, "sponsor", []string{"A4"}); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.store.MarkSeats(ctx, "e1", booking.MarkKill, "", []string{"A5"}); err != nil {
		t.Fatal(err)
	}
	alice := hs.token("alice", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A6"}), 200, "")

	// a sale: the box office's own seat and a general one
	r := hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"A1", "A7"}, "customer_ref": "walk-up #12"},
		"Idempotency-Key", "k1")
	want(t, r, 201, "")
	o, _ := r.body["order"].(map[string]any)
	if r.body["replayed"] != false || o["channel"] != "box_office" || o["customer_ref"] != "walk-up #12" || o["sold_by"] == "" ||
		o["amount"] != float64(200) || o["status"] != "completed" || o["user_id"] != "box-office:k1" {
		t.Fatalf("sale: %s", r.raw)
	}
	orderID := o["order_id"].(string)
	if got := seatRow(t, hs, "e1"); got[0] != 's' || got[6] != 's' {
		t.Fatalf("seats after the sale: %s", got)
	}
	// a retry sells nothing more, whatever it asks
	r = hs.do("POST", boxOfficePath, hs.admin, map[string]any{"sale_id": "k1", "seat_ids": []string{"A8"}})
	want(t, r, 200, "")
	if o2, _ := r.body["order"].(map[string]any); r.body["replayed"] != true || o2["order_id"] != orderID {
		t.Fatalf("repeat: %s", r.raw)
	}
	if got := seatRow(t, hs, "e1"); got[7] != 'a' {
		t.Fatalf("a repeat sold A8: %s", got)
	}
	// the fact, twice with one id, carries the channel
	var done []events.Event
	for _, e := range hs.rec.Topic(events.TopicBookingCompleted) {
		if e.PaymentID == booking.BoxOfficePaymentID("e1", "k1") {
			done = append(done, e)
		}
	}
	if len(done) != 2 || done[0].ID != done[1].ID || done[0].Channel != "box_office" || done[0].Amount != 200 ||
		!done[0].OccurredAt.Equal(done[1].OccurredAt) {
		t.Fatalf("booking_completed: %+v", done)
	}
	// a fan cannot take a seat the box office sold
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A7"}), 409, "seat_unavailable")
	// best available through another channel: its own seat
	r = hs.do("POST", boxOfficePath, hs.admin, map[string]any{"sale_id": "k2", "count": 1, "channel": "partner"})
	want(t, r, 201, "")
	if o, _ := r.body["order"].(map[string]any); fmt.Sprint(o["seat_ids"]) != "[A3]" || o["channel"] != "partner" {
		t.Fatalf("partner sale: %s", r.raw)
	}

	// refusals sell nothing
	before := seatRow(t, hs, "e1")
	seats := func(r resp) string { return fmt.Sprint(r.body["seat_ids"]) }
	if r := hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"A8", "A6"}}, "Idempotency-Key", "k3"); r.code != 409 ||
		r.str("code") != "seat_unavailable" || seats(r) != "[A6]" {
		t.Fatalf("a fan's hold: %s", r.raw)
	}
	if r := hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"A7"}}, "Idempotency-Key", "k3"); r.code != 409 ||
		r.str("code") != "seat_unavailable" || seats(r) != "[A7]" {
		t.Fatalf("sold: %s", r.raw)
	}
	for _, seat := range []string{"A4", "A5"} { // held, killed
		if r := hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"A8", seat}}, "Idempotency-Key", "k3"); r.code != 409 ||
			r.str("code") != "seat_not_for_sale" || seats(r) != "["+seat+"]" {
			t.Fatalf("%s: %s", seat, r.raw)
		}
	}
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"A2"}, "channel": "partner"}, "Idempotency-Key", "k3"),
		409, "seat_not_for_sale")
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"A8", "A9", "A10", "A2"}}, "Idempotency-Key", "k3"),
		400, "too_many_seats")
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"count": 4}, "Idempotency-Key", "k3"), 400, "too_many_seats")
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"Z1"}}, "Idempotency-Key", "k3"), 404, "seat_not_found")
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"count": 1, "section": "nope"}, "Idempotency-Key", "k3"), 404, "section_not_found")
	want(t, hs.do("POST", "/api/admin/events/nope/box-office/sales", hs.admin, map[string]any{"count": 1}, "Idempotency-Key", "k3"),
		404, "event_not_found")
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"count": 1}), 400, "invalid_argument") // no sale id
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"count": 1, "sale_id": "a"}, "Idempotency-Key", "b"), 400, "invalid_argument")
	bad("POST", boxOfficePath, hs.admin, map[string]any{"count": 1}, 400, "invalid_argument", "Idempotency-Key", "no spaces")
	bad("POST", boxOfficePath, hs.admin, map[string]any{}, 400, "invalid_body", "Idempotency-Key", "k3")
	bad("POST", boxOfficePath, hs.admin, "", 400, "invalid_body", "Idempotency-Key", "k3")
	bad("POST", boxOfficePath, hs.admin, map[string]any{"count": 1, "seat_ids": []string{"A8"}}, 400, "invalid_body", "Idempotency-Key", "k3")
	bad("POST", boxOfficePath, alice, map[string]any{"count": 1}, 403, "forbidden", "Idempotency-Key", "k3")
	bad("POST", boxOfficePath, "", map[string]any{"count": 1}, 401, "unauthorized", "Idempotency-Key", "k3")
	ct.refusals("POST", boxOfficePath, hs.admin, func() map[string]any { return map[string]any{"sale_id": "k3", "count": 1} })
	if got := seatRow(t, hs, "e1"); got != before {
		t.Fatalf("refused requests changed the seats: %s, was %s", got, before)
	}
	if _, err := l.OrderByPayment(ctx, booking.BoxOfficePaymentID("e1", "k3")); err != ledger.ErrOrderNotFound {
		t.Fatalf("a refused sale has an order: %v", err)
	}

	// the report counts the sales by channel
	r = hs.do("GET", "/api/admin/events/e1/report", hs.admin, nil)
	want(t, r, 200, "")
	if by := fmt.Sprint(r.body["by_channel"]); !strings.Contains(by, "box_office") || !strings.Contains(by, "partner") {
		t.Fatalf("report by channel: %s", r.raw)
	}
	if got := hs.do("GET", "/api/admin/events/e1/report?format=csv", hs.admin, nil); !strings.Contains(got.raw, "channel_seats,EUR:box_office,2") {
		t.Fatalf("report csv: %s", got.raw)
	}

	// a rebuild from the ledger keeps the sale sold
	if err := redisDel(hs, "e1"); err != nil {
		t.Fatal(err)
	}
	want(t, hs.do("POST", "/api/admin/events/e1/restore", hs.admin, nil), 200, "")
	if got := seatRow(t, hs, "e1"); got[0] != 's' || got[6] != 's' || got[2] != 's' {
		t.Fatalf("seats after the rebuild: %s", got)
	}
	// ... and a retry after it still sells nothing more
	want(t, hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{"A8"}}, "Idempotency-Key", "k1"), 200, "")

	// cancelled by the order cancel route: seats back, refunded at the counter
	r = hs.do("POST", "/api/admin/orders/"+orderID+"/cancel", hs.admin, map[string]any{"reason": "customer changed their mind"})
	want(t, r, 200, "")
	if x, _ := r.body["cancellation"].(map[string]any); x["refund_status"] != "refunded" || x["amount"] != float64(200) {
		t.Fatalf("cancel: %s", r.raw)
	}
	if made := ref.made(); len(made) != 0 {
		t.Fatalf("a counter sale's refund went to the provider: %v", made)
	}
	if got := seatRow(t, hs, "e1"); got[0] == 's' || got[6] != 'a' {
		t.Fatalf("seats after the cancellation: %s", got)
	}
	ct.Report()
}

func TestBoxOfficeSaleIsForOperatorsAndAudited(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ctx := context.Background()
	h.account("otto", operators.Operator)
	h.account("vera", operators.Viewer)
	otto, vera := h.signIn("otto", opPassword), h.signIn("vera", opPassword)
	h.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	body := map[string]any{"sale_id": "s1", "seat_ids": []string{"A2"}, "customer_ref": "Ms Smith"}
	r, _ := h.send("POST", boxOfficePath, vera, body)
	want(t, r, 403, "forbidden")
	if got := seatRow(t, h.harness, "e1"); got != "aaaa" {
		t.Fatalf("a viewer's request sold: %s", got)
	}
	r, _ = h.send("POST", boxOfficePath, otto, body)
	want(t, r, 201, "")
	if o, _ := r.body["order"].(map[string]any); o["sold_by"] != "otto" {
		t.Fatalf("sale: %s", r.raw)
	}
	r, _ = h.send("POST", boxOfficePath, otto, body) // a repeat: no record
	want(t, r, 200, "")
	acts, _, err := h.srv.Operators.Audit(ctx, operators.AuditFilter{Action: operators.ActionBoxOfficeSell, Limit: 10})
	if err != nil || len(acts) != 1 || acts[0].Actor != "otto" || acts[0].EventID != "e1" || !strings.Contains(string(acts[0].After), `"Ms Smith"`) {
		t.Fatalf("audit: %+v %v", acts, err)
	}
	if n := h.srv.unaudited.Load(); n != 0 {
		t.Fatalf("%d unaudited admin changes", n)
	}
}

// A box-office sale and fans selecting the same seats through the API,
// racing: each seat goes to one of them.
func TestBoxOfficeSaleRacesFans(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	const n = 12
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": n, "capacity": n})
	toks := make([]string, n)
	for i := range n {
		toks[i] = hs.token(fmt.Sprintf("fan%d", i), "")
		want(t, hs.do("POST", "/api/booking/request", toks[i], map[string]any{"event_id": "e1"}), 200, "")
	}
	fans, box := 0, 0
	for i := range n {
		seat := fmt.Sprintf("A%d", i+1)
		var fan, sale resp
		var wg sync.WaitGroup
		wg.Go(func() {
			if i%2 == 1 {
				time.Sleep(3 * time.Millisecond) // the sale's ledger look-up first: either may win
			}
			fan = hs.do("POST", "/api/booking/select-seat", toks[i], map[string]any{"event_id": "e1", "seat_id": seat})
		})
		wg.Go(func() {
			sale = hs.do("POST", boxOfficePath, hs.admin, map[string]any{"seat_ids": []string{seat}}, "Idempotency-Key", fmt.Sprintf("r%d", i))
		})
		wg.Wait()
		switch {
		case fan.code == 200 && sale.code == 409 && sale.str("code") == "seat_unavailable":
			fans++
		case sale.code == 201 && fan.code == 409 && fan.str("code") == "seat_unavailable":
			box++
		default:
			t.Fatalf("seat %s: fan %d %s, box office %d %s", seat, fan.code, fan.raw, sale.code, sale.raw)
		}
	}
	row := seatRow(t, hs, "e1")
	if strings.Count(row, "s") != box || strings.Count(row, "h") != fans {
		t.Fatalf("seats %s after %d box-office and %d fan wins", row, box, fans)
	}
	t.Logf("box office %d, fans %d", box, fans)
}
