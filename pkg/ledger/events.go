package ledger

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// EventDef is an event's definition as the ledger keeps it: everything
// needed to create it again in Redis. Config has its defaults applied and
// Seats always lists every seat in display order (Rows and SeatsPerRow are
// kept for the seat map's layout when the event was made from them).
type EventDef struct {
	Config    booking.EventConfig
	Paused    bool
	Restores  int
	CreatedAt time.Time
	UpdatedAt time.Time
}

const eventColumns = `id, name, seats, rows_count, seats_per_row, capacity, hold_ms, grace_ms,
	sales_start, sales_end, batch_size, abandon_ms, paused, restores, created_at, updated_at, admit_per_minute, early_join_ms`

func scanEvent(row pgx.Row) (EventDef, error) {
	var d EventDef
	var holdMS, graceMS, abandonMS, earlyMS int64
	var start, end *time.Time
	c := &d.Config
	err := row.Scan(&c.ID, &c.Name, &c.Seats, &c.Rows, &c.SeatsPerRow, &c.Capacity, &holdMS, &graceMS,
		&start, &end, &c.BatchSize, &abandonMS, &d.Paused, &d.Restores, &d.CreatedAt, &d.UpdatedAt, &c.AdmitPerMinute, &earlyMS)
	if err != nil {
		return EventDef{}, err
	}
	c.Hold, c.Grace, c.Abandon, c.EarlyJoin = msDur(holdMS), msDur(graceMS), msDur(abandonMS), msDur(earlyMS)
	if start != nil {
		c.SalesStart = start.UTC()
	}
	if end != nil {
		c.SalesEnd = end.UTC()
	}
	return d, nil
}

func msDur(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC().Truncate(time.Millisecond)
	return &t
}

// CreateEvent records a new event's definition (defaults applied, seats
// expanded by booking.NormalizeEvent). It is idempotent: the same
// definition again returns created false and no error, so an admin's
// retry after Redis failed goes on to create the Redis state; another
// definition under the same id is ErrEventExists. Errors from the
// definition wrap booking.ErrInvalidEvent.
func (l *Ledger) CreateEvent(ctx context.Context, cfg booking.EventConfig) (def EventDef, created bool, err error) {
	cfg, err = booking.NormalizeEvent(cfg)
	if err != nil {
		return EventDef{}, false, err
	}
	tag, err := l.pool.Exec(ctx, `INSERT INTO events (id, name, seats, rows_count, seats_per_row, capacity,
		hold_ms, grace_ms, sales_start, sales_end, batch_size, abandon_ms, admit_per_minute, early_join_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING`,
		cfg.ID, cfg.Name, cfg.Seats, cfg.Rows, cfg.SeatsPerRow, cfg.Capacity, cfg.Hold.Milliseconds(),
		cfg.Grace.Milliseconds(), nullTime(cfg.SalesStart), nullTime(cfg.SalesEnd), cfg.BatchSize, cfg.Abandon.Milliseconds(),
		cfg.AdmitPerMinute, cfg.EarlyJoin.Milliseconds())
	if err != nil {
		return EventDef{}, false, wrap("create event", err)
	}
	def, err = l.Event(ctx, cfg.ID)
	if err != nil {
		return EventDef{}, false, err
	}
	if tag.RowsAffected() == 1 {
		return def, true, nil
	}
	if !sameDefinition(def.Config, cfg) {
		return def, false, ErrEventExists
	}
	return def, false, nil
}

// sameDefinition compares what a create sets (times to the millisecond,
// as stored).
func sameDefinition(a, b booking.EventConfig) bool {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	return a.ID == b.ID && a.Name == b.Name && slices.Equal(a.Seats, b.Seats) && a.Rows == b.Rows &&
		a.SeatsPerRow == b.SeatsPerRow && a.Capacity == b.Capacity && a.Hold.Milliseconds() == b.Hold.Milliseconds() &&
		a.Grace.Milliseconds() == b.Grace.Milliseconds() && ms(a.SalesStart) == ms(b.SalesStart) &&
		ms(a.SalesEnd) == ms(b.SalesEnd) && a.BatchSize == b.BatchSize && a.Abandon.Milliseconds() == b.Abandon.Milliseconds() &&
		a.AdmitPerMinute == b.AdmitPerMinute && a.EarlyJoin.Milliseconds() == b.EarlyJoin.Milliseconds()
}

// UpdateEvent applies an admin's change (nil fields left alone) in one
// statement and returns the new definition. ErrEventNotFound when the
// ledger has no such event. Values are checked by the caller (the same
// rules as booking.Store.UpdateEvent).
func (l *Ledger) UpdateEvent(ctx context.Context, id string, u booking.EventUpdate) (EventDef, error) {
	var hold, abandon *int64
	if u.Hold != nil {
		v := u.Hold.Milliseconds()
		hold = &v
	}
	if u.Abandon != nil {
		v := u.Abandon.Milliseconds()
		abandon = &v
	}
	d, err := scanEvent(l.pool.QueryRow(ctx, `UPDATE events SET paused = COALESCE($2, paused),
		capacity = COALESCE($3, capacity), hold_ms = COALESCE($4, hold_ms), abandon_ms = COALESCE($5, abandon_ms),
		admit_per_minute = COALESCE($6, admit_per_minute),
		updated_at = now() WHERE id = $1 RETURNING `+eventColumns, id, u.Paused, u.Capacity, hold, abandon, u.AdmitPerMinute))
	if errors.Is(err, pgx.ErrNoRows) {
		return EventDef{}, ErrEventNotFound
	}
	return d, wrap("update event", err)
}

// Event returns an event's definition, or ErrEventNotFound.
func (l *Ledger) Event(ctx context.Context, id string) (EventDef, error) {
	d, err := scanEvent(l.pool.QueryRow(ctx, `SELECT `+eventColumns+` FROM events WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return EventDef{}, ErrEventNotFound
	}
	return d, wrap("event", err)
}

// EventIDs returns the id of every event, sorted.
func (l *Ledger) EventIDs(ctx context.Context) ([]string, error) {
	rows, err := l.pool.Query(ctx, `SELECT id FROM events ORDER BY id`)
	ids, err := rowsOf(rows, err, pgx.RowTo[string])
	return ids, wrap("event ids", err)
}

// countRestore notes that the event's Redis state was rebuilt.
func (l *Ledger) countRestore(ctx context.Context, id string) error {
	_, err := l.pool.Exec(ctx, `UPDATE events SET restores = restores + 1, updated_at = now() WHERE id = $1`, id)
	return wrap("count restore", err)
}
