package main

import (
	"cmp"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/boxoffice/boxoffice/pkg/payment"
)

var secret = []byte("whsec-sandbox-test-0123456789")

// receiver is a webhook endpoint that fails the first `fail` calls with
// failWith (503 when 0).
type receiver struct {
	mu       sync.Mutex
	fail     int
	failWith int
	hits     int
	calls    []payment.Webhook
	paths    []string
	bad      int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if payment.Verify(secret, r.Header.Get(payment.SignatureHeader), b, time.Now(), time.Minute) != nil {
		rc.bad++
		w.WriteHeader(401)
		return
	}
	rc.hits++
	if rc.fail > 0 {
		rc.fail--
		w.WriteHeader(cmp.Or(rc.failWith, 503))
		return
	}
	var wh payment.Webhook
	_ = json.Unmarshal(b, &wh)
	rc.calls = append(rc.calls, wh)
	rc.paths = append(rc.paths, r.URL.Path)
}

func (rc *receiver) got() ([]payment.Webhook, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]payment.Webhook(nil), rc.calls...), append([]string(nil), rc.paths...)
}

func setup(t *testing.T, fail int) (*Sandbox, http.Handler, *receiver) {
	rc := &receiver{fail: fail}
	hook := httptest.NewServer(rc)
	t.Cleanup(hook.Close)
	sb := New(Options{APIKey: "k", PublicURL: "http://sb.test", WebhookURL: hook.URL, Secret: secret,
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, RetryAttempts: 10})
	t.Cleanup(sb.Close)
	return sb, sb.Handler(), rc
}

func call(h http.Handler, method, path, key, body string, form url.Values) *httptest.ResponseRecorder {
	var rd io.Reader = strings.NewReader(body)
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	switch {
	case form != nil:
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	case body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

const createBody = `{"payment_id":"p1","amount":5000,"user_id":"u1","event_id":"e1","seat_id":"A1","return_url":"http://gw.test/?event_id=e1"}`

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 5s")
}

func TestPayDeliversWithRetries(t *testing.T) {
	sb, h, rc := setup(t, 3)
	if w := call(h, "POST", "/v1/payments", "", createBody, nil); w.Code != 401 {
		t.Fatalf("no key: %d", w.Code)
	}
	if w := call(h, "POST", "/v1/payments", "wrong", createBody, nil); w.Code != 401 {
		t.Fatalf("wrong key: %d", w.Code)
	}
	w := call(h, "POST", "/v1/payments", "k", createBody, nil)
	var p payment.Payment
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	if w.Code != 201 || p.URL != "http://sb.test/pay/p1" {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w := call(h, "POST", "/v1/payments", "k", createBody, nil); w.Code != 200 {
		t.Fatalf("idempotent create: %d %s", w.Code, w.Body)
	}
	if w := call(h, "POST", "/v1/payments", "k", strings.Replace(createBody, `"u1"`, `"u2"`, 1), nil); w.Code != 409 {
		t.Fatalf("id reuse: %d %s", w.Code, w.Body)
	}
	if w := call(h, "POST", "/v1/payments", "k", `{"payment_id":"p2","user_id":"u","event_id":"e","return_url":"javascript:alert(1)"}`, nil); w.Code != 400 {
		t.Fatalf("bad return url: %d %s", w.Code, w.Body)
	}
	w = call(h, "GET", "/pay/p1", "", "", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `action="/pay/p1/pay"`) || !strings.Contains(w.Body.String(), "insufficient_funds") {
		t.Fatalf("page: %d %s", w.Code, w.Body)
	}
	// Accessible: a language, and the decline reason's select labelled.
	for _, want := range []string{`<html lang="en">`, `<label for="reason">`, `<select id="reason" name="reason">`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("checkout page lacks %s", want)
		}
	}
	if w := call(h, "GET", "/favicon.svg", "", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), "<svg") {
		t.Errorf("favicon: %d", w.Code)
	}
	w = call(h, "POST", "/pay/p1/pay", "", "", url.Values{})
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "http://gw.test/?") ||
		!strings.Contains(w.Header().Get("Location"), "payment_status=paid") {
		t.Fatalf("pay: %d %v", w.Code, w.Header())
	}
	if w := call(h, "POST", "/pay/p1/pay", "", "", url.Values{}); w.Code != http.StatusSeeOther {
		t.Fatalf("pay again: %d", w.Code)
	}
	if w := call(h, "POST", "/pay/p1/decline", "", "", url.Values{}); w.Code != 409 {
		t.Fatalf("decline after pay: %d", w.Code)
	}
	waitFor(t, func() bool { c, _ := rc.got(); return len(c) == 1 })
	calls, paths := rc.got()
	if calls[0].PaymentID != "p1" || calls[0].SeatID != "A1" || paths[0] != payment.PathSuccess || calls[0].Status != payment.StatusSuccess {
		t.Fatalf("webhook %+v %v", calls, paths)
	}
	// the receiver has the call before the sandbox records its answer
	waitFor(t, func() bool { r, _ := sb.snapshot("p1"); return r.Delivered })
	r, _ := sb.snapshot("p1")
	if !r.Delivered || r.Attempts != 4 {
		t.Fatalf("delivery record %+v", r)
	}
	time.Sleep(50 * time.Millisecond)
	if c, _ := rc.got(); len(c) != 1 {
		t.Fatalf("delivered %d times", len(c))
	}
}

