package operators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// Action is one record of the audit trail: Actor (an account, "jwt:<sub>"
// for a bearer JWT, "cli:<user>" for the operators command) with Role,
// signed in Via, did Action ("event.update") at At from RemoteAddr, to
// EventID (a concert, or none) and Target (an order, an account, a
// token), changing Before into After (JSON objects of the values the
// action changed; nil for none). ID numbers the records; it and At are
// set when the record is written.
type Action struct {
	ID         int64           `json:"id"`
	At         time.Time       `json:"at"`
	Actor      string          `json:"actor"`
	Via        string          `json:"via"`
	Role       Role            `json:"role"`
	Action     string          `json:"action"`
	EventID    string          `json:"event_id,omitempty"`
	Target     string          `json:"target,omitempty"`
	RemoteAddr string          `json:"remote_addr,omitempty"`
	RequestID  string          `json:"request_id,omitempty"`
	Before     json.RawMessage `json:"before,omitempty"`
	After      json.RawMessage `json:"after,omitempty"`
	// Intent is the request's write-ahead entry (Begin), removed with the
	// record's write; 0: none (a record the system makes on its own).
	Intent int64 `json:"-"`
}

// The actions recorded today (docs/operators.md); a new admin route adds
// its own name here.
const (
	ActionEventCreate     = "event.create"
	ActionEventUpdate     = "event.update"
	ActionEventRestore    = "event.restore"
	ActionOrderRefund     = "order.refund"
	ActionOrderCancel     = "order.cancel"
	ActionAccountCreate   = "account.create"
	ActionAccountUpdate   = "account.update"
	ActionAccountPassword = "account.password"
	ActionTokenIssue      = "token.issue"
	ActionTokenRevoke     = "token.revoke"
	ActionSessionRevoke   = "session.revoke"
	ActionSeatsHold       = "seats.hold"
	ActionSeatsKill       = "seats.kill"
	ActionSeatsRelease    = "seats.release"
	// ActionSeatsAllocate: seats allocated to a sales channel
	// (POST /api/admin/events/{id}/seat-marks, action allocate).
	ActionSeatsAllocate = "seats.allocate"
	// ActionSeatsKind: seats' accessibility kind set or cleared
	// (POST /api/admin/events/{id}/seat-marks, action set_kind).
	ActionSeatsKind = "seats.kind"
	// ActionAllocationRelease: a channel's allocation ended by an
	// operator (POST /api/admin/events/{id}/allocations/{channel}/release).
	ActionAllocationRelease = "allocation.release"
	// ActionProviderDeclare: the payment provider declared degraded or
	// recovered for the deployment (PUT /api/admin/provider).
	ActionProviderDeclare = "provider.declare"
	// ActionCodesCreate: a batch of access codes generated for an event
	// (POST /api/admin/events/{id}/codes).
	ActionCodesCreate = "codes.create"
	// ActionPhaseSet: the sale's current phase changed
	// (PUT /api/admin/events/{id}/phase).
	ActionPhaseSet = "phase.set"
	// ActionPhaseSchedule: an event's schedule of phases saved
	// (PUT /api/admin/events/{id}/phases); the changes it makes are
	// phase.set by actor schedule, via system.
	ActionPhaseSchedule = "phase.schedule"
	// ActionRegistrationOpen: an event's registration window set
	// (PUT /api/admin/events/{id}/registration).
	ActionRegistrationOpen = "registration.open"
	// ActionSelectionDraw: the registration's selection drawn
	// (POST /api/admin/events/{id}/registration/draw).
	ActionSelectionDraw = "selection.draw"
	// ActionDrawBeacon: the pre-queue's draw committed to a randomness
	// beacon's round, or the round's value supplied
	// (PUT /api/admin/events/{id}/beacon).
	ActionDrawBeacon = "draw.beacon"
	// ActionBoxOfficeSell: seats sold at the box office to a walk-up
	// customer (POST /api/admin/events/{id}/box-office/sales); the
	// target is the order.
	ActionBoxOfficeSell = "boxoffice.sell"
)

