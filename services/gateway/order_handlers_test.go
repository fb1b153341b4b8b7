package main

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

type fakeRefunder struct {
	mu    sync.Mutex
	calls []string // the payment ids of the refunds made (a key's repeat is not one)
	keys  map[string]int64
	fail  error
}

func (f *fakeRefunder) Refund(_ context.Context, id string, amount int64, key string) (payment.Refund, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return payment.Refund{}, f.fail
	}
	if key != "" {
		if prev, ok := f.keys[key]; ok {
			return payment.Refund{PaymentID: id, Status: "paid", Amount: prev, RefundID: key}, nil
		}
		if f.keys == nil {
			f.keys = map[string]int64{}
		}
		f.keys[key] = amount
	}
	f.calls = append(f.calls, id)
	return payment.Refund{PaymentID: id, Status: "refunded", Amount: amount, RefundID: key}, nil
}

func (f *fakeRefunder) made() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeRefunder) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// ledgerHarness is the gateway harness with a ledger on a schema of the
// test's own.
func ledgerHarness(t *testing.T) (*harness, *ledger.Ledger, *fakeRefunder) {
	return ledgerHarnessAt(t, ledgertest.URL(t))
}

// ledgerHarnessAt is ledgerHarness over the ledger schema at url
// (ledgertest.URL), for tests that also reach PostgreSQL themselves.
func ledgerHarnessAt(t *testing.T, url string) (*harness, *ledger.Ledger, *fakeRefunder) {
	hs := newHarness(t, false)
	l := ledgertest.Open(t, url)
	ref := &fakeRefunder{}
	hs.srv.Ledger, hs.srv.Refunds, hs.srv.Currency = l, ref, "EUR"
	// as platform.Dial's announcer: a join's code use is recorded first
	hs.relay.ann = admission.New(hs.store, nil, hs.rec, nil, admission.WithRedemptions(l.RecordRedemptions))
	// routes are registered when the handler is built: build it again
	fh := hs.srv.FastHandler()
	hs.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fastserver.ServeRequest(fh, w, r) })
	return hs, l, ref
}

// pay takes user from join to a successful payment: the Redis steps
// through the API, the webhook's two steps (Lua, then the ledger) directly.
func pay(t *testing.T, hs *harness, l *ledger.Ledger, user, seat string) string {
	t.Helper()
	tok := hs.token(user, "")
	want(t, hs.do("POST", "/api/booking/request", tok, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", tok, map[string]any{"event_id": "e1", "seat_id": seat}), 200, "")
	r := hs.do("POST", "/api/booking/payment/initiate", tok, map[string]any{"event_id": "e1"})
	want(t, r, 200, "")
	pid := r.str("payment_id")
	p, err := l.Payment(context.Background(), pid)
	if err != nil || p.UserID != user || p.SeatID != seat || p.Amount != 100 || p.Currency != "EUR" || p.Outcome != ledger.OutcomeInitiated {
		t.Fatalf("payment id not recorded at initiate: %+v %v", p, err)
	}
	res, err := hs.store.PaymentSuccess(context.Background(), "e1", user, pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordSale(context.Background(), ledger.Sale{PaymentID: pid, EventID: "e1", UserID: user,
		SeatID: res.SeatID, Sequence: res.Sequence}); err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestAdminEventWritesGoToTheLedgerFirst(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2})
	d, err := l.Event(ctx, "e1")
	if err != nil || d.Config.Capacity != 2 || len(d.Config.Seats) != 4 {
		t.Fatalf("ledger definition %+v %v", d, err)
	}
	// another definition under the same id
	want(t, hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "e1", "rows": 1, "seats_per_row": 5}), 409, "event_exists")
	// the same create again while Redis has it: an idempotent retry (201)
	want(t, hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2, "no_orphan_rule": false}), 201, "")
	// Redis lost it: the same create again makes the Redis state
	if err := redisDel(hs, "e1"); err != nil {
		t.Fatal(err)
	}
	want(t, hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2, "no_orphan_rule": false}), 201, "")

	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"capacity": 3, "paused": true}), 200, "")
	if d, _ := l.Event(ctx, "e1"); d.Config.Capacity != 3 || !d.Paused {
		t.Fatalf("update not in the ledger: %+v", d)
	}
	want(t, hs.do("PATCH", "/api/admin/events/nope", hs.admin, map[string]any{"capacity": 3}), 404, "event_not_found")
}

