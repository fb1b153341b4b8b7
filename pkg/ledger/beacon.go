package ledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// SaveBeacon keeps eventID's draw beacon as Redis has it (booking.Store
// SetBeaconRound, SetBeaconValue), for a rebuild (Restorer.Restore).
func (l *Ledger) SaveBeacon(ctx context.Context, eventID string, b fairness.Beacon) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO draw_beacons (event_id, round, source, value) VALUES ($1, $2, $3, $4)
		ON CONFLICT (event_id) DO UPDATE SET round = $2, source = $3, value = $4`, eventID, b.Round, b.Source, b.Value)
	return wrap("save beacon", err)
}

// Beacon returns eventID's kept draw beacon (zero: none).
func (l *Ledger) Beacon(ctx context.Context, eventID string) (fairness.Beacon, error) {
	var b fairness.Beacon
	err := l.pool.QueryRow(ctx, `SELECT round, source, value FROM draw_beacons WHERE event_id = $1`, eventID).
		Scan(&b.Round, &b.Source, &b.Value)
	if errors.Is(err, pgx.ErrNoRows) {
		return fairness.Beacon{}, nil
	}
	return b, wrap("beacon", err)
}
