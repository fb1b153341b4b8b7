package ledger

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// SaveBeacon keeps the beacon of eventID's draw of phase ("" the event's
// own pre-queue's) as Redis has it (booking.Store SetBeaconRound,
// SetBeaconValue), for a rebuild (Restorer.Restore).
func (l *Ledger) SaveBeacon(ctx context.Context, eventID, phase string, b fairness.Beacon) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO draw_beacons (event_id, phase, round, source, value, signature)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (event_id, phase) DO UPDATE SET round = $3, source = $4, value = $5, signature = $6`,
		eventID, phase, b.Round, b.Source, b.Value, b.Signature)
	return wrap("save beacon", err)
}

// KeepBeacons records the beacons of eventID's draws as store has them
// where the ledger's copy differs or is missing (an admin call whose
// ledger write failed and was not retried): the beacons are committed in
// Redis first, so a rebuild must start from Redis's. On every
// reconciliation (Restorer.Reconcile). It returns the phases it recorded
// ("" the event's own draw).
func (l *Ledger) KeepBeacons(ctx context.Context, store *booking.Store, eventID string) ([]string, error) {
	phases, err := store.PhaseDraws(ctx, eventID)
	if err != nil {
		return nil, err
	}
	kept, err := l.Beacons(ctx, eventID)
	if err != nil {
		return nil, err
	}
	var saved []string
	for _, phase := range append([]string{""}, phases...) {
		b, err := store.Beacon(ctx, eventID, phase)
		if err != nil {
			return saved, err
		}
		k := kept[phase]
		if b.Round == 0 || b == k || (b.Round == k.Round && b.Source == k.Source && b.Value == "") {
			continue // nothing in Redis the ledger lacks
		}
		if err := l.SaveBeacon(ctx, eventID, phase, b); err != nil {
			return saved, err
		}
		saved = append(saved, phase)
	}
	return saved, nil
}

// Beacons returns the kept beacons of eventID's draws by phase ("" the
// event's own pre-queue's; none: an empty map).
func (l *Ledger) Beacons(ctx context.Context, eventID string) (map[string]fairness.Beacon, error) {
	rows, err := l.pool.Query(ctx, `SELECT phase, round, source, value, signature FROM draw_beacons WHERE event_id = $1`, eventID)
	if err != nil {
		return nil, wrap("beacons", err)
	}
	out := map[string]fairness.Beacon{}
	var phase string
	var b fairness.Beacon
	_, err = pgx.ForEachRow(rows, []any{&phase, &b.Round, &b.Source, &b.Value, &b.Signature}, func() error {
		out[phase] = b
		return nil
	})
	return out, wrap("beacons", err)
}
