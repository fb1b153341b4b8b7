package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Payment statuses.
const (
	StatusPending  = "pending"
	StatusPaid     = "paid"
	StatusDeclined = "declined"
)

// DeclineReasons are the reasons the checkout page offers.
var DeclineReasons = []string{"card_declined", "insufficient_funds", "expired_card", "cancelled"}

// Options configure a Sandbox.
type Options struct {
	APIKey        string
	PublicURL     string
	WebhookURL    string
	Secret        []byte
	RetryMin      time.Duration
	RetryMax      time.Duration
	RetryAttempts int
	HTTP          *http.Client
	Log           *zap.Logger
	Metrics       *httpapi.Metrics
}

type record struct {
	Req       payment.Request
	Status    string
	Reason    string
	Delivered bool
	Attempts  int
	LastError string
	// Refunded is how much of the payment was given back, Refunds each
	// refund's amount by its idempotency key (refund.go).
	Refunded int64
	Refunds  map[string]int64
}

// Sandbox is the provider: an in-memory payment book and a webhook
// deliverer. Safe for concurrent use.
type Sandbox struct {
	o      Options
	mu     sync.Mutex
	pays   map[string]*record
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Sandbox.
func New(o Options) *Sandbox {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Sandbox{o: o, pays: map[string]*record{}, ctx: ctx, cancel: cancel}
}

// Close stops outstanding deliveries (they are lost: memory only).
func (s *Sandbox) Close() {
	s.cancel()
	s.wg.Wait()
}

// Handler returns the routes.
func (s *Sandbox) Handler() http.Handler {
	r := httpapi.New(s.o.Log, s.o.Metrics)
	api := r.Group("/v1", s.requireKey)
	api.POST("/payments", s.create)
	api.GET("/payments/:id", s.get)
	api.POST("/payments/:id/refund", s.refund) // refund.go
	r.GET("/pay/:id", s.page)
	r.GET("/checkout.css", checkoutCSS)
	r.GET("/favicon.svg", func(c *gin.Context) {
		httpapi.SetSecurityHeaders(c, "default-src 'none'; frame-ancestors 'none'")
		c.Header("Cache-Control", "public, max-age=86400")
		c.Data(http.StatusOK, "image/svg+xml", []byte(favicon))
	})
	r.GET("/favicon.ico", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, "/favicon.svg") })
	r.POST("/pay/:id/pay", func(c *gin.Context) { s.complete(c, StatusPaid) })
	r.POST("/pay/:id/decline", func(c *gin.Context) { s.complete(c, StatusDeclined) })
	return r
}

func (s *Sandbox) requireKey(c *gin.Context) {
	key := auth.BearerToken(c.GetHeader("Authorization"))
	if key == "" || subtle.ConstantTimeCompare([]byte(key), []byte(s.o.APIKey)) != 1 {
		httpapi.Abort(c, http.StatusUnauthorized, httpapi.CodeUnauthorized, "a valid API key is required (Authorization: Bearer <key>)")
		return
	}
	c.Next()
}

type createRequest payment.Request

