package operators

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// ActionInterrupted is the record of an admin request that stopped
// between acting and writing its own record (a gateway killed, PostgreSQL
// lost mid-request, an answer of 5xx): who called what, when, and that
// the outcome is unknown. Written by Settle from the request's Intent.
const ActionInterrupted = "request.interrupted"

// DefaultIntentAge is how old an intent must be before Settle takes it:
// far longer than any admin request runs, so a request still at work is
// never recorded as interrupted.
const DefaultIntentAge = 10 * time.Minute

// Intent is the audit trail's write-ahead entry for an admin request that
// may change something: Begin writes it before the request acts; Record
// (the request's Action with Intent set) removes it in the transaction
// that writes the record, and Discard when the request ends having
// changed nothing. One still there after DefaultIntentAge is a request
// that stopped partway: Settle records it as ActionInterrupted, so a
// change is never missing from the trail.
type Intent struct {
	Actor      string
	Via        string
	Role       Role
	Method     string // "PATCH"
	Route      string // "/api/admin/events/:id"
	Path       string // "/api/admin/events/e1"
	EventID    string
	RemoteAddr string
	RequestID  string
}

// Begin writes in and returns its id, for Action.Intent and Discard.
func (s *Store) Begin(ctx context.Context, in Intent) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO operator_action_intents
		(at, actor, via, role, method, route, path, event_id, remote_addr, request_id)
		VALUES (date_trunc('milliseconds', $1::timestamptz), $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
		s.now().UTC(), in.Actor, in.Via, in.Role, in.Method, in.Route, in.Path, in.EventID, in.RemoteAddr,
		in.RequestID).Scan(&id)
	return id, wrap("begin action", err)
}

// Discard removes intent id: its request ended having changed nothing.
func (s *Store) Discard(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM operator_action_intents WHERE id = $1`, id)
	return wrap("discard intent", err)
}

// Settle records every intent older than age (DefaultIntentAge when 0)
// as an ActionInterrupted record at the time the request began, Target
// its path, After {"method", "route", "outcome": "unknown"}, and removes
// it, in batches of one transaction each (the record's fact goes to the
// outbox with it, as Record's does). Gateways may settle at once: each
// takes the intents no one else holds. It returns the records' ids.
func (s *Store) Settle(ctx context.Context, age time.Duration) ([]int64, error) {
	if age <= 0 {
		age = DefaultIntentAge
	}
	cutoff := s.now().UTC().Add(-age)
	var all []int64
	for {
		var ids []int64
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `WITH gone AS (
					DELETE FROM operator_action_intents WHERE id IN (
						SELECT id FROM operator_action_intents WHERE at < $1 ORDER BY id
						LIMIT `+strconv.Itoa(sweepBatch)+` FOR UPDATE SKIP LOCKED)
					RETURNING *
				), recs AS (
					INSERT INTO operator_actions (at, actor, via, role, action, event_id, target, remote_addr, request_id, after)
					SELECT at, actor, via, role, $2, event_id, path, remote_addr, request_id,
						jsonb_build_object('method', method, 'route', route, 'outcome', 'unknown')
					FROM gone ORDER BY id
					RETURNING id
				)
				INSERT INTO operator_action_outbox (action_id) SELECT id FROM recs RETURNING action_id`,
				cutoff, ActionInterrupted)
			if err != nil {
				return err
			}
			ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			return err
		})
		all = append(all, ids...)
		if err != nil || len(ids) < sweepBatch {
			return all, wrap("settle intents", err)
		}
	}
}
