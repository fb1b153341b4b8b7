package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/admission/admissiontest"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

var secret = []byte("whsec-test-0123456789abcdef")

type harness struct {
	t     testing.TB
	wh    *Webhooks
	h     http.Handler
	store *booking.Store
	rec   *events.Recorder
	ann   *admissiontest.Recorder
	skew  atomic.Int64 // added to the store's clock, ns
}

func newHarness(t testing.TB) *harness {
	hs := &harness{t: t, rec: &events.Recorder{}, ann: &admissiontest.Recorder{}}
	hs.store = booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)), booking.WithClock(hs.now))
	hs.wh = &Webhooks{Store: hs.store, Announcer: hs.ann, Kafka: hs.rec, Secret: secret, Tolerance: 5 * time.Minute,
		Outcomes: NewOutcomes(nil)}
	hs.h = hs.wh.Handler()
	hs.createEvent()
	return hs
}

// now is the store's clock: the time plus skew.
func (hs *harness) now() time.Time { return time.Now().Add(time.Duration(hs.skew.Load())) }

// createEvent creates event e1: 4 seats, all in the room at once, a 10 s
// hold and 5 s of grace.
func (hs *harness) createEvent() {
	if _, err := hs.store.CreateEvent(context.Background(), booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 4,
		Capacity: 4, Hold: 10 * time.Second, Grace: 5 * time.Second}); err != nil {
		hs.t.Fatal(err)
	}
}

// pending brings user to payment_pending on seat and returns the payment
// id (pay_<user>).
func (hs *harness) pending(user, seat string) string { return hs.pendingAs(user, seat, "pay_"+user) }

// pendingAs is pending with the payment id pid.
func (hs *harness) pendingAs(user, seat, pid string) string {
	ctx := context.Background()
	if _, err := hs.store.Enqueue(ctx, "e1", user); err != nil {
		hs.t.Fatal(err)
	}
	if _, err := hs.store.LockSeat(ctx, "e1", user, seat); err != nil {
		hs.t.Fatal(err)
	}
	h, err := hs.store.InitiatePayment(ctx, "e1", user, pid)
	if err != nil {
		hs.t.Fatal(err)
	}
	return h.PaymentID
}

// expire moves the clock past the hold (10 s) and its grace (5 s) and runs
// user's timeout twice: the first gives a payment its grace, the second
// ends the hold.
func (hs *harness) expire(user string) { hs.expireIn("e1", user) }

// expireIn is expire for an event of the test's own.
func (hs *harness) expireIn(eventID, user string) {
	hs.skew.Store(int64(20 * time.Second))
	for range 2 {
		if _, err := hs.store.HandleTimeout(context.Background(), eventID, user); err != nil {
			hs.t.Fatal(err)
		}
	}
}

// loseRedis deletes every key of event e1, as a Redis that lost its data.
func (hs *harness) loseRedis() {
	if err := redistest.Client(hs.t).Del(context.Background(), booking.EventKeys(hs.store.Prefix(), "e1")...).Err(); err != nil {
		hs.t.Fatal(err)
	}
}

func (hs *harness) state(user string) booking.Status {
	st, err := hs.store.Position(context.Background(), "e1", user)
	if err != nil {
		hs.t.Fatal(err)
	}
	return st
}

type resp struct {
	code int
	body map[string]any
	raw  string
}

func (hs *harness) post(path, sig string, body []byte) resp {
	req := httptest.NewRequest("POST", path, strings.NewReader(string(body)))
	if sig != "" {
		req.Header.Set(payment.SignatureHeader, sig)
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, req)
	r := resp{code: w.Code, raw: w.Body.String()}
	_ = json.Unmarshal(w.Body.Bytes(), &r.body)
	if w.Code >= 400 && (r.body["code"] == nil || r.body["statusCode"] != float64(w.Code)) {
		hs.t.Errorf("error not in the JSON format: %s", r.raw)
	}
	return r
}

// body is a success webhook's body (status "success").
func body(user, seat, pid, reason string) []byte {
	b, _ := json.Marshal(payment.Webhook{UserID: user, EventID: "e1", SeatID: seat, PaymentID: pid,
		Status: payment.StatusSuccess, Reason: reason})
	return b
}

// failBody is a failure webhook's body (status "failure").
func failBody(user, seat, pid, reason string) []byte {
	b, _ := json.Marshal(payment.Webhook{UserID: user, EventID: "e1", SeatID: seat, PaymentID: pid,
		Status: payment.StatusFailure, Reason: reason})
	return b
}