func redisDel(hs *harness, eventID string) error {
	return hs.srv.Redis.Del(context.Background(), booking.EventKeys(hs.store.Prefix(), eventID)...).Err()
}

func TestOrdersAreTheCallersOwnNewestFirst(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 4})
	pay(t, hs, l, "alice", "A1")
	pay(t, hs, l, "bob", "A2")
	alice, bob := hs.token("alice", ""), hs.token("bob", "")

	r := hs.do("GET", "/api/orders", alice, nil)
	want(t, r, 200, "")
	list, _ := r.body["orders"].([]any)
	if len(list) != 1 {
		t.Fatalf("alice's orders: %s", r.raw)
	}
	o := list[0].(map[string]any)
	if o["seat_id"] != "A1" || o["status"] != "completed" || o["amount"] != float64(100) || o["currency"] != "EUR" {
		t.Fatalf("order %v", o)
	}
	id := o["order_id"].(string)
	want(t, hs.do("GET", "/api/orders/"+id, alice, nil), 200, "")
	want(t, hs.do("GET", "/api/orders/"+id, bob, nil), 404, "order_not_found")
	want(t, hs.do("GET", "/api/orders/ord_nope", alice, nil), 404, "order_not_found")
	want(t, hs.do("GET", "/api/orders", "", nil), 401, "")
	want(t, hs.do("GET", "/api/orders?limit=0", alice, nil), 400, "invalid_argument")

	// the admin's view: JSON and CSV
	want(t, hs.do("GET", "/api/admin/events/e1/orders", alice, nil), 403, "")
	r = hs.do("GET", "/api/admin/events/e1/orders", hs.admin, nil)
	if all, _ := r.body["orders"].([]any); r.code != 200 || len(all) != 2 {
		t.Fatalf("event orders: %d %s", r.code, r.raw)
	}
	r = hs.do("GET", "/api/admin/events/e1/orders?format=csv", hs.admin, nil)
	rows, err := csv.NewReader(strings.NewReader(r.raw)).ReadAll()
	if err != nil || r.code != 200 || len(rows) != 3 || rows[0][0] != "order_id" || rows[1][4] != "A1" || rows[2][4] != "A2" {
		t.Fatalf("csv: %d %v %q", r.code, err, r.raw)
	}
	want(t, hs.do("GET", "/api/admin/events/e1/orders?format=xml", hs.admin, nil), 400, "invalid_argument")
	want(t, hs.do("GET", "/api/admin/events/nope/orders", hs.admin, nil), 404, "event_not_found")
}

func TestRefundDueIsRefundedOnceWithTheProvider(t *testing.T) {
	t.Parallel()
	hs, l, ref := ledgerHarness(t)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 4})
	sold := pay(t, hs, l, "alice", "A1")
	late, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "pay_late", EventID: "e1", UserID: "bob", SeatID: "A2", RefundReason: ledger.RefundLate})
	if err != nil {
		t.Fatal(err)
	}
	r := hs.do("GET", "/api/admin/refunds", hs.admin, nil)
	if due, _ := r.body["refunds"].([]any); r.code != 200 || len(due) != 1 {
		t.Fatalf("refunds: %s", r.raw)
	}
	ref.fail = errors.New("provider down")
	want(t, hs.do("POST", "/api/admin/refunds/"+late.OrderID, hs.admin, nil), 503, "payment_provider_unavailable")
	ref.fail = nil
	for range 2 {
		r = hs.do("POST", "/api/admin/refunds/"+late.OrderID, hs.admin, nil)
		if r.code != 200 || r.str("status") != "refunded" {
			t.Fatalf("refund: %d %s", r.code, r.raw)
		}
	}
	if len(ref.calls) != 1 || ref.calls[0] != "pay_late" {
		t.Fatalf("provider refunds %v, want one", ref.calls)
	}
	o, _ := l.OrderByPayment(ctx, sold)
	want(t, hs.do("POST", "/api/admin/refunds/"+o.OrderID, hs.admin, nil), 409, "not_refundable")
	want(t, hs.do("POST", "/api/admin/refunds/ord_nope", hs.admin, nil), 404, "order_not_found")
	r = hs.do("GET", "/api/admin/refunds", hs.admin, nil)
	if due, _ := r.body["refunds"].([]any); len(due) != 0 {
		t.Fatalf("refunds after: %s", r.raw)
	}
}

