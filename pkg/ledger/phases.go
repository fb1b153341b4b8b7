package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// PhaseChange is one change of an event's current phase (table
// event_phase_changes): the phase and audience from then on, the phase
// before, by whom and when.
type PhaseChange struct {
	ID       int64     `json:"change_id"`
	EventID  string    `json:"event_id"`
	Phase    string    `json:"phase"`
	Audience string    `json:"audience"`
	Previous string    `json:"previous_phase"`
	Actor    string    `json:"actor"`
	At       time.Time `json:"at"`
}

// Facts are the change's phase_ended (when a phase ended) and
// phase_started (when one started) facts.
func (p PhaseChange) Facts() []events.Event {
	var out []events.Event
	if p.Previous != "" && p.Previous != p.Phase {
		out = append(out, events.PhaseEnded(p.ID, p.EventID, p.Actor, p.Previous, p.At))
	}
	if p.Phase != "" {
		out = append(out, events.PhaseStarted(p.ID, p.EventID, p.Actor, p.Phase, p.Audience, p.At))
	}
	return out
}

// SetPhase records that actor made p the event's current phase and calls
// apply (the change in Redis, booking.Store.SetPhase, which answers the
// phase before and whether anything changed) inside the same
// transaction: a change Redis refuses records nothing, and a repeat
// records nothing (ID 0). A phase Redis had before the change that the
// ledger lacks (a change whose transaction rolled back) is recorded
// first, by ReconcileActor, so every phase ended was started in the
// record. ErrEventNotFound when the event is not in the ledger.
func (l *Ledger) SetPhase(ctx context.Context, eventID string, p booking.PhaseState, actor string,
	apply func(context.Context) (booking.PhaseState, bool, error)) (PhaseChange, error) {
	return l.ApplyPhase(ctx, eventID, actor, func(ctx context.Context) (booking.PhaseState, booking.PhaseState, bool, error) {
		prev, changed, err := apply(ctx)
		return prev, p, changed, err
	})
}

// ApplyPhase is SetPhase for a change whose phase apply decides (the
// schedule's, booking.Store.ApplySchedule): apply answers the phase
// before, the phase from then on and whether it changed, and runs while
// the event's row is locked, so of several gateways applying one
// boundary at once the change is recorded once.
func (l *Ledger) ApplyPhase(ctx context.Context, eventID, actor string,
	apply func(context.Context) (prev, next booking.PhaseState, changed bool, err error)) (PhaseChange, error) {
	res := PhaseChange{EventID: eventID, Actor: actor}
	kept := 0
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := lockEvent(ctx, tx, eventID); err != nil {
			return err
		}
		prev, next, changed, err := apply(ctx)
		res.Phase, res.Audience = next.Phase, next.Audience
		if err != nil {
			return err
		}
		last, err := lastPhase(ctx, tx, eventID)
		if err != nil {
			return err
		}
		switch {
		case !changed && last == next:
			return nil // a repeat of a recorded change
		case !changed:
			// Redis had the phase already: a change whose transaction
			// rolled back after Redis took it, repeated
			prev = last
		case last != prev:
			// Redis's phase before this change is one the ledger lacks
			// (a change whose transaction rolled back, not repeated):
			// recorded first, as the reconciliation would
			lost := PhaseChange{EventID: eventID, Phase: prev.Phase, Audience: prev.Audience, Actor: ReconcileActor}
			if err := recordPhase(ctx, tx, &lost, last); err != nil {
				return err
			}
			kept = 1
		}
		return recordPhase(ctx, tx, &res, prev)
	})
	if errors.Is(err, ErrEventNotFound) {
		return PhaseChange{}, err
	}
	if err != nil {
		return PhaseChange{}, wrap("set phase", err)
	}
	l.countRecorded("phase", kept)
	return res, nil
}

// lastPhase is the event's current phase by the ledger: its last change
// (none: no phase, open to the public).
func lastPhase(ctx context.Context, tx pgx.Tx, eventID string) (booking.PhaseState, error) {
	p := booking.PhaseState{Audience: booking.AudiencePublic}
	err := tx.QueryRow(ctx, `SELECT phase, audience FROM event_phase_changes WHERE event_id = $1
		ORDER BY id DESC LIMIT 1`, eventID).Scan(&p.Phase, &p.Audience)
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	return p, err
}

