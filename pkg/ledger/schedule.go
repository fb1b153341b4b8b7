package ledger

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// ScheduleActor is the actor of the phase changes a schedule makes.
const ScheduleActor = "schedule"

// ReconcileActor is the actor of a phase change or seat-mark change the
// reconciliation records: one Redis took whose ledger record was lost
// (Ledger.KeepPhase, Ledger.KeepMarks).
const ReconcileActor = "reconcile"

// SetSchedule checks sch against the event's definition
// (booking.CheckSchedule), records it for the event and calls apply (the
// schedule into Redis, booking.Store.SetSchedule) in the same
// transaction: a schedule refused, by the check or by Redis, changes
// nothing. An empty list of phases removes the schedule. sch's
// OnPhaseChange, when given, is the event's setting from then on (the
// events row's on_phase_change, which UpdateEvent also sets; a change
// moves the event's revision as UpdateEvent's do); left out, the event's
// setting stands. apply gets the change's settings revision, as
// UpdateEvent's does, so that a schedule Redis took and the ledger then
// did not commit is undone in Redis (SettleSettings, or the next
// change). It returns the schedule as saved (defaults filled).
// ErrEventNotFound; *booking.ScheduleError for a rule broken.
func (l *Ledger) SetSchedule(ctx context.Context, eventID string, sch booking.Schedule, actor string,
	apply func(ctx context.Context, def booking.EventConfig, sch booking.Schedule, revision int64) error) (booking.Schedule, error) {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		def, err := scanEvent(tx.QueryRow(ctx, `SELECT `+eventColumns+` FROM events WHERE id = $1 FOR UPDATE`, eventID))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrEventNotFound
		}
		if err != nil {
			return err
		}
		given := sch.OnPhaseChange != ""
		if !given {
			sch.OnPhaseChange = def.Config.OnPhaseChange
		}
		if err := booking.CheckSchedule(def.Config, &sch); err != nil {
			return err
		}
		if given && sch.OnPhaseChange != def.Config.OnPhaseChange {
			// a settings change like UpdateEvent's: the revision moves
			if _, err := tx.Exec(ctx, `UPDATE events SET on_phase_change = $2, updated_at = now(),
				revision = revision + 1, last_change = $3, changed_at = now() WHERE id = $1`,
				eventID, sch.OnPhaseChange, settingsChange(def, booking.EventUpdate{OnPhaseChange: &sch.OnPhaseChange})); err != nil {
				return err
			}
			if err := recordChange(ctx, tx, eventID); err != nil {
				return err
			}
		}
		if len(sch.Phases) == 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM event_phase_schedules WHERE event_id = $1`, eventID); err != nil {
				return err
			}
		} else {
			js, err := json.Marshal(sch)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO event_phase_schedules (event_id, schedule, actor) VALUES ($1, $2, $3)
				ON CONFLICT (event_id) DO UPDATE SET schedule = EXCLUDED.schedule, actor = EXCLUDED.actor, updated_at = now()`,
				eventID, js, actor); err != nil {
				return err
			}
		}
		rev, err := nextSettingsRev(ctx, tx, eventID)
		if err != nil {
			return err
		}
		return apply(ctx, def.Config, sch, rev)
	})
	if _, ok := booking.IsScheduleError(err); ok || errors.Is(err, ErrEventNotFound) {
		return booking.Schedule{}, err
	}
	if err != nil {
		return booking.Schedule{}, wrap("set schedule", err)
	}
	return sch, nil
}