func TestAdminRestoreRebuildsFromTheLedger(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 4})
	pay(t, hs, l, "alice", "A3")
	want(t, hs.do("POST", "/api/admin/events/e1/restore", hs.admin, nil), 409, "event_exists")
	if err := redisDel(hs, "e1"); err != nil {
		t.Fatal(err)
	}
	r := hs.do("POST", "/api/admin/events/e1/restore", hs.admin, nil)
	if r.code != 200 || r.num("seats") != 4 || r.num("sold") != 1 {
		t.Fatalf("restore: %d %s", r.code, r.raw)
	}
	r = hs.do("GET", "/api/seats/available?event_id=e1", "", nil)
	if r.num("available") != 3 {
		t.Fatalf("seats after restore: %s", r.raw)
	}
	if evs := hs.rec.Topic(events.TopicEventRestored); len(evs) != 1 {
		t.Fatalf("event_restored %+v", evs)
	}
	want(t, hs.do("POST", "/api/admin/events/nope/restore", hs.admin, nil), 404, "event_not_found")
}

func TestJoinAndPositionDoNotTouchPostgres(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 1})
	l.Close() // PostgreSQL is gone
	alice, bob := hs.token("alice", ""), hs.token("bob", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "e1"}), 200, "")
	if r := hs.do("GET", "/api/booking/position?event_id=e1", bob, nil); r.code != 200 || r.str("status") != "queued" {
		t.Fatalf("position: %d %s", r.code, r.raw)
	}
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")
	// a payment id must be recorded before the provider hears of it
	want(t, hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "e1"}), 503, "unavailable")
	if len(hs.prov.calls) != 0 {
		t.Fatalf("the provider was called without the payment id in PostgreSQL: %+v", hs.prov.calls)
	}
	want(t, hs.do("GET", "/api/orders", alice, nil), 503, "unavailable")
}

// An order id PostgreSQL's text cannot hold (a NUL byte) is an unknown
// order, 404, not a failed statement answered 503 "retry".
func TestRefundOfAnImpossibleOrderID(t *testing.T) {
	hs, _, ref := ledgerHarness(t)
	for _, id := range []string{"a%00b", "%00", strings.Repeat("x", 200)} {
		want(t, hs.do("POST", "/api/admin/refunds/"+id, hs.admin, nil), http.StatusNotFound, "order_not_found")
	}
	if len(ref.calls) != 0 {
		t.Fatalf("refunds asked for: %v", ref.calls)
	}
}

// errBrokenPipe is a write the client no longer receives.
var errBrokenPipe = errors.New("write: broken pipe")

// cutWriter is a response whose writes fail after its first n bytes.
type cutWriter struct {
	n      int
	header http.Header
}

func (w *cutWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}
func (w *cutWriter) WriteHeader(int) {}
func (w *cutWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errBrokenPipe
	}
	w.n -= len(p)
	return len(p), nil
}

// The orders' CSV export checks its writes: a failed write is reported,
// and the handler aborts the answer (net/http closes the connection)
// rather than let a cut file pass for the whole.
func TestOrdersCSVWriteErrorAbortsTheAnswer(t *testing.T) {
	t.Parallel()
	orders := make([]ledger.Order, 100)
	for i := range orders {
		orders[i] = ledger.Order{OrderID: "ord_" + strings.Repeat("x", 40), EventID: "e1", Status: ledger.StatusCompleted}
	}
	if err := writeOrdersCSV(io.Discard, orders); err != nil {
		t.Fatalf("a working writer: %v", err)
	}
	for _, n := range []int{0, 10, 5000} {
		if err := writeOrdersCSV(&cutWriter{n: n}, orders); !errors.Is(err, errBrokenPipe) {
			t.Errorf("writes failing after %d bytes: %v, want %v", n, err, errBrokenPipe)
		}
	}

	hs, l, _ := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 4})
	pay(t, hs, l, "alice", "A1")
	req := httptest.NewRequest("GET", "/api/admin/events/e1/orders?format=csv", nil)
	req.Header.Set("Authorization", "Bearer "+hs.admin)
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", v)
		}
	}()
	hs.srv.Handler().ServeHTTP(&cutWriter{n: 20}, req)
	t.Fatal("the export answered as if the failed write had gone through")
}
