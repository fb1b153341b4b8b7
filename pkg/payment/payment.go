// Package payment is boxoffice's side of a payment provider: the Provider
// interface (create a payment, get back its id and a hosted checkout URL),
// a client for the sandbox provider (services/payment-sandbox), the webhook
// body and the webhook signature scheme.
//
// Signature: header X-Boxoffice-Signature: t=<unix seconds>,v1=<hex>, where
// hex is HMAC-SHA256(secret, "<t>.<raw body>"). The body's status field
// names the outcome, so the outcome is signed too (Webhook.CheckStatus). Several v1 entries may be
// present (secret rotation); one match is enough. Verify rejects a missing
// or malformed header, a signature that does not match (constant-time
// compare) and a timestamp outside the tolerance window (replay).
package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Webhook paths on the payment-webhook service.
const (
	PathSuccess = "/api/booking/payment/success"
	PathFailure = "/api/booking/payment/failure"
)

// Webhook is the body the provider posts to PathSuccess or PathFailure.
type Webhook struct {
	UserID    string `json:"user_id"`
	EventID   string `json:"event_id"`
	SeatID    string `json:"seat_id"`
	PaymentID string `json:"payment_id"`
	// Status is the outcome, StatusSuccess or StatusFailure: it is signed
	// with the rest of the body and must match the path (CheckStatus), so a
	// signed failure cannot be replayed as a success or the reverse.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"` // failure only
}

// Validate requires the ids.
func (w Webhook) Validate() error {
	var missing []string
	for _, f := range []struct{ v, name string }{
		{w.UserID, "user_id"}, {w.EventID, "event_id"}, {w.PaymentID, "payment_id"},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// Request asks a provider for a payment. PaymentID is chosen by boxoffice,
// so that creating the same payment twice is idempotent.
type Request struct {
	PaymentID string `json:"payment_id"`
	Amount    int64  `json:"amount"`             // minor units (cents)
	Currency  string `json:"currency,omitempty"` // ISO 4217 (the event's)
	UserID    string `json:"user_id"`
	EventID   string `json:"event_id"`
	SeatID    string `json:"seat_id"`
	ReturnURL string `json:"return_url"`
}

// Payment is a created payment: its id and the hosted checkout page.
type Payment struct {
	PaymentID string `json:"payment_id"`
	URL       string `json:"url"`
}

// Provider creates payments. Create must be idempotent by PaymentID.
type Provider interface {
	Create(ctx context.Context, r Request) (Payment, error)
}

// ErrProvider wraps every failure to reach or get an answer from a provider.
var ErrProvider = errors.New("payment provider error")

// SandboxClient is the Provider of services/payment-sandbox.
type SandboxClient struct {
	BaseURL string // e.g. http://127.0.0.1:8083
	APIKey  string
	HTTP    *http.Client
}

// Create posts the payment to POST /v1/payments.
func (s *SandboxClient) Create(ctx context.Context, r Request) (Payment, error) {
	var p Payment
	b, err := s.post(ctx, "/v1/payments", r, &p)
	if err != nil {
		return Payment{}, err
	}
	if p.URL == "" {
		return Payment{}, fmt.Errorf("%w: bad answer %q", ErrProvider, b)
	}
	return p, nil
}

// post sends body as JSON to the provider's path with the API key and
// decodes a 2xx answer into out; it returns the raw answer. Every failure
// wraps ErrProvider.
func (s *SandboxClient) post(ctx context.Context, path string, body, out any) ([]byte, error) {
	return s.postWith(ctx, path, nil, body, out)
}

// Error is a provider's answer other than 2xx: its status and, from the
// JSON error format, its code and message. It wraps ErrProvider.
type Error struct {
	Path    string
	Status  int
	Code    string // e.g. not_refundable ("" when the body had none)
	Message string
	Body    []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v: %s: status %d: %s", ErrProvider, e.Path, e.Status, bytes.TrimSpace(e.Body))
}

// Unwrap makes errors.Is(err, ErrProvider) hold.
func (e *Error) Unwrap() error { return ErrProvider }

// Refused: the provider answered and said no (a 4xx); a retry with the
// same request gets the same answer until something changes there.
func (e *Error) Refused() bool { return e.Status >= 400 && e.Status < 500 }

// postWith is post with extra headers.
func (s *SandboxClient) postWith(ctx context.Context, path string, h http.Header, body, out any) ([]byte, error) {
	return s.send(ctx, http.MethodPost, path, h, body, out)
}

// Status asks the provider for a payment's status (GET
// /v1/payments/{id}): "pending" while the fan has not paid, "paid" or
// "declined" once they did. An unknown id is an *Error (404).
func (s *SandboxClient) Status(ctx context.Context, paymentID string) (string, error) {
	var p struct {
		Status string `json:"status"`
	}
	b, err := s.send(ctx, http.MethodGet, "/v1/payments/"+url.PathEscape(paymentID), nil, nil, &p)
	if err != nil {
		return "", err
	}
	if p.Status == "" {
		return "", fmt.Errorf("%w: bad answer %q", ErrProvider, b)
	}
	return p.Status, nil
}

// send sends a request (body as JSON unless nil) to the provider's path
// with the API key and decodes a 2xx answer into out; it returns the raw
// answer. Every failure wraps ErrProvider.
func (s *SandboxClient) send(ctx context.Context, method, path string, h http.Header, body, out any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		js, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProvider, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+s.APIKey)
	for k, v := range h {
		req.Header[k] = v
	}
	hc := s.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProvider, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		pe := &Error{Path: path, Status: resp.StatusCode, Body: b}
		var e struct{ Code, Message string }
		if json.Unmarshal(b, &e) == nil {
			pe.Code, pe.Message = e.Code, e.Message
		}
		return b, pe
	}
	if err := json.Unmarshal(b, out); err != nil {
		return b, fmt.Errorf("%w: bad answer %q", ErrProvider, b)
	}
	return b, nil
}
