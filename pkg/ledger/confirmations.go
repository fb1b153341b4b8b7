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
// (00036_provider_health.sql).
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

// ProviderOutage is one outage of one event's hold clocks (table
// provider_outages).
type ProviderOutage struct {
	EventID     string
	PausedSince time.Time
	DegradedBy  string
	HoldsPaused int64
	// RecoveredAt is zero while the clocks are stopped.
	RecoveredAt  time.Time
	RecoveredBy  string
	HoldsResumed int64
}

// RecordProviderDegraded records that eventID's hold clocks stopped at
// pausedSince (Redis's clock) with holds users in the room, found by by.
// A repeat for the same outage changes nothing.
func (l *Ledger) RecordProviderDegraded(ctx context.Context, eventID string, pausedSince time.Time, holds int64, by string) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO provider_outages (event_id, paused_since, degraded_by, holds_paused)
		VALUES ($1, $2, $3, $4) ON CONFLICT (event_id, paused_since) DO NOTHING`, eventID, pausedSince, by, holds)
	return wrap("record provider degraded", err)
}

// RecordProviderRecovered records that the outage of eventID that began
// at pausedSince ended at at with holds users in the room, ended by by
// (max_outage: it lasted too long). It creates the outage's row when its
// start was not recorded; a repeat keeps the first recovery.
func (l *Ledger) RecordProviderRecovered(ctx context.Context, eventID string, pausedSince, at time.Time, holds int64, by string) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO provider_outages (event_id, paused_since, recovered_at, recovered_by, holds_resumed)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (event_id, paused_since) DO UPDATE SET recovered_at = EXCLUDED.recovered_at,
			recovered_by = EXCLUDED.recovered_by, holds_resumed = EXCLUDED.holds_resumed
		WHERE provider_outages.recovered_at IS NULL`, eventID, pausedSince, at, by, holds)
	return wrap("record provider recovered", err)
}

// ProviderOutages returns eventID's outages, oldest first.
func (l *Ledger) ProviderOutages(ctx context.Context, eventID string) ([]ProviderOutage, error) {
	rows, err := l.pool.Query(ctx, `SELECT event_id, paused_since, degraded_by, holds_paused, recovered_at, recovered_by, holds_resumed
		FROM provider_outages WHERE event_id = $1 ORDER BY paused_since`, eventID)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (ProviderOutage, error) {
		var o ProviderOutage
		var at *time.Time
		err := r.Scan(&o.EventID, &o.PausedSince, &o.DegradedBy, &o.HoldsPaused, &at, &o.RecoveredBy, &o.HoldsResumed)
		if at != nil {
			o.RecoveredAt = *at
		}
		return o, err
	})
	return out, wrap("provider outages", err)
}
