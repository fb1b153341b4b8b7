package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/admission/admissiontest"
	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// cancellations returns the cancelled outbox entries announced so far.
func cancellations(r *admissiontest.Recorder) []booking.OutboxEntry {
	var out []booking.OutboxEntry
	for _, e := range r.Announced() {
		if e.Kind == booking.KindCancelled {
			out = append(out, e)
		}
	}
	return out
}

type fakeProvider struct {
	mu    sync.Mutex
	calls []payment.Request
	fail  error
}

func (f *fakeProvider) Create(_ context.Context, r payment.Request) (payment.Payment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return payment.Payment{}, f.fail
	}
	f.calls = append(f.calls, r)
	return payment.Payment{PaymentID: r.PaymentID, URL: "http://sandbox.test/pay/" + r.PaymentID}, nil
}

// syncRelay announces what the gateway hands it at once (the background
// admission.Relay is tested in pkg/admission), keeping what failed.
type syncRelay struct {
	ann    *admission.Announcer
	mu     sync.Mutex
	failed []booking.OutboxEntry
}

func (r *syncRelay) Add(eventID string, entries ...booking.OutboxEntry) bool {
	if err := r.ann.Announce(context.Background(), eventID, entries); err != nil {
		r.mu.Lock()
		r.failed = append(r.failed, entries...)
		r.mu.Unlock()
	}
	return true
}

type harness struct {
	t     testing.TB
	relay *syncRelay
	srv   *Server
	h     http.Handler
	rec   *events.Recorder
	ann   *admissiontest.Recorder
	prov  *fakeProvider
	store *booking.Store
	admin string
}

const testSecret = "test-secret-0123456789abcdef"

func newHarness(t testing.TB, devTokens bool) *harness {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	a, err := auth.New([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	hs := &harness{t: t, rec: &events.Recorder{}, ann: &admissiontest.Recorder{}, prov: &fakeProvider{},
		store: booking.New(rdb, booking.WithPrefix(prefix))}
	// the relay's announcer publishes to the same recorder; joined entries
	// need no RabbitMQ publisher
	hs.relay = &syncRelay{ann: admission.New(hs.store, nil, hs.rec, nil)}
	hs.srv = &Server{Store: hs.store, Redis: rdb, Prefix: prefix, Announcer: hs.ann, Relay: hs.relay, Kafka: hs.rec,
		Provider: hs.prov, Auth: a, DevTokens: devTokens, PublicURL: "http://gw.test", TicketPrice: 100,
		SeatMapMaxAge: time.Nanosecond, EventListMaxAge: time.Nanosecond} // every read sees the last change (seatmap_test.go and events_snapshot_test.go test the caches)
	hs.srv.CodeKey = []byte("gateway test access code key")
	// the production handler: fast routes natively, the rest through gin
	fh := hs.srv.FastHandler()
	hs.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fastserver.ServeRequest(fh, w, r) })
	hs.admin = hs.token("root", auth.RoleAdmin)
	return hs
}

func (hs *harness) token(user, role string) string {
	tok, err := hs.srv.Auth.Issue(user, role, time.Hour)
	if err != nil {
		hs.t.Fatal(err)
	}
	return tok
}

type resp struct {
	code int
	body map[string]any
	raw  string
}

func (r resp) str(k string) string { s, _ := r.body[k].(string); return s }
func (r resp) num(k string) int64  { f, _ := r.body[k].(float64); return int64(f) }

// do sends a request; headers are name, value pairs.
func (hs *harness) do(method, path, token string, body any, headers ...string) resp {
	hs.t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, req)
	r := resp{code: w.Code, raw: w.Body.String()}
	_ = json.Unmarshal(w.Body.Bytes(), &r.body)
	if w.Code >= 400 {
		checkErrorFormat(hs.t, r, path)
	}
	return r
}

