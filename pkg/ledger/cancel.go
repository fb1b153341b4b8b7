package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cancelling sold tickets: the ledger's side. CancelOrder records the
// intent (the cancellation's row and the seats' new status) in one
// transaction; the Canceller (canceller.go) then puts the seats back on
// sale in Redis, refunds the amount with the provider and publishes the
// facts, recording each step here, so that a cancellation interrupted
// anywhere is finished from its row.

// Sentinel errors of CancelOrder.
var (
	// ErrNotCancellable: the order is not a sold ticket (refund_due or
	// refunded: money taken without a ticket goes through the refunds).
	ErrNotCancellable = errors.New("the order is not a sold ticket")
	// ErrSeatNotInOrder: a seat named is not one of the order's (SeatError).
	ErrSeatNotInOrder = errors.New("seat not in the order")
	// ErrSeatCancelled: some of the seats named are cancelled already and
	// others are not (SeatError); naming only cancelled seats is a repeat.
	ErrSeatCancelled = errors.New("seat already cancelled")
)

// SeatError is ErrSeatNotInOrder or ErrSeatCancelled with the seats.
type SeatError struct {
	Err   error
	Seats []string
}

func (e *SeatError) Error() string { return e.Err.Error() + ": " + strings.Join(e.Seats, ", ") }
func (e *SeatError) Unwrap() error { return e.Err }

// Refund statuses of a cancellation.
const (
	RefundPending  = "pending"  // not confirmed by the provider yet (RefundError says why)
	RefundRefunded = "refunded" // the provider confirmed it
)