// signed posts b signed at the harness's clock.
func (hs *harness) signed(path string, b []byte) resp {
	return hs.post(path, payment.Sign(secret, hs.now(), b), b)
}

func TestSuccessAndDuplicate(t *testing.T) {
	hs := newHarness(t)
	pid := hs.pending("alice", "A1")
	b := body("alice", "A1", pid, "")
	r := hs.signed(payment.PathSuccess, b)
	if r.code != 200 || r.body["outcome"] != "completed" || r.body["seat_id"] != "A1" {
		t.Fatalf("success: %d %s", r.code, r.raw)
	}
	if st := hs.state("alice"); st.State != booking.StateCompleted || st.SeatID != "A1" {
		t.Fatalf("state %+v", st)
	}
	done := hs.rec.Topic(events.TopicBookingCompleted)
	if len(done) != 1 || done[0].SeatID != "A1" || done[0].PaymentID != pid {
		t.Fatalf("booking_completed %+v", done)
	}
	if len(hs.ann.Released()) != 1 || hs.ann.Released()[0] != messages.ReasonPaymentSuccess ||
		len(hs.ann.Notified()) != 1 || hs.ann.Notified()[0].Type != messages.NotifyBookingCompleted {
		t.Fatalf("rabbit: %v %+v", hs.ann.Released(), hs.ann.Notified())
	}
	// The provider retries: 200, nothing changes, the same event id.
	r = hs.signed(payment.PathSuccess, b)
	if r.code != 200 || r.body["outcome"] != "duplicate" {
		t.Fatalf("duplicate: %d %s", r.code, r.raw)
	}
	again := hs.rec.Topic(events.TopicBookingCompleted)
	for _, e := range again {
		if e.ID != done[0].ID {
			t.Fatalf("duplicate published a different booking_completed: %+v", again)
		}
	}
	c, _ := hs.store.Counts(context.Background(), "e1")
	if c.Sold != 1 || c.Held != 0 {
		t.Fatalf("counts %+v", c)
	}
	// A failure webhook for a completed booking does not undo it.
	r = hs.signed(payment.PathFailure, failBody("alice", "A1", pid, "insufficient_funds"))
	if r.code != 409 || hs.state("alice").State != booking.StateCompleted {
		t.Fatalf("failure after success: %d %s", r.code, r.raw)
	}
}

func TestBadSignaturesChangeNothing(t *testing.T) {
	hs := newHarness(t)
	pid := hs.pending("bob", "A2")
	b := body("bob", "A2", pid, "")
	now := time.Now()
	tampered := body("bob", "A3", pid, "")
	cases := map[string]struct {
		sig  string
		body []byte
	}{
		"missing":         {"", b},
		"forged":          {payment.Sign([]byte("not-the-secret-xxxxxxx"), now, b), b},
		"replayed (old)":  {payment.Sign(secret, now.Add(-10*time.Minute), b), b},
		"future":          {payment.Sign(secret, now.Add(10*time.Minute), b), b},
		"tampered body":   {payment.Sign(secret, now, b), tampered},
		"malformed":       {"v1=abc,t=x", b},
		"signature only":  {"t=" + fmt.Sprint(now.Unix()), b},
		"empty v1":        {fmt.Sprintf("t=%d,v1=", now.Unix()), b},
		"other user's id": {payment.Sign(secret, now, b), body("mallory", "A2", pid, "")},
	}
	for name, tc := range cases {
		for _, path := range []string{payment.PathSuccess, payment.PathFailure} {
			r := hs.post(path, tc.sig, tc.body)
			if r.code != 401 || r.body["code"] != "invalid_signature" {
				t.Errorf("%s %s: %d %s", name, path, r.code, r.raw)
			}
		}
	}
	if st := hs.state("bob"); st.State != booking.StatePaymentPending || st.PaymentID != pid {
		t.Fatalf("state changed: %+v", st)
	}
	if len(hs.rec.Events()) != 0 || len(hs.ann.Released()) != 0 {
		t.Fatalf("published on a rejected webhook: %+v %v", hs.rec.Events(), hs.ann.Released())
	}
}