// checkErrorFormat asserts the project's JSON error format (with its code).
func checkErrorFormat(t testing.TB, r resp, path string) {
	t.Helper()
	for _, k := range []string{"error", "code", "message", "timestamp", "path"} {
		if r.str(k) == "" {
			t.Errorf("error body of %s lacks %q: %s", path, k, r.raw)
		}
	}
	if r.num("statusCode") != int64(r.code) {
		t.Errorf("statusCode %d != HTTP status %d: %s", r.num("statusCode"), r.code, r.raw)
	}
	if _, err := time.Parse(time.RFC3339Nano, r.str("timestamp")); err != nil {
		t.Errorf("timestamp %q not RFC 3339", r.str("timestamp"))
	}
	p, _, _ := strings.Cut(path, "?")
	if u, err := url.PathUnescape(p); err == nil {
		p = u // as the handler sees it
	}
	if r.str("path") != p {
		t.Errorf("path %q, want %q", r.str("path"), p)
	}
}

// createEvent creates an event with the no-orphan rule off unless body
// says otherwise: the tests pick seats by id (the rule has its own tests).
func (hs *harness) createEvent(body map[string]any) {
	hs.t.Helper()
	if _, ok := body["no_orphan_rule"]; !ok {
		body["no_orphan_rule"] = false
	}
	if r := hs.do("POST", "/api/admin/events", hs.admin, body); r.code != http.StatusCreated {
		hs.t.Fatalf("create event: %d %s", r.code, r.raw)
	}
}

func want(t testing.TB, r resp, code int, errCode string) {
	t.Helper()
	if r.code != code || (errCode != "" && r.str("code") != errCode) {
		t.Fatalf("got %d %s, want %d %s", r.code, r.raw, code, errCode)
	}
}