// Cancellation is one cancellation of some or all of an order's seats and
// its refund.
type Cancellation struct {
	ID        int64    `json:"cancellation_id"`
	OrderID   string   `json:"order_id"`
	EventID   string   `json:"event_id"`
	UserID    string   `json:"user_id"`
	PaymentID string   `json:"payment_id"`
	SeatIDs   []string `json:"seat_ids"`
	Amount    int64    `json:"amount"`
	Currency  string   `json:"currency"`
	// Whole: the order's last seats (the order is cancelled).
	Whole  bool   `json:"whole_order"`
	Reason string `json:"reason"`
	// Actor is who cancelled: the operator's account (empty in a fan's
	// view of the order).
	Actor string `json:"cancelled_by,omitempty"`
	// Released is when the seats went back on sale in Redis (nil: not yet).
	Released *time.Time `json:"released_at,omitempty"`
	// RefundStatus is RefundPending or RefundRefunded; RefundError the
	// provider's last refusal or failure while pending.
	RefundStatus   string     `json:"refund_status"`
	RefundError    string     `json:"refund_error,omitempty"`
	RefundAttempts int        `json:"refund_attempts"`
	RefundedAt     *time.Time `json:"refunded_at,omitempty"`
	// CancelledPublished and RefundPublished: Kafka acknowledged the
	// order_cancelled and refund_issued facts.
	CancelledPublished bool      `json:"-"`
	RefundPublished    bool      `json:"-"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

// Finished: every step is done.
func (c Cancellation) Finished() bool {
	return c.Released != nil && c.RefundStatus == RefundRefunded && c.CancelledPublished && c.RefundPublished
}

const cancellationColumns = `id, order_id, event_id, user_id, payment_id, seat_ids, amount, currency, whole, reason, actor,
	released_at, refund_status, refund_error, refund_attempts, refunded_at, cancelled_published, refund_published,
	created_at, updated_at`

func scanCancellation(row pgx.Row) (Cancellation, error) {
	var c Cancellation
	err := row.Scan(&c.ID, &c.OrderID, &c.EventID, &c.UserID, &c.PaymentID, &c.SeatIDs, &c.Amount, &c.Currency, &c.Whole,
		&c.Reason, &c.Actor, &c.Released, &c.RefundStatus, &c.RefundError, &c.RefundAttempts, &c.RefundedAt,
		&c.CancelledPublished, &c.RefundPublished, &c.CreatedAt, &c.UpdatedAt)
	return c, err
}

func scanCancellationRow(row pgx.CollectableRow) (Cancellation, error) { return scanCancellation(row) }

// CancelRequest asks to cancel seats of an order.
type CancelRequest struct {
	OrderID string
	// SeatIDs are the seats to cancel; none: every seat not cancelled yet.
	SeatIDs []string
	Reason  string
	Actor   string
}

// CancelResult is what CancelOrder did.
type CancelResult struct {
	// Order is the order after the cancellation, with its cancellations.
	Order Order
	// Cancellation is the one recorded, or, for a repeat, the latest of
	// the order's cancellations.
	Cancellation Cancellation
	// Created: a new cancellation was recorded; false: a repeat (every
	// seat named was cancelled already), nothing changed.
	Created bool
}

// CancelOrder records the cancellation of seats of a sold order, in one
// transaction under the order's row lock: the cancellation (its amount
// the seats' prices; the order's last seats get what is left of its
// amount, so the refunds add up to it), the seats' lines marked
// cancelled (free to sell again in the ledger) and, for the last seats,
// the order's status cancelled. Nothing in Redis or at the provider
// changes here (Canceller.Finish does that).
//
// A repeat (every seat named, or with none every seat, cancelled
// already) changes nothing and returns Created false. Errors:
// ErrOrderNotFound; ErrNotCancellable for an order that is not a sold
// ticket; a *SeatError of ErrSeatNotInOrder or ErrSeatCancelled (some of
// the seats named cancelled, others not).
func (l *Ledger) CancelOrder(ctx context.Context, req CancelRequest) (CancelResult, error) {
	if strings.TrimSpace(req.Reason) == "" {
		return CancelResult{}, errors.New("ledger: cancel order: a reason is required") // the facts carry it
	}
	var res CancelResult
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		// the lock first, then the order's lines in a statement of their
		// own: read in the locking statement, they would be those of its
		// snapshot, before a cancellation that held the lock
		if _, err := tx.Exec(ctx, `SELECT 1 FROM orders WHERE order_id = $1 FOR UPDATE`, req.OrderID); err != nil {
			return err
		}
		o, err := scanOrder(tx.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id = $1`, req.OrderID))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrOrderNotFound
		}
		if err != nil {
			return err
		}
		if o.Status != StatusCompleted && o.Status != StatusCancelled {
			return ErrNotCancellable
		}
		cancelled := func(s string) bool { return slices.Contains(o.CancelledSeatIDs, s) }
		seats := req.SeatIDs
		if len(seats) == 0 {
			for _, s := range o.SeatIDs {
				if !cancelled(s) {
					seats = append(seats, s)
				}
			}
		} else {
			var unknown, done []string
			for _, s := range seats {
				switch {
				case !slices.Contains(o.SeatIDs, s):
					unknown = append(unknown, s)
				case cancelled(s):
					done = append(done, s)
				}
			}
			if len(unknown) > 0 {
				return &SeatError{Err: ErrSeatNotInOrder, Seats: unknown}
			}
			if len(done) > 0 && len(done) < len(seats) {
				return &SeatError{Err: ErrSeatCancelled, Seats: done}
			}
			if len(done) == len(seats) {
				seats = nil // a repeat
			}
		}
		if len(seats) == 0 { // nothing left to cancel: a repeat
			res.Order = o
			return nil
		}
		whole := len(seats)+len(o.CancelledSeatIDs) == len(o.SeatIDs)
		var amount int64
		if whole {
			// what is left of the order's amount after earlier cancellations
			err = tx.QueryRow(ctx, `SELECT $2::bigint - COALESCE(SUM(amount), 0) FROM cancellations WHERE order_id = $1`,
				o.OrderID, o.Amount).Scan(&amount)
		} else {
			err = tx.QueryRow(ctx, `SELECT COALESCE(SUM(price_cents), 0) FROM order_seats WHERE order_id = $1 AND seat_id = ANY($2)`,
				o.OrderID, seats).Scan(&amount)
		}
		if err != nil {
			return err
		}
		c, err := scanCancellation(tx.QueryRow(ctx, `INSERT INTO cancellations
			(order_id, event_id, user_id, payment_id, seat_ids, amount, currency, whole, reason, actor)
			VALUES ($1, $2, $3, $4, $5, GREATEST($6::bigint, 0), $7, $8, $9, $10) RETURNING `+cancellationColumns,
			o.OrderID, o.EventID, o.UserID, o.PaymentID, seats, amount, o.Currency, whole, req.Reason, req.Actor))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE order_seats SET status = 'cancelled' WHERE order_id = $1 AND seat_id = ANY($2)`,
			o.OrderID, seats); err != nil {
			return err
		}
		status := StatusCompleted
		if whole {
			status = StatusCancelled
		}
		if _, err := tx.Exec(ctx, `UPDATE orders SET status = $2, updated_at = now() WHERE order_id = $1`, o.OrderID, status); err != nil {
			return err
		}
		res.Cancellation, res.Created = c, true
		return nil
	})
	if err != nil {
		var se *SeatError
		if errors.Is(err, ErrOrderNotFound) || errors.Is(err, ErrNotCancellable) || errors.As(err, &se) {
			return CancelResult{}, err
		}
		return CancelResult{}, wrap("cancel order", err)
	}
	o, err := l.Order(ctx, req.OrderID)
	if err != nil {
		return CancelResult{}, err
	}
	res.Order = o
	if !res.Created && len(o.Cancellations) > 0 {
		res.Cancellation = o.Cancellations[len(o.Cancellations)-1]
	}
	return res, nil
}

// Cancellation returns a cancellation by id, or ErrOrderNotFound.
func (l *Ledger) Cancellation(ctx context.Context, id int64) (Cancellation, error) {
	c, err := scanCancellation(l.pool.QueryRow(ctx, `SELECT `+cancellationColumns+` FROM cancellations WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Cancellation{}, ErrOrderNotFound
	}
	return c, wrap("cancellation", err)
}

