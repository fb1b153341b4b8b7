package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/payment"
)

func TestRefundOnlyPaidPaymentsIdempotently(t *testing.T) {
	_, h, _ := setup(t, 0)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := &payment.SandboxClient{BaseURL: srv.URL, APIKey: "k"}
	ctx := context.Background()
	if _, err := client.Refund(ctx, "nope", 1); !errors.Is(err, payment.ErrProvider) {
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
		r, err := client.Refund(ctx, "p1", 5000)
		if err != nil || r.Status != StatusRefunded || r.Amount != 5000 {
			t.Fatalf("refund: %+v %v", r, err)
		}
	}
}