func TestJourney(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 2, "seats_per_row": 3, "capacity": 1, "hold_seconds": 60})
	alice, bob := hs.token("alice", ""), hs.token("bob", "")

	r := hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"})
	want(t, r, 200, "")
	if r.str("status") != "active" || r.num("sequence") != 1 || r.num("expire_time") == 0 {
		t.Fatalf("alice join: %s", r.raw)
	}
	if a := hs.ann.Announced(); len(a) != 2 || a[0].Kind != booking.KindJoined || a[1].Kind != booking.KindPromoted ||
		a[1].UserID != "alice" || a[1].RequestID == "" {
		t.Fatalf("immediate admission not announced: %+v", hs.ann.Announced())
	}
	r = hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "e1"})
	if r.code != 200 || r.str("status") != "queued" || r.num("position") != 1 || r.num("sequence") != 2 {
		t.Fatalf("bob join: %s", r.raw)
	}
	// Joining again: same position, nothing new announced.
	r = hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "e1", "user_id": "alice"})
	if r.num("position") != 1 || r.num("sequence") != 2 || len(hs.ann.Announced()) != 2 {
		t.Fatalf("repeat join: %s", r.raw)
	}
	// bob's queued join went through the relay, once (alice's was part of
	// her admission's announcement above)
	if evs := hs.rec.Topic(events.TopicBookingRequest); len(evs) != 1 || evs[0].UserID != "bob" || evs[0].Sequence != 2 {
		t.Fatalf("booking_request events: %+v", evs)
	}

	r = hs.do("GET", "/api/booking/position?event_id=e1", bob, nil)
	if r.str("status") != "queued" || r.str("state") != "waiting" || r.num("position") != 1 || r.num("served") != 1 {
		t.Fatalf("bob position: %s", r.raw)
	}
	if v, ok := r.body["eta_seconds"]; !ok {
		t.Fatalf("eta_seconds missing: %s", r.raw)
	} else if v != nil && r.num("eta_seconds") <= 0 {
		t.Fatalf("eta_seconds %v", v)
	}
	r = hs.do("GET", "/api/booking/position?event_id=e1", alice, nil)
	if r.str("status") != "active" || r.str("state") != "active" || r.num("expire_time") == 0 {
		t.Fatalf("alice position: %s", r.raw)
	}

	want(t, hs.do("POST", "/api/booking/select-seat", bob, map[string]any{"event_id": "e1", "seat_id": "A1"}), 403, "invalid_state")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "Z9"}), 404, "seat_not_found")
	want(t, hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "e1"}), 403, "invalid_state")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")

	r = hs.do("GET", "/api/seats/available?event_id=e1", "", nil)
	if r.code != 200 || r.num("available") != 5 || r.num("total") != 6 {
		t.Fatalf("seats: %s", r.raw)
	}

	r = hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "e1"})
	want(t, r, 200, "")
	pid := r.str("payment_id")
	if !strings.HasPrefix(pid, "pay_") || r.str("payment_url") != "http://sandbox.test/pay/"+pid {
		t.Fatalf("initiate: %s", r.raw)
	}
	// Retried initiate: the same payment.
	r = hs.do("POST", "/api/booking/payment/initiate", alice, map[string]any{"event_id": "e1"})
	if r.str("payment_id") != pid {
		t.Fatalf("second initiate gave %s, want %s", r.str("payment_id"), pid)
	}
	if c := hs.prov.calls[0]; c.SeatID != "A1" || c.UserID != "alice" || c.Amount != 100 || c.ReturnURL != "http://gw.test/?event_id=e1" {
		t.Fatalf("provider request %+v", c)
	}
	if evs := hs.rec.Topic(events.TopicPaymentInitiated); len(evs) == 0 || evs[0].PaymentID != pid || evs[0].SeatID != "A1" {
		t.Fatalf("payment_initiated: %+v", evs)
	}
	want(t, hs.do("POST", "/api/booking/cancel", alice, map[string]any{"event_id": "e1"}), 409, "cannot_cancel")

	// The webhook's work, done on the store: the seat is sold.
	if _, err := hs.store.PaymentSuccess(context.Background(), "e1", "alice", pid); err != nil {
		t.Fatal(err)
	}
	r = hs.do("GET", "/api/booking/position?event_id=e1", alice, nil)
	if r.str("status") != "completed" || r.str("seat_id") != "A1" {
		t.Fatalf("alice after payment: %s", r.raw)
	}
	r = hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"})
	if r.code != 200 || r.str("status") != "completed" {
		t.Fatalf("completed user joining again: %s", r.raw)
	}

	// Bob leaves the queue; a stranger has nothing to cancel.
	r = hs.do("POST", "/api/booking/cancel", bob, map[string]any{"event_id": "e1"})
	if r.code != 200 || r.str("from") != "queue" {
		t.Fatalf("bob cancel: %s", r.raw)
	}
	if len(hs.ann.Released()) != 0 {
		t.Fatalf("cancel from the queue released a slot: %v", hs.ann.Released())
	}
	r = hs.do("GET", "/api/booking/position?event_id=e1", bob, nil)
	if r.str("status") != "cancelled" {
		t.Fatalf("bob position after cancel: %s", r.raw)
	}
	r = hs.do("GET", "/api/booking/position?event_id=e1", hs.token("nobody", ""), nil)
	if r.code != 200 || r.str("status") != "not_found" {
		t.Fatalf("stranger position: %s", r.raw)
	}
	r = hs.do("GET", "/api/events/e1", "", nil)
	if r.code != 200 || r.body["counts"].(map[string]any)["sold"].(float64) != 1 {
		t.Fatalf("event: %s", r.raw)
	}
}

