package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Unconfirmed is the oldest payment that waits for its webhook longer than
// the provider should take (OldestUnconfirmed).
type Unconfirmed struct {
	PaymentID string
	CreatedAt time.Time
	// Webhooked: a webhook of any payment was recorded since this one
	// started, so the provider does confirm payments: this one is more
	// likely a fan who left the checkout page.
	Webhooked bool
}

// ErrNoUnconfirmed is returned by OldestUnconfirmed when every payment
// started in the range was confirmed (or failed) in time.
var ErrNoUnconfirmed = errors.New("no unconfirmed payment")

// OldestUnconfirmed returns the oldest payment started after after and at
// least wait ago (by PostgreSQL's clock) whose webhook has not arrived, or
// ErrNoUnconfirmed. Both lookups use a partial index
// (00036_payment_confirmations.sql).
func (l *Ledger) OldestUnconfirmed(ctx context.Context, wait time.Duration, after time.Time) (Unconfirmed, error) {
	var u Unconfirmed
	err := l.pool.QueryRow(ctx, `WITH p AS (
			SELECT payment_id, created_at FROM payments
			WHERE outcome = 'initiated' AND created_at > $2 AND created_at <= now() - make_interval(secs => $1)
			ORDER BY created_at LIMIT 1)
		SELECT p.payment_id, p.created_at,
			EXISTS (SELECT 1 FROM payments w WHERE w.outcome <> 'initiated' AND w.updated_at >= p.created_at)
		FROM p`, wait.Seconds(), after).Scan(&u.PaymentID, &u.CreatedAt, &u.Webhooked)
	if errors.Is(err, pgx.ErrNoRows) {
		return Unconfirmed{}, ErrNoUnconfirmed
	}
	return u, wrap("oldest unconfirmed", err)
}
