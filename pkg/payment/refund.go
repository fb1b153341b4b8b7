package payment

import (
	"context"
	"net/http"
	"net/url"
)

// Refunder gives a payment's money back. Refund must be idempotent: by
// key when one is given (a refund of part of a payment, e.g. the
// cancelled seats of an order: the same key again is the same refund,
// made once), else by payment id (the whole payment: refunding a refunded
// payment succeeds).
type Refunder interface {
	Refund(ctx context.Context, paymentID string, amount int64, key string) (Refund, error)
}

// Refund is a provider's answer to a refund.
type Refund struct {
	PaymentID string `json:"payment_id"`
	// Status is the payment's: "refunded" once all of it is given back,
	// "paid" while some of it is left.
	Status string `json:"status"`
	Amount int64  `json:"amount"` // this refund's
	// RefundID is the refund's id (its idempotency key); empty for the
	// whole payment's.
	RefundID string `json:"refund_id,omitempty"`
	// RefundedTotal is how much of the payment is given back so far.
	RefundedTotal int64 `json:"refunded_total,omitempty"`
}

// IdempotencyKeyHeader carries a refund's idempotency key.
const IdempotencyKeyHeader = "Idempotency-Key"

// Refund posts to the sandbox's POST /v1/payments/{id}/refund, with the
// key in the Idempotency-Key header when there is one.
func (s *SandboxClient) Refund(ctx context.Context, paymentID string, amount int64, key string) (Refund, error) {
	var r Refund
	var h http.Header
	if key != "" {
		h = http.Header{IdempotencyKeyHeader: {key}}
	}
	if _, err := s.postWith(ctx, "/v1/payments/"+url.PathEscape(paymentID)+"/refund", h, map[string]int64{"amount": amount}, &r); err != nil {
		return Refund{}, err
	}
	return r, nil
}