func TestCancelFromRoomReleasesSlot(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 2, "capacity": 1})
	carol := hs.token("carol", "")
	want(t, hs.do("POST", "/api/booking/request", carol, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", carol, map[string]any{"event_id": "e1", "seat_id": "A2"}), 200, "")
	hs.ann.Fail(errors.New("broker down"))
	want(t, hs.do("POST", "/api/booking/cancel", carol, map[string]any{"event_id": "e1"}), 503, "unavailable")
	hs.ann.Fail(nil)
	r := hs.do("GET", "/api/seats/available?event_id=e1", "", nil)
	if r.num("available") != 2 {
		t.Fatalf("seat not freed by cancel: %s", r.raw)
	}
	if got := cancellations(hs.ann); len(got) != 0 {
		t.Fatalf("announced despite the failure: %+v", got)
	}
	// The retry is idempotent and announces the same cancellation.
	r = hs.do("POST", "/api/booking/cancel", carol, map[string]any{"event_id": "e1"})
	want(t, r, 200, "")
	if r.str("from") != "active" || r.str("seat_id") != "A2" {
		t.Fatalf("retried cancel: %s", r.raw)
	}
	got := cancellations(hs.ann)
	if len(got) != 1 || got[0].UserID != "carol" || got[0].From != "active" || got[0].SeatID != "A2" {
		t.Fatalf("cancellation announced: %+v", got)
	}

	dave := hs.token("dave", "")
	want(t, hs.do("POST", "/api/booking/request", dave, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/cancel", dave, map[string]any{"event_id": "e1"}), 200, "")
	if got := cancellations(hs.ann); len(got) != 2 || got[1].UserID != "dave" || got[1].From != "active" {
		t.Fatalf("cancellations %+v", got)
	}
}

func TestErrorsAndAuth(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 2, "capacity": 1})
	past := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	hs.createEvent(map[string]any{"id": "later", "rows": 1, "seats_per_row": 1, "sales_start": past})
	user := hs.token("u1", "")
	expired, _ := hs.srv.Auth.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }).Issue("u1", "", time.Hour)
	other, _ := auth.New([]byte("some-other-secret-123456"))
	forged, _ := other.Issue("u1", auth.RoleAdmin, time.Hour)

	cases := []struct {
		name, method, path, token string
		body                      any
		code                      int
		errCode                   string
	}{
		{"no token", "POST", "/api/booking/request", "", `{"event_id":"e1"}`, 401, "unauthorized"},
		{"garbage token", "POST", "/api/booking/request", "x.y.z", `{"event_id":"e1"}`, 401, "unauthorized"},
		{"expired token", "GET", "/api/booking/position?event_id=e1", expired, nil, 401, "unauthorized"},
		{"forged admin", "POST", "/api/admin/events", forged, `{"id":"x","rows":1,"seats_per_row":1}`, 401, "unauthorized"},
		{"user on admin", "POST", "/api/admin/events", user, `{"id":"x","rows":1,"seats_per_row":1}`, 403, "forbidden"},
		{"user on admin patch", "PATCH", "/api/admin/events/e1", user, `{"paused":true}`, 403, "forbidden"},
		{"empty body", "POST", "/api/booking/request", user, "", 400, "invalid_body"},
		{"not json", "POST", "/api/booking/request", user, "event_id=e1", 400, "invalid_body"},
		{"wrong type", "POST", "/api/booking/request", user, `{"event_id":5}`, 400, "invalid_body"},
		{"array", "POST", "/api/booking/request", user, `[]`, 400, "invalid_body"},
		{"trailing", "POST", "/api/booking/request", user, `{"event_id":"e1"} {}`, 400, "invalid_body"},
		{"missing event", "POST", "/api/booking/request", user, `{}`, 400, "invalid_body"},
		{"bad event id", "POST", "/api/booking/request", user, `{"event_id":"a{b}"}`, 400, "invalid_body"},
		{"huge body", "POST", "/api/booking/request", user, `{"event_id":"` + strings.Repeat("a", 70000) + `"}`, 413, "invalid_body"},
		{"unknown event", "POST", "/api/booking/request", user, `{"event_id":"nope"}`, 404, "event_not_found"},
		{"before sales", "POST", "/api/booking/request", user, `{"event_id":"later"}`, 400, "sales_not_started"},
		{"position no event", "GET", "/api/booking/position", user, nil, 400, "invalid_argument"},
		{"position unknown event", "GET", "/api/booking/position?event_id=nope", user, nil, 404, "event_not_found"},
		{"seat missing", "POST", "/api/booking/select-seat", user, `{"event_id":"e1"}`, 400, "invalid_body"},
		{"select without joining", "POST", "/api/booking/select-seat", user, `{"event_id":"e1","seat_id":"A1"}`, 404, "booking_not_found"},
		{"cancel without joining", "POST", "/api/booking/cancel", user, `{"event_id":"e1"}`, 404, "booking_not_found"},
		{"initiate without joining", "POST", "/api/booking/payment/initiate", user, `{"event_id":"e1"}`, 404, "booking_not_found"},
		{"seats unknown event", "GET", "/api/seats/available?event_id=nope", "", nil, 404, "event_not_found"},
		{"event unknown", "GET", "/api/events/nope", "", nil, 404, "event_not_found"},
		{"popular bad limit", "GET", "/api/events/popular?limit=0", "", nil, 400, "invalid_argument"},
		{"create duplicate", "POST", "/api/admin/events", hs.admin, `{"id":"e1","rows":1,"seats_per_row":1}`, 409, "event_exists"},
		{"create no seats", "POST", "/api/admin/events", hs.admin, `{"id":"e2"}`, 400, "invalid_event"},
		{"create bad time", "POST", "/api/admin/events", hs.admin, `{"id":"e2","rows":1,"seats_per_row":1,"sales_start":"noon"}`, 400, "invalid_event"},
		{"create negative hold", "POST", "/api/admin/events", hs.admin, `{"id":"e2","rows":1,"seats_per_row":1,"hold_seconds":-1}`, 400, "invalid_event"},
		{"create too many seats", "POST", "/api/admin/events", hs.admin, `{"id":"e2","rows":100000,"seats_per_row":100000}`, 400, "invalid_event"},
		{"create end before start", "POST", "/api/admin/events", hs.admin, `{"id":"e2","rows":1,"seats_per_row":1,"sales_start":"2030-01-02T00:00:00Z","sales_end":"2030-01-01T00:00:00Z"}`, 400, "invalid_event"},
		{"patch unknown", "PATCH", "/api/admin/events/nope", hs.admin, `{"paused":true}`, 404, "event_not_found"},
		{"patch nothing", "PATCH", "/api/admin/events/e1", hs.admin, `{}`, 400, "invalid_argument"},
		{"patch negative capacity", "PATCH", "/api/admin/events/e1", hs.admin, `{"capacity":-1}`, 400, "invalid_argument"},
		{"unknown route", "GET", "/api/nope", "", nil, 404, "not_found"},
		{"wrong method", "GET", "/api/booking/request", user, nil, 405, "method_not_allowed"},
		{"dev token disabled", "POST", "/api/auth/dev-token", "", `{"user_id":"x"}`, 404, "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := hs.do(tc.method, tc.path, tc.token, tc.body)
			want(t, r, tc.code, tc.errCode)
		})
	}
}