func TestFailure(t *testing.T) {
	hs := newHarness(t)
	pid := hs.pending("carol", "A3")
	r := hs.signed(payment.PathFailure, failBody("carol", "A3", pid, "insufficient_funds"))
	if r.code != 200 || r.body["outcome"] != "failed" {
		t.Fatalf("failure: %d %s", r.code, r.raw)
	}
	if st := hs.state("carol"); st.State != booking.StateFailed {
		t.Fatalf("state %+v", st)
	}
	f := hs.rec.Topic(events.TopicPaymentFailed)
	if len(f) != 1 || f[0].Reason != "insufficient_funds" || f[0].PaymentID != pid {
		t.Fatalf("payment_failed %+v", f)
	}
	if len(hs.ann.Released()) != 1 || hs.ann.Released()[0] != messages.ReasonPaymentFailure {
		t.Fatalf("released %v", hs.ann.Released())
	}
	c, _ := hs.store.Counts(context.Background(), "e1")
	if c.Held != 0 || c.Available != 4 {
		t.Fatalf("seat not released: %+v", c)
	}
	r = hs.signed(payment.PathFailure, failBody("carol", "A3", pid, ""))
	if r.code != 200 || r.body["outcome"] != "duplicate" {
		t.Fatalf("duplicate failure: %d %s", r.code, r.raw)
	}
	// A success after the failure is too late: refund.
	r = hs.signed(payment.PathSuccess, body("carol", "A3", pid, ""))
	if r.code != 200 || r.body["refund"] != true {
		t.Fatalf("success after failure: %d %s", r.code, r.raw)
	}
}

func TestMismatchAndUnknown(t *testing.T) {
	hs := newHarness(t)
	hs.pending("dave", "A4")
	cases := []struct {
		name string
		b    []byte
		code int
	}{
		{"wrong payment id", body("dave", "A4", "pay_other", ""), 409},
		{"unknown user", body("zed", "A4", "pay_zed", ""), 404},
		{"missing ids", []byte(`{"event_id":"e1"}`), 400},
		{"not json", []byte(`payment ok`), 400},
		{"bad id", body("a b", "A4", "p", ""), 400},
	}
	for _, tc := range cases {
		r := hs.signed(payment.PathSuccess, tc.b)
		if r.code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, r.code, r.raw, tc.code)
		}
	}
	b := []byte(`{"user_id":"dave","event_id":"nope","payment_id":"pay_dave","status":"success"}`)
	if r := hs.signed(payment.PathSuccess, b); r.code != 404 {
		t.Errorf("unknown event: %d %s", r.code, r.raw)
	}
	if st := hs.state("dave"); st.State != booking.StatePaymentPending {
		t.Fatalf("state changed: %+v", st)
	}
}

func TestLatePaymentIsRefunded(t *testing.T) {
	hs := newHarness(t)
	pid := hs.pending("erin", "A1")
	hs.expire("erin")
	if st := hs.state("erin"); st.State != booking.StateExpired {
		t.Fatalf("hold not expired: %+v", st)
	}
	r := hs.signed(payment.PathSuccess, body("erin", "A1", pid, ""))
	if r.code != 200 || r.body["outcome"] != "refund" {
		t.Fatalf("late: %d %s", r.code, r.raw)
	}
	late := hs.rec.Topic(events.TopicPaymentLate)
	if len(late) != 1 || late[0].PaymentID != pid || late[0].UserID != "erin" {
		t.Fatalf("payment_late %+v", late)
	}
	if n := len(hs.rec.Topic(events.TopicBookingCompleted)); n != 0 {
		t.Fatalf("late payment completed a booking (%d events)", n)
	}
	c, _ := hs.store.Counts(context.Background(), "e1")
	if c.Sold != 0 {
		t.Fatalf("late payment sold a seat: %+v", c)
	}
}

// TestPublishFailureIs5xx: the provider must retry until effects are out.
func TestPublishFailureIs5xx(t *testing.T) {
	hs := newHarness(t)
	pid := hs.pending("fay", "A2")
	b := body("fay", "A2", pid, "")
	hs.ann.Fail(errors.New("rabbit down"))
	if r := hs.signed(payment.PathSuccess, b); r.code != 503 {
		t.Fatalf("rabbit down: %d %s", r.code, r.raw)
	}
	hs.ann.Fail(nil)
	hs.rec.FailWith(errors.New("kafka down"))
	if r := hs.signed(payment.PathSuccess, b); r.code != 503 {
		t.Fatalf("kafka down: %d %s", r.code, r.raw)
	}
	hs.rec.FailWith(nil)
	if r := hs.signed(payment.PathSuccess, b); r.code != 200 {
		t.Fatalf("retry: %d %s", r.code, r.raw)
	}
	// Attempts that failed half-way may have written booking_completed
	// already: every copy carries the same id, so consumers count one.
	ids := map[string]bool{}
	for _, e := range hs.rec.Topic(events.TopicBookingCompleted) {
		ids[e.ID] = true
	}
	if len(ids) != 1 || len(hs.ann.Released()) != 1 {
		t.Fatalf("effects after retry: %+v %v", hs.rec.Events(), hs.ann.Released())
	}
}

