package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/ratelimit"
)

// The contract test: every request and response of the journey and its
// error cases, through the gateway's production handler, is validated
// against docs/openapi.yaml (pkg/httpapi/contracttest). Requests of the
// error cases are invalid on purpose; only their responses are validated.

func TestOpenAPIContract(t *testing.T) {
	hs := newHarness(t, true)
	ct, bad := contractChecked(t, hs)
	user := hs.token("alice", "")
	bob := hs.token("bob", "")

	// the journey
	r := hs.do("POST", "/api/auth/dev-token", "", map[string]any{"user_id": "carol"})
	want(t, r, 200, "")
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 2, "seats_per_row": 3, "capacity": 1,
		"hold_seconds": 60, "sales_end": "2099-01-01T00:00:00Z"})
	hs.createEvent(map[string]any{"id": "mixed", "seats": []string{"A1", "VIP-1"}})
	want(t, hs.do("GET", "/api/events", "", nil), 200, "")
	want(t, hs.do("GET", "/api/events?limit=1", "", nil), 200, "") // a page with next
	want(t, hs.do("GET", "/api/events?limit=1&after=e1", "", nil), 200, "")
	want(t, hs.do("GET", "/api/events/e1", "", nil), 200, "")
	want(t, hs.do("GET", "/api/events/popular?limit=5", "", nil), 200, "")
	// the snapshots gzip-compressed, and their revalidation
	for _, path := range []string{"/api/events", "/api/events?limit=1&after=e1", "/api/events/popular", "/api/seats/available?event_id=e1", "/api/events/e1/progress"} {
		want(t, hs.do("GET", path, "", nil, "Accept-Encoding", "gzip"), 200, "")
		w := hs.raw("GET", path, map[string]string{"Accept-Encoding": "gzip"})
		want(t, hs.do("GET", path, "", nil, "If-None-Match", w.Header().Get("ETag"), "Accept-Encoding", "gzip"), 304, "")
	}
	bad("POST", "/api/events", hs.admin, `{}`, 405, "method_not_allowed")
	want(t, hs.do("GET", "/api/admin/events/e1", hs.admin, nil), 200, "")
	want(t, hs.do("GET", "/api/seats/available?event_id=e1", "", nil), 200, "")
	want(t, hs.do("GET", "/api/seats/available?event_id=mixed", "", nil), 200, "")
	want(t, hs.do("POST", "/api/booking/request", user, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/request", user, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("GET", "/api/booking/position?event_id=e1", user, nil), 200, "")
	want(t, hs.do("GET", "/api/booking/position?event_id=e1", bob, nil), 200, "")
	want(t, hs.do("GET", "/api/booking/position?event_id=mixed", bob, nil), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", user, map[string]any{"event_id": "e1", "seat_id": "A2"}), 200, "")
	w := hs.raw("GET", "/api/seats/available?event_id=e1", nil)
	want(t, hs.do("GET", "/api/seats/available?event_id=e1", "", nil, "If-None-Match", w.Header().Get("ETag")), 304, "")
	want(t, hs.do("POST", "/api/booking/payment/initiate", user, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/payment/initiate", user, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"capacity": 2, "batch_size": 10}), 200, "")
	want(t, hs.do("POST", "/api/booking/cancel", bob, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/cancel", bob, map[string]any{"event_id": "e1"}), 200, "")

	// priced sections, several seats, the 409 naming the taken ones
	hs.createEvent(map[string]any{"id": "tour", "currency": "USD", "max_seats_per_order": 3, "capacity": 5,
		"sections": []map[string]any{{"name": "Floor", "rows": 1, "seats_per_row": 4, "price_cents": 5000},
			{"name": "Boxes", "seats": []string{"X1", "X2"}, "price_cents": 9000}}})
	want(t, hs.do("GET", "/api/events/tour", "", nil), 200, "")
	want(t, hs.do("GET", "/api/seats/available?event_id=tour", "", nil), 200, "")
	want(t, hs.do("POST", "/api/booking/request", user, map[string]any{"event_id": "tour"}), 200, "")
	want(t, hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "tour"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", user, map[string]any{"event_id": "tour", "seat_ids": []string{"A1", "X1"}}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{"A2", "X1"}}), 409, "seat_unavailable")
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "tour", "seat_ids": []string{"A2", "A3", "A4", "X2"}}), 400, "too_many_seats")
	want(t, hs.do("GET", "/api/booking/position?event_id=tour", user, nil), 200, "")
	want(t, hs.do("POST", "/api/booking/payment/initiate", user, map[string]any{"event_id": "tour"}), 200, "")

	// the error cases
	want(t, hs.do("POST", "/api/booking/cancel", user, map[string]any{"event_id": "e1"}), 409, "cannot_cancel")
	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "e1", "seat_id": "A1"}), 403, "invalid_state")
	want(t, hs.do("POST", "/api/booking/request", user, map[string]any{"event_id": "nope"}), 404, "event_not_found")
	want(t, hs.do("GET", "/api/events/nope", "", nil), 404, "event_not_found")
	want(t, hs.do("GET", "/api/seats/available?event_id=nope", "", nil), 404, "event_not_found")
	want(t, hs.do("POST", "/api/admin/events", hs.admin, map[string]any{"id": "e1", "rows": 1, "seats_per_row": 1}), 409, "event_exists")
	bad("GET", "/api/booking/position?event_id=e1", "", nil, 401, "unauthorized")
	bad("POST", "/api/booking/request", "", map[string]any{"event_id": "e1"}, 401, "unauthorized")
	bad("POST", "/api/booking/select-seat", "", map[string]any{"event_id": "e1", "seat_id": "A1"}, 401, "unauthorized")
	bad("POST", "/api/booking/payment/initiate", "", map[string]any{"event_id": "e1"}, 401, "unauthorized")
	bad("POST", "/api/booking/cancel", "", map[string]any{"event_id": "e1"}, 401, "unauthorized")
	bad("POST", "/api/admin/events", user, map[string]any{"id": "x", "rows": 1, "seats_per_row": 1}, 403, "forbidden")
	bad("PATCH", "/api/admin/events/e1", user, map[string]any{"paused": true}, 403, "forbidden")
	bad("GET", "/api/admin/events/e1", "", nil, 401, "unauthorized")
	bad("POST", "/api/booking/request", user, `[]`, 400, "invalid_body")
	bad("POST", "/api/booking/request", user, `{"event_id":"`+strings.Repeat("a", 65)+`"}`, 400, "invalid_body")
	bad("POST", "/api/booking/cancel", user, `{}`, 400, "invalid_body")
	bad("POST", "/api/booking/select-seat", user, `{"event_id":"e1"}`, 400, "invalid_body")
	bad("POST", "/api/booking/payment/initiate", user, `null`, 400, "invalid_body")
	bad("GET", "/api/booking/position", user, nil, 400, "invalid_argument")
	bad("GET", "/api/seats/available", "", nil, 400, "invalid_argument")
	bad("GET", "/api/events/popular?limit=0", "", nil, 400, "invalid_argument")
	bad("GET", "/api/events?limit=101", "", nil, 400, "invalid_argument")
	bad("POST", "/api/admin/events", hs.admin, `{"id":"x"}`, 400, "invalid_event")
	bad("PATCH", "/api/admin/events/e1", hs.admin, `{}`, 400, "invalid_argument")
	bad("PATCH", "/api/admin/events/nope", hs.admin, `{"paused":true}`, 404, "event_not_found")
	bad("POST", "/api/auth/dev-token", "", `{"user_id":""}`, 400, "invalid_body")
	bad("POST", "/api/booking/request", user, `{"event_id":"e1","pad":"`+strings.Repeat("x", 70<<10)+`"}`, 413, "invalid_body")
	bad("POST", "/api/admin/events/e1", hs.admin, `{}`, 405, "method_not_allowed")
	bad("DELETE", "/api/booking/request", user, nil, 405, "method_not_allowed")

	// the front door: the pass and its keys, the rate cap, a 429
	keys := passKeys(t, "k2", "k1")
	hs.srv.PassKeys, hs.srv.Pass = keys, pass.NewSigner(keys, "boxoffice")
	want(t, hs.do("GET", "/.well-known/jwks.json", "", nil), 200, "")
	hs.createEvent(map[string]any{"id": "capped", "rows": 1, "seats_per_row": 2, "capacity": 1, "admit_per_minute": 5})
	want(t, hs.do("PATCH", "/api/admin/events/capped", hs.admin, map[string]any{"admit_per_minute": 6}), 200, "")
	carol := hs.token("carol", "")
	if r := hs.do("POST", "/api/booking/request", carol, map[string]any{"event_id": "capped"}); r.str("pass") == "" {
		t.Fatalf("admitted without a pass: %s", r.raw)
	}
	if r := hs.do("GET", "/api/booking/position?event_id=capped", carol, nil); r.str("pass") == "" {
		t.Fatalf("position without a pass: %s", r.raw)
	}
	hs.srv.Limits = ratelimit.Config{RequestsPerSecondPerUser: 1}
	limited := false
	for range 20 {
		if hs.do("GET", "/api/booking/position?event_id=capped", carol, nil).code == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("no 429 at 1 request/s")
	}
	hs.srv.Limits = ratelimit.Config{}
	start := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	hs.createEvent(map[string]any{"id": "pq", "rows": 1, "seats_per_row": 2, "sales_start": start, "early_join_seconds": 7200})
	if r := hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "pq"}); r.str("status") != "prequeued" || r.str("sales_start") == "" || r.body["receipt"] != nil {
		t.Fatalf("pre-queued join: %s", r.raw)
	}
	if r := hs.do("GET", "/api/booking/position?event_id=pq", bob, nil); r.str("status") != "prequeued" || r.num("position") != 0 {
		t.Fatalf("pre-queued position: %s", r.raw)
	}
	if r := hs.do("GET", "/api/events/pq", "", nil); len(r.str("draw_commit")) != 64 || r.str("draw_seed") != "" || r.num("prequeued") != 1 {
		t.Fatalf("event before its draw: %s", r.raw)
	}
	// the join receipt of a queued join and the progress document
	if r := hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "capped"}); r.body["receipt"] == nil {
		t.Fatalf("queued join without a receipt: %s", r.raw)
	}
	want(t, hs.do("GET", "/api/events/capped/progress", "", nil), 200, "")
	want(t, hs.do("GET", "/api/events/pq/progress", "", nil), 200, "")
	w = hs.raw("GET", "/api/events/capped/progress", nil)
	want(t, hs.do("GET", "/api/events/capped/progress", "", nil, "If-None-Match", w.Header().Get("ETag")), 304, "")
	want(t, hs.do("GET", "/api/events/nope/progress", "", nil), 404, "event_not_found")
	// the fairness record (fairness_handlers.go): the draw and the log
	want(t, hs.do("GET", "/api/events/pq/draw", "", nil), 200, "")
	want(t, hs.do("GET", "/api/events/e1/draw?page=0", "", nil), 200, "")
	want(t, hs.do("GET", "/api/events/nope/draw", "", nil), 404, "event_not_found")
	bad("GET", "/api/events/pq/draw?page=x", "", nil, 400, "invalid_argument")
	if r := hs.do("GET", "/api/events/e1/admissions", "", nil); r.code != 200 || r.num("size") < 1 {
		t.Fatalf("admission log: %s", r.raw)
	}
	want(t, hs.do("GET", "/api/events/e1/admissions?after=1", "", nil), 200, "")
	want(t, hs.do("GET", "/api/events/nope/admissions", "", nil), 404, "event_not_found")
	bad("GET", "/api/events/e1/admissions?after=-1", "", nil, 400, "invalid_argument")
	bad("GET", "/api/events/e1/admissions?after=1e3", "", nil, 400, "invalid_argument")
	// the join challenge (challenge.go) and the patchable pre-queue
	hs.srv.Challenger = NewChallenger([]byte("contract-challenge-key"), 500, time.Minute, hs.srv.Redis, hs.srv.Prefix)
	hs.createEvent(map[string]any{"id": "guarded", "rows": 1, "seats_per_row": 2, "challenge": "pow"})
	want(t, hs.do("GET", "/api/events/guarded", "", nil), 200, "")
	want(t, hs.do("POST", "/api/booking/request", carol, map[string]any{"event_id": "guarded"}), 403, CodeChallengeRequired)
	solved := solveAltcha(t, hs.fetchChallenge(t, "guarded"))
	want(t, hs.do("POST", "/api/booking/request", carol, map[string]any{"event_id": "guarded"}, altchaHeader, solved), 200, "")
	want(t, hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "guarded"}, altchaHeader, solved), 403, CodeChallengeFailed)
	want(t, hs.do("GET", "/api/events/nope/challenge", "", nil), 404, "event_not_found")
	want(t, hs.do("PATCH", "/api/admin/events/guarded", hs.admin, map[string]any{"challenge": "none", "early_join_seconds": 60}), 200, "")
	bad("PATCH", "/api/admin/events/guarded", hs.admin, `{"challenge":"captcha"}`, 400, "invalid_argument")
	// a payment provider outage declared and ended (provider.go)
	want(t, hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": true}), 200, "")
	want(t, hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": true}), 200, "")
	want(t, hs.do("GET", "/api/events/e1/progress", "", nil), 200, "")
	want(t, hs.do("GET", "/api/admin/events/e1", hs.admin, nil), 200, "")
	want(t, hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": false}), 200, "")
	bad("PUT", "/api/admin/provider", hs.admin, `{}`, 400, "invalid_argument")
	bad("PUT", "/api/admin/provider", hs.admin, `{"degraded":1}`, 400, "invalid_body")
	// best available and the no-orphan rule (best_available.go)
	hs.createEvent(map[string]any{"id": "best", "max_seats_per_order": 3, "capacity": 5, "no_orphan_rule": true,
		"sections": []map[string]any{{"name": "Floor", "rows": 1, "seats_per_row": 5, "price_cents": 5000}}})
	dave, erin, frank := hs.token("dave", ""), hs.token("erin", ""), hs.token("frank", "")
	for _, u := range []string{dave, erin, frank} {
		want(t, hs.do("POST", "/api/booking/request", u, map[string]any{"event_id": "best"}), 200, "")
	}
	if r := hs.do("POST", "/api/booking/select-best", dave, map[string]any{"event_id": "best", "count": 2}); r.code != 200 || !strings.Contains(r.raw, `["A1","A2"]`) {
		t.Fatalf("best 2: %s", r.raw)
	}
	if r := hs.do("POST", "/api/booking/select-seat", erin, map[string]any{"event_id": "best", "seat_id": "A4"}); r.code != 409 || r.str("code") != "orphan_seat" || !strings.Contains(r.raw, `"suggested_seat_ids":["A3"]`) {
		t.Fatalf("an orphaning choice: %s", r.raw)
	}
	want(t, hs.do("POST", "/api/booking/select-best", erin, map[string]any{"event_id": "best", "count": 3, "section": "Floor"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-best", frank, map[string]any{"event_id": "best", "count": 1}), 409, "no_adjacent_seats")
	want(t, hs.do("POST", "/api/booking/select-best", frank, map[string]any{"event_id": "best", "count": 1, "section": "Balcony"}), 404, "section_not_found")
	want(t, hs.do("POST", "/api/booking/select-best", frank, map[string]any{"event_id": "best", "count": 4}), 400, "too_many_seats")
	want(t, hs.do("POST", "/api/booking/select-best", frank, map[string]any{"event_id": "nope", "count": 1}), 404, "event_not_found")
	want(t, hs.do("POST", "/api/booking/select-best", bob, map[string]any{"event_id": "best", "count": 1}), 404, "booking_not_found")
	bad("POST", "/api/booking/select-best", frank, `{"event_id":"best","count":0}`, 400, "invalid_body")
	bad("POST", "/api/booking/select-best", frank, `{"event_id":"best"}`, 400, "invalid_body")
	bad("POST", "/api/booking/select-best", frank, `{"event_id":"best","count":11}`, 400, "invalid_body")
	bad("POST", "/api/booking/select-best", frank, `{"event_id":"best","count":"2"}`, 400, "invalid_body")
	bad("POST", "/api/booking/select-best", "", map[string]any{"event_id": "best", "count": 1}, 401, "unauthorized")
	want(t, hs.do("PATCH", "/api/admin/events/best", hs.admin, map[string]any{"no_orphan_rule": false}), 200, "")
	ct.Report()
}

// Which service serves an operation: the root servers are the gateway's,
// and every operation of payment-webhook and payment-sandbox names its own.
func TestOpenAPIServers(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile(contracttest.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 1 || !strings.HasSuffix(doc.Servers[0].URL, ":8080") {
		t.Fatalf("root servers %v: want the gateway's only", doc.Servers)
	}
	for path, item := range doc.Paths.Map() {
		other := strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/pay/") || strings.HasPrefix(path, "/api/booking/payment/s") || strings.HasPrefix(path, "/api/booking/payment/f")
		for method, op := range item.Operations() {
			if other && (op.Servers == nil || len(*op.Servers) == 0) {
				t.Errorf("%s %s is not the gateway's but names no servers", method, path)
			}
		}
	}
}

// Every admin body docs/openapi.yaml refuses, the gateway refuses too,
// before anything is written (the ledger, with its int4 columns and text
// without NUL, comes first): 400 naming the field (invalid_body when the
// JSON does not fit the field's type, invalid_event or invalid_argument
// when its value is out of bounds), 415 for a body not sent as
// application/json. The refusals are made from the document's own
// schemas (contracttest.Refusals), and every numeric setting at a
// documented bound is taken.
func TestAdminBodiesTheDocumentRefuses(t *testing.T) {
	hs, l, _ := ledgerHarness(t)
	ct := contracttest.Load(t)
	hs.h = ct.Wrap(hs.h, nil)
	hs.createEvent(map[string]any{"id": "live", "rows": 1, "seats_per_row": 2})
	before := hs.do("GET", "/api/admin/events/live", hs.admin, nil)
	n := 0
	id := func() string { n++; return fmt.Sprintf("neg%d", n) }
	rows := func() map[string]any {
		return map[string]any{"id": id(), "name": "Show", "rows": 1, "seats_per_row": 2, "capacity": 5, "hold_seconds": 60}
	}
	sections := func() map[string]any {
		return map[string]any{"id": id(), "currency": "EUR", "sections": []any{
			map[string]any{"name": "Floor", "rows": 1, "seats_per_row": 2, "price_cents": 100}}}
	}
	patch := func() map[string]any { return map[string]any{"paused": false} }
	send := func(method, path string, body []byte, contentType string) resp {
		t.Helper()
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		req.Header.Set("Authorization", "Bearer "+hs.admin)
		w := httptest.NewRecorder()
		hs.h.ServeHTTP(w, req)
		r := resp{code: w.Code, raw: w.Body.String()}
		_ = json.Unmarshal(w.Body.Bytes(), &r.body)
		return r
	}
	ctx := context.Background()
	sent := 0
	for _, op := range []struct {
		method, path string
		valid        func() map[string]any
	}{{"POST", "/api/admin/events", rows}, {"POST", "/api/admin/events", sections}, {"PATCH", "/api/admin/events/live", patch}} {
		for _, rf := range ct.Refusals(op.method, op.path, op.valid) {
			sent++
			r := send(op.method, op.path, rf.Body, rf.ContentType)
			status := http.StatusBadRequest
			if rf.Field == "" {
				status = http.StatusUnsupportedMediaType
			}
			if r.code != status || (rf.Field != "" && !strings.Contains(r.str("message"), rf.Leaf())) {
				t.Errorf("%s %s %s: %d %s; want %d naming %q", op.method, op.path, rf.Name, r.code, r.raw, status, rf.Leaf())
				continue
			}
			var body struct{ ID any }
			if json.Unmarshal(rf.Body, &body) == nil && op.method == "POST" {
				if id, ok := body.ID.(string); ok && ids.ValidEvent(id) {
					if _, err := l.Event(ctx, id); !errors.Is(err, ledger.ErrEventNotFound) {
						t.Errorf("%s: refused, yet the ledger has %q (%v)", rf.Name, id, err)
					}
				}
			}
		}
	}
	t.Logf("%d refused bodies sent", sent)
	if d, err := l.Event(ctx, "live"); err != nil || d.Revision != 0 {
		t.Fatalf("refused patches changed the event: revision %d, %v", d.Revision, err)
	}
	if after := hs.do("GET", "/api/admin/events/live", hs.admin, nil); after.raw != before.raw {
		t.Fatalf("refused patches changed the event:\n%s\n%s", before.raw, after.raw)
	}
	// what the document allows at its bounds is taken (a 200,000-seat map
	// is left to TestEventSettingBounds)
	for _, b := range ct.Bounds("POST", "/api/admin/events", rows, "rows", "seats_per_row") {
		if r := send("POST", "/api/admin/events", b.Body, "application/json"); r.code != http.StatusCreated {
			t.Errorf("create with %s: %d %s", b.Name, r.code, r.raw)
		}
	}
	for _, b := range ct.Bounds("PATCH", "/api/admin/events/live", patch) {
		if r := send("PATCH", "/api/admin/events/live", b.Body, "application/json"); r.code != http.StatusOK {
			t.Errorf("patch with %s: %d %s", b.Name, r.code, r.raw)
		}
	}
	ct.Report()
}

// TestOrderCancelOpenAPIContract: cancelling sold tickets and the orders
// that show it, with their error cases and every body the document
// refuses, against docs/openapi.yaml; refused requests change nothing.
func TestOrderCancelOpenAPIContract(t *testing.T) {
	t.Parallel()
	hs, l, ref := ledgerHarness(t)
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2, "max_seats_per_order": 3})
	o := payMany(t, hs, l, "e1", "alice", "A1", "A2", "A3")
	alice := hs.token("alice", "")
	path := "/api/admin/orders/" + o.OrderID + "/cancel"

	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "double charge", "seat_ids": []string{"A2"}}), 200, "")
	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "double charge", "seat_ids": []string{"A2"}}), 200, "")
	want(t, hs.do("GET", "/api/orders", alice, nil), 200, "")
	want(t, hs.do("GET", "/api/orders/"+o.OrderID, alice, nil), 200, "")
	want(t, hs.do("GET", "/api/admin/events/e1/orders", hs.admin, nil), 200, "")
	want(t, hs.do("GET", "/api/seats/available?event_id=e1", "", nil), 200, "")

	// the error cases: nothing changes
	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "x", "seat_ids": []string{"A1", "A2"}}), 409, "seat_already_cancelled")
	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "x", "seat_ids": []string{"B9"}}), 400, "seat_not_in_order")
	want(t, hs.do("POST", "/api/admin/orders/ord_nope/cancel", hs.admin, map[string]any{"reason": "x"}), 404, "order_not_found")
	bad("POST", path, alice, map[string]any{"reason": "x"}, 403, "forbidden")
	bad("POST", path, "", map[string]any{"reason": "x"}, 401, "unauthorized")
	bad("POST", path, hs.admin, map[string]any{}, 400, "invalid_body")
	bad("POST", path, hs.admin, `{"reason":`, 400, "invalid_body")
	ct.refusals("POST", path, hs.admin, func() map[string]any { return map[string]any{"reason": "x", "seat_ids": []string{"A1"}} })
	if got := seatRow(t, hs, "e1"); got != "sasa" {
		t.Fatalf("refused requests changed the seats: %s", got)
	}
	if made := ref.made(); len(made) != 1 {
		t.Fatalf("refunds %v", made)
	}
	want(t, hs.do("POST", path, hs.admin, map[string]any{"reason": "show cancelled"}), 200, "")
	want(t, hs.do("POST", "/api/admin/refunds/"+o.OrderID, hs.admin, nil), 409, "not_refundable")
	want(t, hs.do("GET", "/api/orders", alice, nil), 200, "")
	ct.Report()
}