// TestIdentityFromTokenOnly: a user cannot see or change another user's
// booking; ids in the body are ignored.
func TestIdentityFromTokenOnly(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 2, "capacity": 5})
	alice, mallory := hs.token("alice", ""), hs.token("mallory", "")
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")

	want(t, hs.do("POST", "/api/booking/cancel", mallory, map[string]any{"event_id": "e1", "user_id": "alice"}), 404, "booking_not_found")
	want(t, hs.do("POST", "/api/booking/payment/initiate", mallory, map[string]any{"event_id": "e1", "user_id": "alice"}), 404, "booking_not_found")
	r := hs.do("GET", "/api/booking/position?event_id=e1&user_id=alice", mallory, nil)
	if r.str("status") != "not_found" || r.str("seat_id") != "" {
		t.Fatalf("mallory sees %s", r.raw)
	}
	want(t, hs.do("POST", "/api/booking/request", mallory, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", mallory, map[string]any{"event_id": "e1", "seat_id": "A1"}), 409, "seat_unavailable")
	r = hs.do("GET", "/api/booking/position?event_id=e1", alice, nil)
	if r.str("state") != "seat_selected" || r.str("seat_id") != "A1" {
		t.Fatalf("alice's booking changed: %s", r.raw)
	}
}

func TestDevToken(t *testing.T) {
	hs := newHarness(t, true)
	r := hs.do("POST", "/api/auth/dev-token", "", map[string]any{"user_id": "dev1", "role": "admin"})
	want(t, r, 200, "")
	id, err := hs.srv.Auth.Verify(r.str("token"))
	if err != nil || id.UserID != "dev1" || !id.Admin() {
		t.Fatalf("dev token %v %v", id, err)
	}
	want(t, hs.do("POST", "/api/auth/dev-token", "", map[string]any{"user_id": "dev 1"}), 400, "invalid_body")
	want(t, hs.do("POST", "/api/auth/dev-token", "", map[string]any{"user_id": "dev1", "role": "root"}), 400, "invalid_body")
}

// TestKafkaOutage: a join does not wait for Kafka. With Kafka down it still
// answers 200 and its booking_request stays in the outbox, where the safety
// net's sweep finds and publishes it once Kafka is back. A payment
// initiation, which publishes inline, answers 503 while Kafka or the
// provider is down.
func TestKafkaOutage(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 2, "capacity": 1})
	u1, u2 := hs.token("u1", ""), hs.token("u2", "")
	hs.rec.FailWith(errors.New("kafka down"))
	want(t, hs.do("POST", "/api/booking/request", u1, map[string]any{"event_id": "e1"}), 200, "")
	r := hs.do("POST", "/api/booking/request", u2, map[string]any{"event_id": "e1"}, "X-Request-ID", "req-u2")
	want(t, r, 200, "")
	if r.str("status") != "queued" || len(hs.relay.failed) != 1 || hs.relay.failed[0].RequestID != "req-u2" {
		t.Fatalf("queued join during the outage: %s, relay failed %+v", r.raw, hs.relay.failed)
	}
	left, err := hs.store.Outbox(context.Background(), "e1", 0)
	if err != nil || len(left) != 3 { // u1 joined and admitted, u2 joined
		t.Fatalf("outbox during the outage: %+v %v", left, err)
	}
	want(t, hs.do("POST", "/api/booking/select-seat", u1, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/payment/initiate", u1, map[string]any{"event_id": "e1"}), 503, "unavailable")

	// Kafka back: what the sweep reads from the outbox is published (the
	// fake announcer of this harness never acks u1's promotion, so only the
	// joins are announced here)
	hs.rec.FailWith(nil)
	var joins []booking.OutboxEntry
	for _, e := range left {
		if e.Kind == booking.KindJoined {
			joins = append(joins, e)
		}
	}
	if err := hs.relay.ann.Announce(context.Background(), "e1", joins); err != nil {
		t.Fatal(err)
	}
	evs := hs.rec.Topic(events.TopicBookingRequest)
	if len(evs) != 2 || evs[0].UserID != "u1" || evs[0].Sequence != 1 || evs[1].UserID != "u2" || evs[1].Sequence != 2 {
		t.Fatalf("booking_request after the sweep: %+v", evs)
	}
	if left, _ := hs.store.Outbox(context.Background(), "e1", 0); len(left) != 1 || left[0].Kind != booking.KindPromoted {
		t.Fatalf("outbox after the sweep: %+v", left)
	}
	hs.prov.fail = errors.New("provider down")
	want(t, hs.do("POST", "/api/booking/payment/initiate", u1, map[string]any{"event_id": "e1"}), 503, "payment_provider_unavailable")
}

func TestAdminPatch(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 1, "hold_seconds": 30, "grace_seconds": 5})
	r := hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"paused": true})
	if r.code != 200 || r.body["paused"] != true {
		t.Fatalf("pause: %s", r.raw)
	}
	if len(hs.ann.Released()) != 0 {
		t.Fatal("pausing released a slot")
	}
	u := hs.token("u1", "")
	r = hs.do("POST", "/api/booking/request", u, map[string]any{"event_id": "e1"})
	if r.str("status") != "queued" {
		t.Fatalf("join while paused: %s", r.raw)
	}
	r = hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"paused": false, "capacity": 3, "hold_seconds": 45})
	if r.code != 200 || r.body["paused"] != false || r.num("capacity") != 3 || r.num("hold_seconds") != 45 {
		t.Fatalf("resume: %s", r.raw)
	}
	if rel := hs.ann.Released(); len(rel) != 1 || rel[0] != messages.ReasonCapacity {
		t.Fatalf("resume did not release: %v", rel)
	}
	r = hs.do("GET", "/api/events", "", nil)
	if evs, _ := r.body["events"].([]any); r.code != 200 || len(evs) != 1 {
		t.Fatalf("list: %s", r.raw)
	}
	want(t, hs.do("GET", "/api/events/popular", "", nil), 200, "")
}

