package ledger

import (
	"context"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// RecordDrawSeeds keeps the seeds and commitments of eventID's draws as
// Redis has them (booking.Store DrawSeeds), for a rebuild
// (Restorer.Restore). The first seed recorded for a draw (event, phase)
// stays: a later different one is not written. It returns the ledger's
// rows of the draws whose kept seed differs from the one given (the seed
// whose commitment was recorded first, which a rebuild starts with).
func (l *Ledger) RecordDrawSeeds(ctx context.Context, eventID string, seeds []booking.DrawSeed) ([]booking.DrawSeed, error) {
	if len(seeds) == 0 { // an event without a pre-queue: nothing to read
		return nil, nil
	}
	for _, d := range seeds {
		if err := booking.CheckDrawSeed(d); err != nil {
			return nil, wrap("record draw seeds", err)
		}
	}
	kept, err := l.keptSeeds(ctx, eventID)
	if err != nil {
		return nil, err
	}
	b := &pgx.Batch{}
	for _, d := range seeds {
		if _, ok := kept[d.Phase]; !ok {
			b.Queue(`INSERT INTO draw_seeds (event_id, phase, seed, commitment) VALUES ($1, $2, $3, $4)
				ON CONFLICT (event_id, phase) DO NOTHING`, eventID, d.Phase, d.Seed, d.Commit)
		}
	}
	if b.Len() > 0 {
		if err := l.pool.SendBatch(ctx, b).Close(); err != nil {
			return nil, wrap("record draw seeds", err)
		}
		// a concurrent writer may have been first
		if kept, err = l.keptSeeds(ctx, eventID); err != nil {
			return nil, err
		}
	}
	var differ []booking.DrawSeed
	for _, d := range seeds {
		if k := kept[d.Phase]; k != d {
			differ = append(differ, k)
		}
	}
	return differ, nil
}

// DrawSeeds returns eventID's kept draw seeds, the event's own first,
// then by phase id (none: no pre-queue recorded).
func (l *Ledger) DrawSeeds(ctx context.Context, eventID string) ([]booking.DrawSeed, error) {
	rows, err := l.pool.Query(ctx, `SELECT phase, seed, commitment FROM draw_seeds WHERE event_id = $1 ORDER BY phase`, eventID)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (booking.DrawSeed, error) {
		var d booking.DrawSeed
		return d, r.Scan(&d.Phase, &d.Seed, &d.Commit)
	})
	return out, wrap("draw seeds", err)
}

func (l *Ledger) keptSeeds(ctx context.Context, eventID string) (map[string]booking.DrawSeed, error) {
	list, err := l.DrawSeeds(ctx, eventID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]booking.DrawSeed, len(list))
	for _, d := range list {
		out[d.Phase] = d
	}
	return out, nil
}

// KeepDrawSeeds records the seeds of eventID's draws as store has them
// (RecordDrawSeeds), and logs and returns the phases ("": the event's own
// draw) whose seed in Redis differs from the one the ledger kept, which
// it leaves as it is: after an admin call that may have drawn one (the
// gateway), on a rebuild and on every reconciliation (Restorer, which
// counts them in boxoffice_ledger_draw_seed_mismatch).
func (l *Ledger) KeepDrawSeeds(ctx context.Context, store *booking.Store, eventID string, log *zap.Logger) ([]string, error) {
	seeds, err := store.DrawSeeds(ctx, eventID)
	if err != nil {
		return nil, err
	}
	differ, err := l.RecordDrawSeeds(ctx, eventID, seeds)
	if err != nil {
		return nil, err
	}
	phases := make([]string, len(differ))
	for i, d := range differ {
		log.Error("draw seed in Redis differs from the one the ledger kept", zap.String("event_id", eventID),
			zap.String("phase", d.Phase), zap.String("ledger_commit", d.Commit))
		phases[i] = d.Phase
	}
	return phases, nil
}