// A new event has the no-orphan rule unless its definition turns it off:
// a fan's choice that leaves one seat alone at a row's end is refused on
// the default event and taken on one created with the rule off.
func TestNoOrphanRuleOnByDefault(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, false)
	for _, ev := range []struct {
		id   string
		body string
		want int
	}{
		{"dflt", `{"id":"dflt","rows":1,"seats_per_row":4,"capacity":2}`, 409},
		{"off", `{"id":"off","rows":1,"seats_per_row":4,"capacity":2,"no_orphan_rule":false}`, 200},
	} {
		want(t, hs.do("POST", "/api/admin/events", hs.admin, json.RawMessage(ev.body)), 201, "")
		r := hs.do("GET", "/api/admin/events/"+ev.id, hs.admin, nil)
		if on, _ := r.body["no_orphan_rule"].(bool); on != (ev.want == 409) {
			t.Fatalf("%s: no_orphan_rule %v in %s", ev.id, r.body["no_orphan_rule"], r.raw)
		}
		fan := hs.token("fan-"+ev.id, "")
		want(t, hs.do("POST", "/api/booking/request", fan, map[string]any{"event_id": ev.id}), 200, "")
		r = hs.do("POST", "/api/booking/select-seat", fan, map[string]any{"event_id": ev.id, "seat_id": "A2"})
		if r.code != ev.want || (ev.want == 409 && (r.str("code") != "orphan_seat" || !strings.Contains(r.raw, `"seat_ids":["A1"]`))) {
			t.Fatalf("%s: A2 of a row of 4: %d %s", ev.id, r.code, r.raw)
		}
	}
}
