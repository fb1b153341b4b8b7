package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
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
	body, _ := json.Marshal(map[string]int64{"amount": amount})
	target := strings.TrimRight(s.BaseURL, "/") + "/v1/payments/" + url.PathEscape(paymentID) + "/refund"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Refund{}, fmt.Errorf("%w: %v", ErrProvider, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.APIKey)
	hc := s.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Refund{}, fmt.Errorf("%w: %v", ErrProvider, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return Refund{}, fmt.Errorf("%w: refund: status %d: %s", ErrProvider, resp.StatusCode, bytes.TrimSpace(b))
	}
	var r Refund
	if err := json.Unmarshal(b, &r); err != nil {
		return Refund{}, fmt.Errorf("%w: bad refund answer %q", ErrProvider, b)
	}
	return r, nil
}
