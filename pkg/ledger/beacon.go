package ledger

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// SaveBeacon keeps the beacon of eventID's draw of phase ("" the event's
// own pre-queue's) as Redis has it (booking.Store SetBeaconRound,
// SetBeaconValue), for a rebuild (Restorer.Restore).
func (l *Ledger) SaveBeacon(ctx context.Context, eventID, phase string, b fairness.Beacon) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO draw_beacons (event_id, phase, round, source, value) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (event_id, phase) DO UPDATE SET round = $3, source = $4, value = $5`, eventID, phase, b.Round, b.Source, b.Value)
	return wrap("save beacon", err)
}

// Beacons returns the kept beacons of eventID's draws by phase ("" the
// event's own pre-queue's; none: an empty map).
func (l *Ledger) Beacons(ctx context.Context, eventID string) (map[string]fairness.Beacon, error) {
	rows, err := l.pool.Query(ctx, `SELECT phase, round, source, value FROM draw_beacons WHERE event_id = $1`, eventID)
	if err != nil {
		return nil, wrap("beacons", err)
	}
	out := map[string]fairness.Beacon{}
	var phase string
	var b fairness.Beacon
	_, err = pgx.ForEachRow(rows, []any{&phase, &b.Round, &b.Source, &b.Value}, func() error {
		out[phase] = b
		return nil
	})
	return out, wrap("beacons", err)
}