func (r createRequest) Validate() error {
	for _, f := range []struct{ v, n string }{{r.PaymentID, "payment_id"}, {r.UserID, "user_id"}, {r.EventID, "event_id"}} {
		if f.v == "" || len(f.v) > 128 {
			return errString(f.n + " is required (at most 128 characters)")
		}
	}
	if r.Amount < 0 {
		return errString("amount must not be negative")
	}
	if r.ReturnURL != "" {
		u, err := url.Parse(r.ReturnURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errString("return_url must be an absolute http(s) URL")
		}
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

func (s *Sandbox) url(id string) string {
	return strings.TrimRight(s.o.PublicURL, "/") + "/pay/" + url.PathEscape(id)
}

// create: POST /v1/payments. The same payment_id again returns the same
// payment; the same id for another user or event is a 409.
func (s *Sandbox) create(c *gin.Context) {
	var req createRequest
	if !httpapi.Bind(c, &req) {
		return
	}
	s.mu.Lock()
	rec, ok := s.pays[req.PaymentID]
	if ok && (rec.Req.UserID != req.UserID || rec.Req.EventID != req.EventID) {
		s.mu.Unlock()
		httpapi.Abort(c, http.StatusConflict, "payment_exists", "payment_id is taken by another payment")
		return
	}
	if !ok {
		rec = &record{Req: payment.Request(req), Status: StatusPending}
		s.pays[req.PaymentID] = rec
	}
	status := rec.Status
	s.mu.Unlock()
	code := http.StatusCreated
	if ok {
		code = http.StatusOK
	}
	c.JSON(code, gin.H{"payment_id": req.PaymentID, "url": s.url(req.PaymentID), "status": status})
}

func (s *Sandbox) snapshot(id string) (record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.pays[id]
	if !ok {
		return record{}, false
	}
	return *r, true
}

// abortNotFound answers 404 payment_not_found: no payment has the id.
func abortNotFound(c *gin.Context) {
	httpapi.Abort(c, http.StatusNotFound, "payment_not_found", "no such payment")
}

// get: GET /v1/payments/{id} — status and webhook delivery.
func (s *Sandbox) get(c *gin.Context) {
	r, ok := s.snapshot(c.Param("id"))
	if !ok {
		abortNotFound(c)
		return
	}
	c.JSON(http.StatusOK, gin.H{"payment_id": r.Req.PaymentID, "status": r.Status, "reason": r.Reason,
		"amount": r.Req.Amount, "webhook_delivered": r.Delivered, "webhook_attempts": r.Attempts, "last_error": r.LastError})
}

var pageTmpl = template.Must(template.New("pay").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="boxoffice payment sandbox: a stand-in for a payment provider's hosted checkout.">
<title>Sandbox checkout</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/checkout.css"></head>
<body><main><h1>Sandbox checkout</h1>
<p>Event <b>{{.Req.EventID}}</b>, seat <b>{{.Req.SeatID}}</b></p>
<p>Amount: <b>{{.Amount}}{{if .Req.Currency}} {{.Req.Currency}}{{end}}</b></p>
<p>Payment <code>{{.Req.PaymentID}}</code>: {{.Status}}</p>
{{if eq .Status "pending"}}
<form method="post" action="/pay/{{.Req.PaymentID}}/pay"><button type="submit">Pay</button></form>
<form method="post" action="/pay/{{.Req.PaymentID}}/decline">
<label for="reason">Decline reason</label>
<select id="reason" name="reason">{{range .Reasons}}<option value="{{.}}">{{.}}</option>{{end}}</select>
<button type="submit">Decline</button></form>
{{else}}<p>This payment is {{.Status}}.</p>{{end}}
</main></body></html>`))

// favicon is the sandbox's icon (a card), so that browsers get no 404.
const favicon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12" fill="#17693a"/><rect x="10" y="18" width="44" height="28" rx="4" fill="#fff"/><rect x="10" y="24" width="44" height="6" fill="#17693a"/></svg>`

// page: GET /pay/{id}, the hosted checkout page.
func (s *Sandbox) page(c *gin.Context) {
	r, ok := s.snapshot(c.Param("id"))
	if !ok {
		abortNotFound(c)
		return
	}
	// Rendered in full before anything is sent: a template that fails
	// half way is a 500, not a 200 with half a page.
	var page bytes.Buffer
	if err := pageTmpl.Execute(&page, map[string]any{"Req": r.Req, "Status": r.Status, "Reasons": DeclineReasons,
		"Amount": formatCents(r.Req.Amount)}); err != nil {
		s.o.Log.Error("render checkout page", zap.String("payment_id", r.Req.PaymentID), zap.Error(err))
		httpapi.Abort(c, http.StatusInternalServerError, httpapi.CodeInternal, "the checkout page could not be rendered")
		return
	}
	httpapi.SetSecurityHeaders(c, checkoutCSP(r.Req.ReturnURL))
	c.Data(http.StatusOK, "text/html; charset=utf-8", page.Bytes())
}

// formatCents shows an amount in cents with two decimals: 5000 → "50.00".
func formatCents(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%02d", sign, n/100, n%100)
}

// complete: POST /pay/{id}/pay and /decline. The first outcome wins; the
// same outcome again is a no-op; the other outcome afterwards is a 409.
func (s *Sandbox) complete(c *gin.Context, status string) {
	id := c.Param("id")
	reason := ""
	if status == StatusDeclined {
		reason = c.PostForm("reason")
		if reason == "" {
			reason = DeclineReasons[0]
		}
		valid := false
		for _, r := range DeclineReasons {
			valid = valid || r == reason
		}
		if !valid {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "reason must be one of "+strings.Join(DeclineReasons, ", "))
			return
		}
	}
	s.mu.Lock()
	rec, ok := s.pays[id]
	if !ok {
		s.mu.Unlock()
		abortNotFound(c)
		return
	}
	if rec.Status != StatusPending && rec.Status != status {
		s.mu.Unlock()
		httpapi.Abort(c, http.StatusConflict, "payment_finished", "the payment is already "+rec.Status)
		return
	}
	first := rec.Status == StatusPending
	if first {
		rec.Status, rec.Reason = status, reason
	}
	req := rec.Req
	reason = rec.Reason
	s.mu.Unlock()
	if first {
		s.deliver(req, status, reason)
	}
	target := req.ReturnURL
	if target == "" {
		target = s.url(id)
	}
	u, _ := url.Parse(target)
	q := u.Query()
	q.Set("payment_id", id)
	q.Set("payment_status", status)
	u.RawQuery = q.Encode()
	c.Redirect(http.StatusSeeOther, u.String())
}

// deliver posts the signed webhook in the background until a 2xx, with
// the project's retry policy (retry.Exponential from RetryMin to RetryMax),
// at most RetryAttempts tries, or until a final answer (finalAnswer). Each
// try is signed anew, so a slow retry is never outside the receiver's
// tolerance.
func (s *Sandbox) deliver(req payment.Request, status, reason string) {
	path, outcome := payment.PathSuccess, payment.StatusSuccess
	if status == StatusDeclined {
		path, outcome = payment.PathFailure, payment.StatusFailure
	}
	// the outcome is in the signed body: it must match the path
	body, _ := json.Marshal(payment.Webhook{UserID: req.UserID, EventID: req.EventID, SeatID: req.SeatID,
		PaymentID: req.PaymentID, Status: outcome, Reason: reason})
	target := strings.TrimRight(s.o.WebhookURL, "/") + path
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		attempt := 0
		_, err := backoff.Retry(s.ctx, func() (struct{}, error) {
			attempt++
			err := s.post(target, body)
			s.mu.Lock()
			rec := s.pays[req.PaymentID]
			rec.Attempts = attempt
			if err == nil {
				rec.Delivered, rec.LastError = true, ""
			} else {
				rec.LastError = err.Error()
			}
			s.mu.Unlock()
			return struct{}{}, err
		}, backoff.WithBackOff(retry.Exponential(s.o.RetryMin, s.o.RetryMax)), backoff.WithMaxElapsedTime(0),
			backoff.WithMaxTries(uint(max(s.o.RetryAttempts, 1))),
			backoff.WithNotify(func(err error, d time.Duration) {
				s.o.Log.Warn("webhook delivery failed; will retry", zap.String("payment_id", req.PaymentID),
					zap.Int("attempt", attempt), zap.Duration("retry_in", d), zap.Error(err))
			}))
		if err == nil || s.ctx.Err() != nil {
			return // delivered, or the sandbox is closing
		}
		var se statusError
		if errors.As(err, &se) && finalAnswer(se.code) {
			s.o.Log.Error("webhook refused; not retried", zap.String("payment_id", req.PaymentID), zap.Error(err))
			return
		}
		s.o.Log.Error("webhook delivery gave up", zap.String("payment_id", req.PaymentID), zap.Int("attempts", s.o.RetryAttempts))
	}()
}

type statusError struct {
	code int
	body string
}

func (e statusError) Error() string {
	return "webhook answered " + http.StatusText(e.code) + ": " + e.body
}

func (s *Sandbox) post(target string, body []byte) error {
	ctx, cancel := context.WithTimeout(s.ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(payment.SignatureHeader, payment.Sign(s.o.Secret, time.Now(), body))
	resp, err := s.o.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		if finalAnswer(resp.StatusCode) {
			return retry.Permanent(statusError{resp.StatusCode, string(b)})
		}
		return statusError{resp.StatusCode, string(b)}
	}
	return nil
}

// finalAnswer reports a webhook answer that a retry would only repeat
// (docs/http-api.md, what each answer means for the provider): a 4xx but
// 408 and 429. 404 and 409 say the payment id is unknown to the receiver,
// 400 and 401 that the request is wrong; a 5xx, 408 or 429 may pass later.
func finalAnswer(status int) bool {
	return status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}