// FuzzWebhookBodies: any body with a valid signature, or any header, never
// gives a 5xx.
func FuzzWebhookBodies(f *testing.F) {
	f.Add(true, `{"user_id":"u","event_id":"e1","payment_id":"p"}`, "")
	f.Add(true, `{"user_id":"u","event_id":"e1","payment_id":"p","reason":"x"}`, "")
	f.Add(false, `{}`, "t=1,v1=00")
	f.Add(true, `null`, "")
	f.Add(true, `{"user_id":"{x}","event_id":"e1","payment_id":"p"}`, "")
	f.Add(true, `{"user_id":1}`, "")
	f.Add(false, `{"user_id":"u"}`, "t=99999999999,v1=zz,v1=")
	hs := newHarness(f)
	hs.pending("fuzz", "A1")
	f.Fuzz(func(t *testing.T, success bool, b, header string) {
		path := payment.PathFailure
		if success {
			path = payment.PathSuccess
		}
		if header == "" {
			header = payment.Sign(secret, time.Now(), []byte(b))
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(b))
		req.Header.Set(payment.SignatureHeader, header)
		w := httptest.NewRecorder()
		hs.h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%q %q: %d %s", b, header, w.Code, w.Body)
		}
		if w.Code >= 400 && !strings.Contains(w.Body.String(), fmt.Sprintf(`"statusCode":%d`, w.Code)) {
			t.Fatalf("error not in the JSON format: %s", w.Body)
		}
	})
}

func TestOutcomesAreCounted(t *testing.T) {
	hs := newHarness(t)
	pid := hs.pending("alice", "A1")
	b := body("alice", "A1", pid, "")
	hs.signed(payment.PathSuccess, b)
	hs.signed(payment.PathSuccess, b)
	hs.post(payment.PathSuccess, "t=1,v1=00", b)
	hs.signed(payment.PathSuccess, []byte("{"))
	hs.signed(payment.PathFailure, failBody("alice", "A1", "pay_other", ""))
	for _, tc := range []struct {
		kind, outcome string
		want          float64
	}{
		{"success", "completed", 1}, {"success", "duplicate", 1}, {"success", "bad_signature", 1},
		{"success", "invalid_body", 1}, {"failure", "rejected", 1}, {"failure", "failed", 0},
	} {
		if got := testutil.ToFloat64(hs.wh.Outcomes.WithLabelValues(tc.kind, tc.outcome)); got != tc.want {
			t.Errorf("%s/%s = %v, want %v", tc.kind, tc.outcome, got, tc.want)
		}
	}
}

// TestRefusalsAreRecorded: a webhook answered with an error (a bad
// signature, a malformed body, a 4xx of the handler) is recorded where
// the console's errors panel reads it, with its message; an accepted one
// is not.
func TestRefusalsAreRecorded(t *testing.T) {
	hs := newHarness(t)
	ctx := context.Background()
	pid := hs.pending("alice", "A1")
	hs.signed(payment.PathSuccess, body("alice", "A1", pid, ""))
	if r, err := hs.store.WebhookRefusals(ctx); err != nil || r.Total != 0 {
		t.Fatalf("after an accepted webhook: %+v %v", r, err)
	}
	hs.post(payment.PathSuccess, "t=1,v1=00", body("alice", "A1", pid, ""))
	hs.signed(payment.PathSuccess, []byte("{"))
	hs.signed(payment.PathFailure, failBody("alice", "A1", "pay_other", ""))
	r, err := hs.store.WebhookRefusals(ctx)
	if err != nil || r.Total != 3 || r.ByOutcome["bad_signature"] != 1 || r.ByOutcome["invalid_body"] != 1 || r.ByOutcome["rejected"] != 1 {
		t.Fatalf("refusals: %+v %v", r, err)
	}
	if r.LastKind != "failure" || r.LastOutcome != "rejected" || r.LastStatus < 400 || r.LastStatus > 499 || r.LastError == "" || r.LastAt.IsZero() {
		t.Errorf("the last refusal: %+v", r)
	}
}