// OrderCancellations returns the cancellations of an order, oldest first.
func (l *Ledger) OrderCancellations(ctx context.Context, orderID string) ([]Cancellation, error) {
	rows, err := l.pool.Query(ctx, `SELECT `+cancellationColumns+` FROM cancellations WHERE order_id = $1 ORDER BY id`, orderID)
	out, err := rowsOf(rows, err, scanCancellationRow)
	return out, wrap("order cancellations", err)
}

// OpenCancellations returns cancellations with a step left whose last
// change is older than age, oldest first, at most limit. The age doubles
// with each failed refund attempt, up to 64 times: a refund the provider
// keeps refusing is asked again less and less often.
func (l *Ledger) OpenCancellations(ctx context.Context, age time.Duration, limit int) ([]Cancellation, error) {
	rows, err := l.pool.Query(ctx, `SELECT `+cancellationColumns+` FROM cancellations
		WHERE (released_at IS NULL OR refund_status <> 'refunded' OR NOT cancelled_published OR NOT refund_published)
			AND updated_at < now() - make_interval(secs => $1 * power(2, LEAST(refund_attempts, 6)))
		ORDER BY updated_at, id LIMIT $2`, age.Seconds(), limit)
	out, err := rowsOf(rows, err, scanCancellationRow)
	return out, wrap("open cancellations", err)
}

// withCancellations fills the orders' Cancellations (one query).
func (l *Ledger) withCancellations(ctx context.Context, orders []Order) error {
	var ids []string
	for _, o := range orders {
		if len(o.CancelledSeatIDs) > 0 {
			ids = append(ids, o.OrderID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := l.pool.Query(ctx, `SELECT `+cancellationColumns+` FROM cancellations WHERE order_id = ANY($1) ORDER BY id`, ids)
	cs, err := rowsOf(rows, err, scanCancellationRow)
	if err != nil {
		return wrap("order cancellations", err)
	}
	for i := range orders {
		for _, c := range cs {
			if c.OrderID == orders[i].OrderID {
				orders[i].Cancellations = append(orders[i].Cancellations, c)
			}
		}
	}
	return nil
}

// cancellationStep records one step of a cancellation; set is the SQL
// of the columns it sets.
func (l *Ledger) cancellationStep(ctx context.Context, op string, id int64, set string, args ...any) (Cancellation, error) {
	c, err := scanCancellation(l.pool.QueryRow(ctx, `UPDATE cancellations SET `+set+`, updated_at = now()
		WHERE id = $1 RETURNING `+cancellationColumns, append([]any{id}, args...)...))
	if errors.Is(err, pgx.ErrNoRows) {
		return Cancellation{}, ErrOrderNotFound
	}
	return c, wrap(op, err)
}

// MarkReleased records that the cancellation's seats are back on sale in
// Redis (the first time counts).
func (l *Ledger) MarkReleased(ctx context.Context, id int64) (Cancellation, error) {
	return l.cancellationStep(ctx, "mark released", id, `released_at = COALESCE(released_at, now())`)
}

// MarkRefundFailed records a refund the provider refused or did not
// confirm: it stays pending, with the reason.
func (l *Ledger) MarkRefundFailed(ctx context.Context, id int64, reason string) (Cancellation, error) {
	// text PostgreSQL takes whatever the provider said: valid UTF-8, no NUL
	reason = strings.ToValidUTF8(strings.ReplaceAll(reason, "\x00", ""), "")
	if len(reason) > 500 {
		reason = strings.ToValidUTF8(reason[:500], "")
	}
	return l.cancellationStep(ctx, "mark refund failed", id,
		`refund_attempts = refund_attempts + 1, refund_error = CASE WHEN refund_status = 'pending' THEN $2 ELSE refund_error END`, reason)
}

// MarkCancellationRefunded records the provider's confirmation of the
// refund (the first time counts).
func (l *Ledger) MarkCancellationRefunded(ctx context.Context, id int64) (Cancellation, error) {
	return l.cancellationStep(ctx, "mark cancellation refunded", id, `refund_attempts = refund_attempts + CASE WHEN refund_status = 'pending' THEN 1 ELSE 0 END,
		refund_status = 'refunded', refund_error = '', refunded_at = COALESCE(refunded_at, now())`)
}

// MarkPublished records Kafka's acknowledgement of the cancellation's
// order_cancelled fact (refund false) or refund_issued fact (refund true).
func (l *Ledger) MarkPublished(ctx context.Context, id int64, refund bool) (Cancellation, error) {
	col := "cancelled_published"
	if refund {
		col = "refund_published"
	}
	return l.cancellationStep(ctx, "mark published", id, fmt.Sprintf("%s = true", col))
}
