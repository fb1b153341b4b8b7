package payment

import (
	"context"
	"net/url"
)

// Refunder gives a payment's money back. Refund must be idempotent by
// payment id: refunding an already refunded payment succeeds.
type Refunder interface {
	Refund(ctx context.Context, paymentID string, amount int64) (Refund, error)
}

// Refund is a provider's answer to a refund.
type Refund struct {
	PaymentID string `json:"payment_id"`
	Status    string `json:"status"` // "refunded"
	Amount    int64  `json:"amount"`
}

// Refund posts to the sandbox's POST /v1/payments/{id}/refund.
func (s *SandboxClient) Refund(ctx context.Context, paymentID string, amount int64) (Refund, error) {
	var r Refund
	if _, err := s.post(ctx, "/v1/payments/"+url.PathEscape(paymentID)+"/refund", map[string]int64{"amount": amount}, &r); err != nil {
		return Refund{}, err
	}
	return r, nil
}