// recordPhase records the change res (its event, phase, audience and
// actor) from prev in tx, numbering it (res.ID, res.At).
func recordPhase(ctx context.Context, tx pgx.Tx, res *PhaseChange, prev booking.PhaseState) error {
	res.Previous = prev.Phase
	return tx.QueryRow(ctx, `INSERT INTO event_phase_changes (event_id, phase, audience, previous_phase, actor)
		VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at`, res.EventID, res.Phase, res.Audience, res.Previous, res.Actor).
		Scan(&res.ID, &res.At)
}

// KeepPhase records the phase Redis has when the ledger's last change
// says another (actor ReconcileActor): a change Redis took whose ledger
// transaction rolled back and that nobody repeated. Fans joined and
// bought in it, and a rebuild keeps the ledger's phase, so the ledger
// takes Redis's. It holds the event's row, so no change is under way;
// when another transaction holds it, it does nothing this time. ID 0:
// nothing recorded.
func (l *Ledger) KeepPhase(ctx context.Context, store *booking.Store, eventID string) (PhaseChange, error) {
	res := PhaseChange{EventID: eventID, Actor: ReconcileActor}
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if free, err := lockEventIfFree(ctx, tx, eventID); !free || err != nil {
			return err
		}
		e, err := store.GetEvent(ctx, eventID)
		if err != nil {
			return err
		}
		prev, err := lastPhase(ctx, tx, eventID)
		if err != nil {
			return err
		}
		res.Phase, res.Audience = e.Phase, e.Audience
		if prev == (booking.PhaseState{Phase: e.Phase, Audience: e.Audience}) {
			return nil
		}
		return recordPhase(ctx, tx, &res, prev)
	})
	if err != nil {
		return PhaseChange{}, wrap("keep phase", err)
	}
	return res, nil
}

// Phases returns the event's phase changes, oldest first (the last is the
// current phase; none: no phase, open to the public).
func (l *Ledger) Phases(ctx context.Context, eventID string) ([]PhaseChange, error) {
	return l.phaseChanges(ctx, `WHERE event_id = $1 ORDER BY id`, eventID)
}

func (l *Ledger) phaseChanges(ctx context.Context, where string, args ...any) ([]PhaseChange, error) {
	rows, err := l.pool.Query(ctx, `SELECT id, event_id, phase, audience, previous_phase, actor, created_at
		FROM event_phase_changes `+where, args...)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (PhaseChange, error) {
		var p PhaseChange
		err := r.Scan(&p.ID, &p.EventID, &p.Phase, &p.Audience, &p.Previous, &p.Actor, &p.At)
		return p, err
	})
	return out, wrap("phase changes", err)
}

// PhasePublisher publishes the facts of phase changes: at once (Publish,
// by the request that made the change) and, on a tick (Run), every fact a
// crash or a Kafka outage left (Sweep). A fact published twice has the
// same id (built from the change's number).
type PhasePublisher struct {
	Ledger *Ledger
	Kafka  publisher
	Log    *zap.Logger
	// Age is how long a change is left to its request before a sweep
	// takes it (default 5 s).
	Age time.Duration
}

// Publish publishes p's facts and records Kafka's acknowledgement.
func (pp *PhasePublisher) Publish(ctx context.Context, p PhaseChange) error {
	for _, f := range p.Facts() {
		if err := pp.Kafka.Publish(ctx, f); err != nil {
			return fmt.Errorf("ledger: publish %s: %w", f.Type, err)
		}
	}
	_, err := pp.Ledger.pool.Exec(ctx, `UPDATE event_phase_changes SET published = true WHERE id = $1`, p.ID)
	return wrap("phase change published", err)
}

// Sweep publishes every change's facts not acknowledged yet; it returns
// how many changes.
func (pp *PhasePublisher) Sweep(ctx context.Context) (int, error) {
	age := sweepGrace(pp.Age)
	return publishAll(ctx, func() ([]PhaseChange, error) {
		return pp.Ledger.phaseChanges(ctx, `WHERE NOT published AND created_at < now() - make_interval(secs => $1)
			ORDER BY id LIMIT 100`, age.Seconds())
	}, pp.Publish)
}

// Run sweeps every interval until ctx ends.
func (pp *PhasePublisher) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, pp.Log, "phase facts", pp.Sweep)
}
