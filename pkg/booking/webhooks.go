package booking

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Webhooks the payment-webhook service refused or failed (an answer other
// than 2xx: a bad signature, a malformed body, a 5xx the provider retries)
// are counted in one hash outside any event's slot, <prefix>:webhooks,
// written and read with plain commands (never a script): the count of each
// outcome and the last refusal. A refused webhook may name no event, or
// one it cannot be trusted about, so the count is for every event, like
// the payment provider's state; the console's errors panel shows it.

// MaxWebhookErrorLen bounds the message of the last refusal kept.
const MaxWebhookErrorLen = 200

// WebhookRefusals is what the payment-webhook service refused or failed.
type WebhookRefusals struct {
	// Total is every refused or failed webhook; ByOutcome the same by
	// outcome (bad_signature, invalid_body, status_mismatch, rejected,
	// error).
	Total     int64            `json:"total"`
	ByOutcome map[string]int64 `json:"by_outcome"`
	// The last one: when, its kind (success, failure), outcome, HTTP
	// status and message.
	LastAt      time.Time `json:"last_at,omitzero"`
	LastKind    string    `json:"last_kind,omitempty"`
	LastOutcome string    `json:"last_outcome,omitempty"`
	LastStatus  int       `json:"last_status,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
}

func (s *Store) webhooksKey() string { return s.prefix + ":webhooks" }

// RecordWebhookRefusal counts a webhook the service answered with status
// (4xx or 5xx): kind success or failure, its outcome and the message.
func (s *Store) RecordWebhookRefusal(ctx context.Context, kind, outcome string, status int, msg string) error {
	if len(msg) > MaxWebhookErrorLen {
		msg = msg[:MaxWebhookErrorLen]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	msg = strings.ReplaceAll(msg, "\x00", "")
	k := s.webhooksKey()
	p := s.rdb.TxPipeline()
	p.HIncrBy(ctx, k, "n:"+outcome, 1)
	p.HSet(ctx, k, "last_at_ms", s.now().UnixMilli(), "last_kind", kind, "last_outcome", outcome,
		"last_status", status, "last_error", msg)
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("record webhook refusal: %w", err)
	}
	return nil
}

// WebhookRefusals reads the counts RecordWebhookRefusal keeps.
func (s *Store) WebhookRefusals(ctx context.Context) (WebhookRefusals, error) {
	h, err := s.rdb.HGetAll(ctx, s.webhooksKey()).Result()
	out := WebhookRefusals{ByOutcome: map[string]int64{}}
	if err != nil {
		return out, fmt.Errorf("webhook refusals: %w", err)
	}
	for f, v := range h {
		if o, ok := strings.CutPrefix(f, "n:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			out.ByOutcome[o] = n
			out.Total += n
		}
	}
	if ms, err := strconv.ParseInt(h["last_at_ms"], 10, 64); err == nil {
		out.LastAt = time.UnixMilli(ms).UTC()
	}
	out.LastKind, out.LastOutcome, out.LastError = h["last_kind"], h["last_outcome"], h["last_error"]
	out.LastStatus, _ = strconv.Atoi(h["last_status"])
	return out, nil
}