// FuzzRequestBodies: no request body, on any endpoint, produces a 5xx.
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{`{"event_id":"e1"}`, `{"event_id":"e1","seat_id":"A1"}`, ``, `null`, `[]`, `{"event_id":null}`,
		`{"event_id":"` + "\x00" + `"}`, `{"id":"x","rows":1e9,"seats_per_row":1e9}`, `{"id":"f","rows":1,"seats_per_row":1,"hold_seconds":1e308}`,
		`{"paused":"yes"}`, `{"capacity":-5}`, `{"user_id":"a","role":"admin"}`, `{"event_id":"e1"}{"x":1}`, `"str"`, `{"seats":["A1","A1"],"id":"g"}`} {
		for i := range 6 {
			f.Add(i, s)
		}
	}
	hs := newHarness(f, true)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 3, "capacity": 2})
	user := hs.token("fuzz", "")
	routes := []struct{ method, path, token string }{
		{"POST", "/api/booking/request", user}, {"POST", "/api/booking/select-seat", user},
		{"POST", "/api/booking/payment/initiate", user}, {"POST", "/api/booking/cancel", user},
		{"POST", "/api/admin/events", hs.admin}, {"PATCH", "/api/admin/events/e1", hs.admin},
		{"POST", "/api/auth/dev-token", ""},
	}
	f.Fuzz(func(t *testing.T, route int, body string) {
		if route < 0 {
			route = -route
		}
		rt := routes[route%len(routes)]
		req := httptest.NewRequest(rt.method, rt.path, strings.NewReader(body))
		if rt.token != "" {
			req.Header.Set("Authorization", "Bearer "+rt.token)
		}
		w := httptest.NewRecorder()
		hs.h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", rt.method, rt.path, body, w.Code, w.Body)
		}
		if w.Code >= 400 && !strings.Contains(w.Body.String(), fmt.Sprintf(`"statusCode":%d`, w.Code)) {
			t.Fatalf("error not in the JSON format: %s", w.Body)
		}
	})
}