// Schedule returns the event's schedule (no phases: none) with the
// event's on_phase_change setting.
func (l *Ledger) Schedule(ctx context.Context, eventID string) (booking.Schedule, error) {
	var js []byte
	var setting *string
	err := l.pool.QueryRow(ctx, `SELECT s.schedule, e.on_phase_change FROM (SELECT $1::text AS id) k
		LEFT JOIN events e ON e.id = k.id LEFT JOIN event_phase_schedules s ON s.event_id = k.id`, eventID).Scan(&js, &setting)
	if err != nil {
		return booking.Schedule{}, wrap("schedule", err)
	}
	sch := booking.Schedule{Phases: []booking.Phase{}}
	if js != nil {
		if err := json.Unmarshal(js, &sch); err != nil {
			return booking.Schedule{}, wrap("schedule", err)
		}
	}
	sch.OnPhaseChange = booking.PhaseChangeKeep
	if setting != nil {
		sch.OnPhaseChange = *setting
	}
	return sch, nil
}

// ScheduledEvents returns the ids of the events with a schedule whose
// last phase has not ended by the ledger's clock (plus a minute, so a
// boundary is never missed for a clock's difference), sorted.
func (l *Ledger) ScheduledEvents(ctx context.Context) ([]string, error) {
	rows, err := l.pool.Query(ctx, `SELECT event_id FROM event_phase_schedules
		WHERE (schedule->'phases'->-1->>'ends_at')::timestamptz > now() - interval '1 minute'
		ORDER BY event_id`)
	ids, err := rowsOf(rows, err, pgx.RowTo[string])
	return ids, wrap("scheduled events", err)
}

// PhaseSales is what one phase of an event's sale sold: its completed
// orders' seats (less the cancelled) and their prices, per currency.
type PhaseSales struct {
	Phase    string `json:"phase"`
	Currency string `json:"currency"`
	Orders   int64  `json:"orders"`
	Seats    int64  `json:"seats"`
	Revenue  int64  `json:"revenue"`
}

// SalesByPhase returns the event's sold seats and revenue per phase (the
// phase current at each sale), by phase then currency.
func (l *Ledger) SalesByPhase(ctx context.Context, eventID string) ([]PhaseSales, error) {
	return salesBy[PhaseSales](ctx, l, "phase", eventID)
}

// salesBy is the event's sold seats and revenue grouped by an orders
// column (phase, channel), in the order of each group's first sale,
// then currency; T is a struct of that column, currency, orders, seats
// and revenue.
func salesBy[T any](ctx context.Context, l *Ledger, column, eventID string) ([]T, error) {
	rows, err := l.pool.Query(ctx, `SELECT o.`+column+`, o.currency, count(DISTINCT o.order_id), count(*), COALESCE(sum(os.price_cents), 0)
		FROM orders o JOIN order_seats os ON os.order_id = o.order_id
		WHERE o.event_id = $1 AND os.status = 'completed'
		GROUP BY o.`+column+`, o.currency ORDER BY min(o.created_at), o.`+column+`, o.currency`, eventID)
	out, err := rowsOf(rows, err, pgx.RowToStructByPos[T])
	if out == nil {
		out = []T{}
	}
	return out, wrap("sales by "+column, err)
}

// scheduleFits checks the event's saved schedule (none: nothing to check)
// against its definition c with u's sales window, as SetSchedule would
// check it: a window a saved phase would fall outside of is refused with
// the schedule's error, so no event keeps a schedule its own save would
// refuse.
func scheduleFits(ctx context.Context, tx pgx.Tx, c booking.EventConfig, u booking.EventUpdate) error {
	var js []byte
	err := tx.QueryRow(ctx, `SELECT schedule FROM event_phase_schedules WHERE event_id = $1`, c.ID).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var sch booking.Schedule
	if err := json.Unmarshal(js, &sch); err != nil {
		return err
	}
	if len(sch.Phases) == 0 {
		return nil
	}
	if u.SalesStart != nil {
		c.SalesStart = *u.SalesStart
	}
	if u.SalesEnd != nil {
		c.SalesEnd = *u.SalesEnd
	}
	err = booking.CheckSchedule(c, &sch)
	if se, ok := booking.IsScheduleError(err); ok {
		return &booking.ScheduleError{Code: se.Code, Msg: "the event's schedule would not fit the new sales window (" + se.Msg +
			"): change the schedule first"}
	}
	return err
}