// Object marshals v (a map or struct) for Before and After.
func Object(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) == 0 || b[0] != '{' {
		panic(fmt.Sprintf("operators: before/after must be a JSON object, got %T", v)) // a programming error
	}
	return b
}

// Fact is the record's operator_action fact for Kafka.
func (a Action) Fact() events.Event {
	return events.OperatorAction(a.ID, a.At, a.Actor, a.Via, string(a.Role), a.Action, a.EventID, a.Target, a.RemoteAddr,
		a.Before, a.After)
}

const actionColumns = `id, at, actor, via, role, action, event_id, target, remote_addr, request_id, before, after`

func scanAction(row pgx.Row) (Action, error) {
	var a Action
	err := row.Scan(&a.ID, &a.At, &a.Actor, &a.Via, &a.Role, &a.Action, &a.EventID, &a.Target, &a.RemoteAddr,
		&a.RequestID, &a.Before, &a.After)
	if errors.Is(err, pgx.ErrNoRows) {
		return Action{}, ErrNotFound
	}
	a.At = a.At.UTC()
	return a, err
}

// Record appends a to the audit trail and, in the same transaction, to
// the outbox of facts to publish (Publisher), and removes a's Intent. It
// returns the record as written (ID, At). The record is never changed
// afterwards: the table refuses UPDATE, DELETE and TRUNCATE.
func (s *Store) Record(ctx context.Context, a Action) (Action, error) {
	if a.Actor == "" || a.Via == "" || a.Role == "" || a.Action == "" {
		return Action{}, fmt.Errorf("%w: an audit record needs actor, via, role and action", ErrInvalid)
	}
	var out Action
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanAction(tx.QueryRow(ctx, `INSERT INTO operator_actions
			(at, actor, via, role, action, event_id, target, remote_addr, request_id, before, after)
			VALUES (date_trunc('milliseconds', $1::timestamptz), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			RETURNING `+actionColumns,
			s.now().UTC(), a.Actor, a.Via, a.Role, a.Action, a.EventID, a.Target, a.RemoteAddr, a.RequestID,
			nullJSON(a.Before), nullJSON(a.After)))
		if err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `INSERT INTO operator_action_outbox (action_id) VALUES ($1)`, out.ID); err != nil {
			return err
		}
		if a.Intent != 0 {
			_, err = tx.Exec(ctx, `DELETE FROM operator_action_intents WHERE id = $1`, a.Intent)
		}
		return err
	})
	return out, wrap("record action", err)
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// AuditFilter selects records: each set field must match. Records come
// newest first; Cursor continues a page (the NextCursor of the previous
// one).
type AuditFilter struct {
	Actor   string
	EventID string
	NoEvent bool // records of no event (accounts, tokens)
	Action  string
	After   time.Time // records at or after
	Before  time.Time // records before
	Cursor  int64     // records numbered below
	Limit   int       // default 100, at most MaxAuditPage
}

// MaxAuditPage bounds a page of the audit trail.
const MaxAuditPage = 500

// Audit returns the records f selects, newest first, and the cursor of
// the next page (0 when this one is the last).
func (s *Store) Audit(ctx context.Context, f AuditFilter) ([]Action, int64, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, MaxAuditPage)
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Actor != "" {
		add("actor = $%d", f.Actor)
	}
	if f.EventID != "" {
		add("event_id = $%d", f.EventID)
	}
	if f.NoEvent {
		where = append(where, "event_id = ''")
	}
	if f.Action != "" {
		add("action = $%d", f.Action)
	}
	if !f.After.IsZero() {
		add("at >= $%d", f.After)
	}
	if !f.Before.IsZero() {
		add("at < $%d", f.Before)
	}
	if f.Cursor > 0 {
		add("id < $%d", f.Cursor)
	}
	q := `SELECT ` + actionColumns + ` FROM operator_actions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, f.Limit+1)
	q += fmt.Sprintf(` ORDER BY id DESC LIMIT $%d`, len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, wrap("audit", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Action, error) { return scanAction(r) })
	if err != nil {
		return nil, 0, wrap("audit", err)
	}
	var next int64
	if len(out) > f.Limit {
		out = out[:f.Limit]
		next = out[len(out)-1].ID
	}
	return out, next, nil
}