// A malformed event id gets the same answer from every entry point of its
// kind: in a path, 404 event_not_found (no event can have it); in a query
// or a body, a 400 stating the rule (invalid_argument for a query,
// invalid_body for a body, as for any bad field). "a~b" passes ids.Valid,
// not ids.ValidEvent.
func TestMalformedEventIDSameAnswerEverywhere(t *testing.T) {
	hs, _, _ := ledgerHarness(t) // the order and restore routes need the ledger
	user := hs.token("alice", "")
	const bad = "a~b"
	for _, path := range []string{"/api/events/" + bad, "/api/events/" + bad + "/challenge", "/api/events/" + bad + "/progress"} {
		want(t, hs.do("GET", path, user, nil), http.StatusNotFound, "event_not_found")
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/admin/events/" + bad}, {"PATCH", "/api/admin/events/" + bad}, {"GET", "/api/admin/events/" + bad + "/orders"},
		{"GET", "/api/admin/events/" + bad + "/report"}, {"POST", "/api/admin/events/" + bad + "/restore"},
	} {
		var body any
		if r.method == "PATCH" {
			body = map[string]any{"capacity": 2}
		}
		want(t, hs.do(r.method, r.path, hs.admin, body), http.StatusNotFound, "event_not_found")
	}
	for _, r := range []struct {
		method, path string
		body         any
		code         string
	}{
		{"POST", "/api/booking/request", map[string]any{"event_id": bad}, httpapi.CodeInvalidBody},
		{"GET", "/api/booking/position?event_id=" + bad, nil, httpapi.CodeInvalidArgument},
		{"GET", "/api/seats/available?event_id=" + bad, nil, httpapi.CodeInvalidArgument},
		{"POST", "/api/booking/select-seat", map[string]any{"event_id": bad, "seat_id": "A1"}, httpapi.CodeInvalidBody},
		{"POST", "/api/booking/payment/initiate", map[string]any{"event_id": bad}, httpapi.CodeInvalidBody},
		{"POST", "/api/booking/cancel", map[string]any{"event_id": bad}, httpapi.CodeInvalidBody},
	} {
		got := hs.do(r.method, r.path, user, r.body)
		want(t, got, http.StatusBadRequest, r.code)
		if !strings.Contains(got.str("message"), ids.EventRule) {
			t.Errorf("%s %s: message %q does not state the rule", r.method, r.path, got.str("message"))
		}
	}
}
