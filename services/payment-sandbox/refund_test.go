package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/payment"
)

func TestRefundOnlyPaidPaymentsIdempotently(t *testing.T) {
	_, h, _ := setup(t, 0)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := &payment.SandboxClient{BaseURL: srv.URL, APIKey: "k"}
	ctx := context.Background()
	if _, err := client.Refund(ctx, "nope", 1, ""); !errors.Is(err, payment.ErrProvider) {
		t.Fatalf("unknown payment: %v", err)
	}
	if w := call(h, "POST", "/v1/payments", "k", createBody, nil); w.Code != 201 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w := call(h, "POST", "/v1/payments/p1/refund", "k", `{}`, nil); w.Code != http.StatusConflict {
		t.Fatalf("refund pending: %d %s", w.Code, w.Body)
	}
	if w := call(h, "POST", "/v1/payments/p1/refund", "", `{}`, nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("refund without key: %d", w.Code)
	}
	if w := call(h, "POST", "/pay/p1/pay", "", "", url.Values{}); w.Code != http.StatusSeeOther {
		t.Fatalf("pay: %d", w.Code)
	}
	for range 2 {
		r, err := client.Refund(ctx, "p1", 5000, "")
		if err != nil || r.Status != StatusRefunded || r.Amount != 5000 {
			t.Fatalf("refund: %+v %v", r, err)
		}
	}
}

func TestPartialRefundsOncePerKey(t *testing.T) {
	_, h, _ := setup(t, 0)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := &payment.SandboxClient{BaseURL: srv.URL, APIKey: "k"}
	ctx := context.Background()
	if w := call(h, "POST", "/v1/payments", "k", createBody, nil); w.Code != 201 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	var pe *payment.Error
	if _, err := client.Refund(ctx, "p1", 1000, "can-1"); !errors.As(err, &pe) || pe.Code != "not_refundable" || !pe.Refused() {
		t.Fatalf("refund of a pending payment: %v", err)
	}
	if w := call(h, "POST", "/pay/p1/pay", "", "", url.Values{}); w.Code != http.StatusSeeOther {
		t.Fatalf("pay: %d", w.Code)
	}
	for range 2 { // the same key twice: one refund
		r, err := client.Refund(ctx, "p1", 2000, "can-1")
		if err != nil || r.Amount != 2000 || r.RefundedTotal != 2000 || r.Status != StatusPaid || r.RefundID != "can-1" {
			t.Fatalf("partial refund: %+v %v", r, err)
		}
	}
	if _, err := client.Refund(ctx, "p1", 2500, "can-1"); !errors.As(err, &pe) || pe.Code != "idempotency_key_reused" {
		t.Fatalf("a key reused with another amount: %v", err)
	}
	if _, err := client.Refund(ctx, "p1", 3001, "can-2"); !errors.As(err, &pe) || pe.Code != "refund_exceeds_payment" {
		t.Fatalf("more than is left: %v", err)
	}
	if _, err := client.Refund(ctx, "p1", 0, "can-2"); !errors.As(err, &pe) || pe.Status != http.StatusBadRequest {
		t.Fatalf("amount 0: %v", err)
	}
	r, err := client.Refund(ctx, "p1", 3000, "can-2")
	if err != nil || r.RefundedTotal != 5000 || r.Status != StatusRefunded {
		t.Fatalf("the rest: %+v %v", r, err)
	}
	if w := call(h, "GET", "/v1/payments/p1", "k", "", nil); !strings.Contains(w.Body.String(), `"status":"refunded"`) {
		t.Fatalf("payment after its refunds: %s", w.Body)
	}
}

// SandboxClient.Status reads a payment's status: pending until the fan
// pays; an unknown id is refused (404), which still says the provider
// answers.
func TestClientStatus(t *testing.T) {
	_, h, _ := setup(t, 0)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := &payment.SandboxClient{BaseURL: srv.URL, APIKey: "k"}
	ctx := context.Background()
	var pe *payment.Error
	if _, err := client.Status(ctx, "nope"); !errors.As(err, &pe) || pe.Status != http.StatusNotFound || !pe.Refused() {
		t.Fatalf("unknown payment: %v", err)
	}
	if w := call(h, "POST", "/v1/payments", "k", createBody, nil); w.Code != 201 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if st, err := client.Status(ctx, "p1"); err != nil || st != StatusPending {
		t.Fatalf("created: %q %v", st, err)
	}
	if w := call(h, "POST", "/pay/p1/pay", "", "", url.Values{}); w.Code != http.StatusSeeOther {
		t.Fatalf("pay: %d", w.Code)
	}
	if st, err := client.Status(ctx, "p1"); err != nil || st != StatusPaid {
		t.Fatalf("paid: %q %v", st, err)
	}
	srv.Close()
	if _, err := client.Status(ctx, "p1"); !errors.Is(err, payment.ErrProvider) || errors.As(err, &pe) {
		t.Fatalf("provider down: %v", err)
	}
}