// A webhook answer that says the payment is unknown (404, 409) or the
// request is wrong (400, 401) is final: the receiver is asked once, the
// record keeps the answer, and only what may pass later (a 5xx, a 408 or
// a 429) is retried.
func TestFinalWebhookAnswersAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		status, attempts int
	}{{404, 1}, {409, 1}, {400, 1}, {401, 1}, {503, 3}, {429, 3}, {408, 3}} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			sb, h, rc := setup(t, 2)
			rc.failWith = tc.status
			call(h, "POST", "/v1/payments", "k", createBody, nil)
			if w := call(h, "POST", "/pay/p1/pay", "", "", url.Values{}); w.Code != http.StatusSeeOther {
				t.Fatalf("pay: %d", w.Code)
			}
			sb.wg.Wait() // the delivery has given up, or delivered
			r, _ := sb.snapshot("p1")
			rc.mu.Lock()
			hits := rc.hits
			rc.mu.Unlock()
			if r.Attempts != tc.attempts || hits != tc.attempts || r.Delivered != (tc.attempts == 3) {
				t.Fatalf("%d: %d attempts (%d received), delivered %v; want %d", tc.status, r.Attempts, hits, r.Delivered, tc.attempts)
			}
			if !r.Delivered && !strings.Contains(r.LastError, http.StatusText(tc.status)) {
				t.Fatalf("last error %q", r.LastError)
			}
		})
	}
}

func TestDecline(t *testing.T) {
	_, h, rc := setup(t, 0)
	call(h, "POST", "/v1/payments", "k", createBody, nil)
	if w := call(h, "POST", "/pay/p1/decline", "", "", url.Values{"reason": {"stolen"}}); w.Code != 400 {
		t.Fatalf("bad reason: %d", w.Code)
	}
	if w := call(h, "POST", "/pay/nope/decline", "", "", url.Values{}); w.Code != 404 {
		t.Fatalf("unknown: %d", w.Code)
	}
	if w := call(h, "POST", "/pay/p1/decline", "", "", url.Values{"reason": {"insufficient_funds"}}); w.Code != http.StatusSeeOther {
		t.Fatalf("decline: %d %s", w.Code, w.Body)
	}
	waitFor(t, func() bool { c, _ := rc.got(); return len(c) == 1 })
	calls, paths := rc.got()
	if calls[0].Reason != "insufficient_funds" || paths[0] != payment.PathFailure || calls[0].Status != payment.StatusFailure {
		t.Fatalf("webhook %+v %v", calls, paths)
	}
	if w := call(h, "GET", "/v1/payments/p1", "k", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), `"status":"declined"`) {
		t.Fatalf("get: %d %s", w.Code, w.Body)
	}
}

func TestFormatCents(t *testing.T) {
	for n, want := range map[int64]string{5000: "50.00", 1250: "12.50", 7: "0.07", 0: "0.00", -150: "-1.50"} {
		if got := formatCents(n); got != want {
			t.Errorf("formatCents(%d) = %q, want %q", n, got, want)
		}
	}
}

// A checkout page that fails to render is a 500 in the JSON error format,
// logged, never a 200 with half a page.
func TestCheckoutPageTemplateErrorIs500(t *testing.T) {
	failing := template.Must(template.New("pay").Parse(`<p>{{.Req.EventID}}</p>{{.Req.NoSuchField}}`))
	saved := pageTmpl
	pageTmpl = failing
	t.Cleanup(func() { pageTmpl = saved })

	core, logs := observer.New(zapcore.ErrorLevel)
	sb := New(Options{APIKey: "k", PublicURL: "http://sb.test", WebhookURL: "http://127.0.0.1:1", Secret: secret,
		RetryMin: time.Millisecond, RetryMax: time.Millisecond, RetryAttempts: 1, Log: zap.New(core)})
	t.Cleanup(sb.Close)
	h := sb.Handler()
	if w := call(h, "POST", "/v1/payments", "k", createBody, nil); w.Code != 201 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	w := call(h, "GET", "/pay/p1", "", "", nil)
	var e struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); w.Code != http.StatusInternalServerError || err != nil || e.Code != "internal" {
		t.Fatalf("page with a failing template: %d %q (%v), want 500 code internal", w.Code, w.Body, err)
	}
	if strings.Contains(w.Body.String(), "<p>") {
		t.Errorf("half a page sent: %s", w.Body)
	}
	if logs.FilterMessage("render checkout page").Len() != 1 {
		t.Errorf("error logs %v, want one render checkout page", logs.All())
	}
}
