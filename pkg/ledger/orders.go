package ledger

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// Order statuses.
const (
	StatusCompleted = "completed"  // a sold ticket
	StatusRefundDue = "refund_due" // money taken, no ticket: to be refunded
	StatusRefunded  = "refunded"   // the refund was made
	// StatusCancelled: every seat of a sold ticket was cancelled
	// (cancel.go); a partly cancelled order stays completed.
	StatusCancelled = "cancelled"
)

// Payment outcomes (payments.outcome).
const (
	OutcomeInitiated = "initiated"
	OutcomeSucceeded = "succeeded"
	OutcomeLate      = "late"
	OutcomeFailed    = "failed"
)

// Refund reasons of a refund_due order.
const (
	RefundLate       = "late_payment"      // the hold was released before the payment landed
	RefundSeatTaken  = "seat_already_sold" // the ledger had the seat sold to another order
	RefundNoBooking  = "no_booking"        // Redis had no booking for it (state lost)
	RefundByOperator = "operator"
)

// Payment is a payment id the gateway issued and what became of it.
type Payment struct {
	PaymentID string `json:"payment_id"`
	EventID   string `json:"event_id"`
	UserID    string `json:"user_id"`
	SeatID    string `json:"seat_id"`
	Sequence  int64  `json:"sequence"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	// SeatPrices are what Amount charges each seat, in the order of the
	// seats, when they add up to it (nil otherwise): the order's lines
	// keep them, whatever the prices when the payment completes.
	SeatPrices []int64   `json:"-"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// FailedAt is the time of the payment's payment_failed as its first
	// failure fixed it (Facts): when Redis released the hold (nil: no
	// failure released one, or it was recorded before the ledger kept it).
	FailedAt *time.Time `json:"-"`
}

// Order is one successful payment: a ticket, or a refund due.
type Order struct {
	OrderID   string `json:"order_id"`
	PaymentID string `json:"payment_id"`
	EventID   string `json:"event_id"`
	UserID    string `json:"user_id"`
	SeatID    string `json:"seat_id"` // the seats joined by ',' (one seat: its id)
	// SeatIDs and SeatPrices are the order's lines (order_seats), one per seat.
	SeatIDs      []string   `json:"seat_ids"`
	SeatPrices   []int64    `json:"seat_prices"`
	Sequence     int64      `json:"sequence"`
	Amount       int64      `json:"amount"`
	Currency     string     `json:"currency"`
	Status       string     `json:"status"`
	RefundReason string     `json:"refund_reason,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	RefundedAt   *time.Time `json:"refunded_at,omitempty"`
	// Phase is the sale's phase current when it was sold ("" none).
	Phase string `json:"phase,omitempty"`
	// Channel is the channel a box-office sale went through ("" an order
	// of a fan through the queue), SoldBy the operator's account who sold
	// it, CustomerRef the walk-up customer's reference the operator gave.
	Channel     string `json:"channel,omitempty"`
	SoldBy      string `json:"sold_by,omitempty"`
	CustomerRef string `json:"customer_ref,omitempty"`
	// CancelledSeatIDs are the seats of the order that were cancelled
	// (all of them when Status is cancelled), Cancellations what each
	// cancellation and its refund became (cancel.go), oldest first.
	CancelledSeatIDs []string       `json:"cancelled_seat_ids,omitempty"`
	Cancellations    []Cancellation `json:"cancellations,omitempty"`
	// Fact, FactAt and SoldOutAt are the order's facts as RecordSale
	// fixed them (Facts): the fact's type ("" for orders written before
	// facts were recorded with them), its time, and the event_sold_out
	// its sale caused (nil: none).
	Fact      string     `json:"-"`
	FactAt    *time.Time `json:"-"`
	SoldOutAt *time.Time `json:"-"`
}

// ErrPaymentNotFound is returned by Payment for an id never issued.
var ErrPaymentNotFound = errors.New("payment id not issued")

// RecordPayment records a payment id when the gateway issues it, before
// the provider hears of it, so that every webhook can be classified from
// the ledger. Recording the same id again changes nothing.
func (l *Ledger) RecordPayment(ctx context.Context, p Payment) error {
	if p.Currency == "" {
		p.Currency = DefaultCurrency
	}
	var sum int64
	for _, c := range p.SeatPrices {
		sum += c
	}
	if sum != p.Amount || len(p.SeatPrices) != len(booking.SplitSeats(p.SeatID)) {
		p.SeatPrices = nil // not what the amount charges each seat
	}
	_, err := l.pool.Exec(ctx, `INSERT INTO payments (payment_id, event_id, user_id, seat_id, sequence, amount, currency, seat_prices)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (payment_id) DO NOTHING`,
		p.PaymentID, p.EventID, p.UserID, p.SeatID, p.Sequence, p.Amount, p.Currency, p.SeatPrices)
	return wrap("record payment", err)
}

const paymentColumns = `payment_id, event_id, user_id, seat_id, sequence, amount, currency, outcome, reason, created_at, updated_at,
	failed_at`

func scanPayment(row pgx.Row) (Payment, error) {
	var p Payment
	err := row.Scan(&p.PaymentID, &p.EventID, &p.UserID, &p.SeatID, &p.Sequence, &p.Amount, &p.Currency, &p.Outcome, &p.Reason,
		&p.CreatedAt, &p.UpdatedAt, &p.FailedAt)
	return p, err
}

func scanPaymentRow(row pgx.CollectableRow) (Payment, error) { return scanPayment(row) }

// Payment returns a payment id's record, or ErrPaymentNotFound.
func (l *Ledger) Payment(ctx context.Context, paymentID string) (Payment, error) {
	p, err := scanPayment(l.pool.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE payment_id = $1`, paymentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, ErrPaymentNotFound
	}
	return p, wrap("payment", err)
}

// Failure is a failure webhook after its Lua step.
type Failure struct {
	PaymentID string
	EventID   string
	UserID    string
	SeatID    string // the released seats joined by ',' (the engine's)
	Sequence  int64
	Reason    string
	// At is the time of its payment_failed, when Redis released the hold
	// (booking.PaymentResult.At); zero when the failure released no hold
	// and has no fact.
	At time.Time
}

// RecordFailure records a failure webhook's outcome, idempotently on the
// payment id, and returns the payment as recorded. The first failure
// fixes the payment's reason, and, with f.At set, the fact it publishes
// (Payment.Facts): its time, and its seat and sequence where the payment
// had none; that fact enters failure_outbox in the same statement, and
// stays there until FailureFactsPublished, or the sweep (OrderPublisher),
// records Kafka's acknowledgement. A repeat changes nothing, and neither
// does a failure after a success: the first money-moving outcome stays.
func (l *Ledger) RecordFailure(ctx context.Context, f Failure) (Payment, error) {
	b := &pgx.Batch{}
	b.Queue(`WITH p AS (INSERT INTO payments (payment_id, event_id, user_id, seat_id, sequence, outcome, reason, failed_at)
			VALUES ($1, $2, $3, $4, $5, 'failed', $6, $7)
			ON CONFLICT (payment_id) DO UPDATE SET outcome = 'failed', reason = EXCLUDED.reason, updated_at = now(),
				failed_at = EXCLUDED.failed_at,
				seat_id = CASE WHEN payments.seat_id = '' THEN EXCLUDED.seat_id ELSE payments.seat_id END,
				sequence = CASE WHEN payments.sequence = 0 THEN EXCLUDED.sequence ELSE payments.sequence END
			WHERE payments.outcome = 'initiated'
			RETURNING payment_id, failed_at)
		INSERT INTO failure_outbox (payment_id) SELECT payment_id FROM p WHERE failed_at IS NOT NULL`,
		f.PaymentID, f.EventID, f.UserID, f.SeatID, f.Sequence, f.Reason, orNull(f.At))
	b.Queue(`SELECT `+paymentColumns+` FROM payments WHERE payment_id = $1`, f.PaymentID)
	br := l.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return Payment{}, wrap("record failure", err)
	}
	p, err := scanPayment(br.QueryRow())
	if err != nil {
		return Payment{}, wrap("record failure read", err)
	}
	return p, wrap("record failure", br.Close())
}

// Sale is a success webhook after its Lua step: the booking completed (or
// was a duplicate of a completion), or, with RefundReason set, the money
// came without a ticket (a late payment) and is due back.
type Sale struct {
	PaymentID    string
	EventID      string
	UserID       string
	SeatID       string
	Sequence     int64
	RefundReason string // "" for a ticket; RefundLate, RefundNoBooking...
	// SeatIDs and SeatPrices are the order's seats and their prices
	// ; when SeatIDs is empty SeatID is split at ',', and
	// without prices each line gets the amount divided by the seats.
	SeatIDs    []string
	SeatPrices []int64
	// Phase is the sale's phase current when the seats were sold
	// (booking.PaymentResult.Phase; "" none).
	Phase string
	// At is the time of the order's fact, when Redis classified the
	// payment (booking.PaymentResult.At; zero: the ledger's clock), and
	// SoldOutAt the event_sold_out the sale caused (zero: none): the
	// order keeps both, so every copy of its facts is the same.
	At        time.Time
	SoldOutAt time.Time
	// Channel, SoldBy and CustomerRef: a box-office sale's (Order).
	Channel, SoldBy, CustomerRef string
}

// fact is the type of the sale's fact: payment_late for a payment that
// came without a ticket, booking_completed for a completion (also one the
// ledger records as refund_due because another order has the seat: the
// booking engine sold it).
func (s Sale) fact() string {
	if s.RefundReason != "" {
		return events.TopicPaymentLate
	}
	return events.TopicBookingCompleted
}

// Order is the order s records as far as s tells (no id, amount or
// status: the ledger adds them), with its facts: the webhooks' tests
// without a ledger, and the facts of an order written before the ledger
// kept them.
func (s Sale) Order() Order {
	ids, _ := s.seats()
	seat := s.SeatID
	if seat == "" {
		seat = strings.Join(ids, ",")
	}
	return Order{PaymentID: s.PaymentID, EventID: s.EventID, UserID: s.UserID, SeatID: seat, SeatIDs: ids,
		Sequence: s.Sequence, Phase: s.Phase, Fact: s.fact(), FactAt: orNull(s.At), SoldOutAt: orNull(s.SoldOutAt)}
}

// orNull is t, or NULL when zero.
func orNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// seats returns the sale's seats and their prices (nil: not known).
func (s Sale) seats() ([]string, []*int64) {
	ids := s.SeatIDs
	if len(ids) == 0 {
		ids = booking.SplitSeats(s.SeatID)
	}
	prices := make([]*int64, len(ids))
	if len(s.SeatPrices) == len(ids) {
		for i := range s.SeatPrices {
			prices[i] = &s.SeatPrices[i]
		}
	}
	return ids, prices
}

// seatsTakenSQL is the condition "another order (not payment) sold one
// of seats (a text[]) of event": a ticket any of whose seats the ledger
// sold to another order is a refund (order_seats holds every sold seat,
// of orders of any size). The arguments are the statement's placeholders.
//
// It probes order_seats_sold once per seat, by (event_id, seat_id), in a
// LATERAL subquery that the planner cannot flatten (LIMIT 1). Written as
// seat_id = ANY(seats), the planner was free to scan the event's index
// entries and filter the seats, and did so whenever its statistics said
// the table was small — true for every event at the start of its sale,
// since the table grows faster than ANALYZE runs (at most once a minute,
// never where autovacuum is off): each sale then read every seat sold
// before it, and an on-sale's ledger writes grew quadratically
// (TestSeatsTakenProbesBySeat).
func seatsTakenSQL(payment, event, seats string) string {
	return `EXISTS (SELECT 1 FROM unnest(` + seats + `::text[]) AS s(seat),
		LATERAL (SELECT 1 FROM order_seats os JOIN orders o ON o.order_id = os.order_id
			WHERE os.event_id = ` + event + ` AND os.seat_id = s.seat AND os.status = 'completed'
				AND o.payment_id <> ` + payment + ` LIMIT 1) t)`
}

// RecordSale records the order of a success webhook, idempotently on the
// payment id: the first call writes it, every later call returns the same
// order. A ticket whose seat the ledger already sold to another order is
// recorded as refund_due (RefundSeatTaken) instead: the ledger never sells
// a seat twice. Amount and currency come from the payment's record. The
// payment's outcome is updated in the same round trip, and the order's
// facts (Order.Facts) enter order_outbox with the order, in one implicit
// transaction: they stay there until FactsPublished, or the sweep
// (OrderPublisher), records Kafka's acknowledgement.
func (l *Ledger) RecordSale(ctx context.Context, s Sale) (Order, error) {
	o, _, err := l.recordSale(ctx, s)
	return o, err
}

// recordSale is RecordSale; created reports that this call wrote the
// order (its first write), not a repeat's.
func (l *Ledger) recordSale(ctx context.Context, s Sale) (o Order, created bool, err error) {
	status, outcome := StatusCompleted, OutcomeSucceeded
	if s.RefundReason != "" {
		status, outcome = StatusRefundDue, OutcomeLate
	}
	ids, prices := s.seats()
	if s.SeatID == "" {
		s.SeatID = strings.Join(ids, ",")
	}
	b := &pgx.Batch{}
	taken := seatsTakenSQL("$2", "$3", "$11")
	// the outbox row only with the order's first write: a repeat after
	// Kafka acknowledged the facts leaves nothing for the sweep
	b.Queue(`WITH o AS (INSERT INTO orders (order_id, payment_id, event_id, user_id, seat_id, sequence, amount, currency, status,
			refund_reason, phase, fact, fact_at, sold_out_at, channel, sold_by, customer_ref)
		SELECT $1, $2, $3, $4, $5, $6, COALESCE(p.amount, 0), COALESCE(p.currency, $9),
			CASE WHEN $7 = 'completed' AND `+taken+` THEN 'refund_due' ELSE $7 END,
			CASE WHEN $7 = 'completed' AND `+taken+` THEN $10 ELSE $8 END, $12, $13, COALESCE($14, now()), $15, $16, $17, $18
		FROM (SELECT 1) one LEFT JOIN payments p ON p.payment_id = $2
		ON CONFLICT (payment_id) DO NOTHING RETURNING order_id)
		INSERT INTO order_outbox (order_id) SELECT order_id FROM o`,
		newOrderID(), s.PaymentID, s.EventID, s.UserID, s.SeatID, s.Sequence, status, s.RefundReason, DefaultCurrency, RefundSeatTaken, ids, s.Phase,
		s.fact(), orNull(s.At), orNull(s.SoldOutAt), s.Channel, s.SoldBy, s.CustomerRef)
	// each line's price: what the payment charged it when the ledger
	// knows (the prices may have changed since, with a phase), else the
	// price the sale reports, else an even share of the amount
	b.Queue(`INSERT INTO order_seats (order_id, position, event_id, seat_id, price_cents, status)
		SELECT o.order_id, l.n - 1, o.event_id, l.seat,
			COALESCE(CASE WHEN cardinality(p.seat_prices) = cardinality($2::text[]) THEN p.seat_prices[l.n] END,
				l.price, o.amount / GREATEST(cardinality($2::text[]), 1)), o.status
		FROM orders o LEFT JOIN payments p ON p.payment_id = o.payment_id
			CROSS JOIN LATERAL unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS l(seat, price, n)
		WHERE o.payment_id = $1
		ON CONFLICT (order_id, position) DO NOTHING`, s.PaymentID, ids, prices)
	b.Queue(`INSERT INTO payments (payment_id, event_id, user_id, seat_id, sequence, outcome)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (payment_id) DO UPDATE SET outcome = EXCLUDED.outcome, updated_at = now(),
			seat_id = CASE WHEN payments.seat_id = '' THEN EXCLUDED.seat_id ELSE payments.seat_id END
		WHERE payments.outcome <> EXCLUDED.outcome AND payments.outcome IN ('initiated', 'failed')`,
		s.PaymentID, s.EventID, s.UserID, s.SeatID, s.Sequence, outcome)
	b.Queue(`SELECT `+orderColumns+` FROM orders WHERE payment_id = $1`, s.PaymentID)
	br := l.pool.SendBatch(ctx, b)
	defer br.Close()
	tag, err := br.Exec()
	if err != nil {
		return Order{}, false, wrap("record sale", err)
	}
	if _, err := br.Exec(); err != nil {
		return Order{}, false, wrap("record sale seats", err)
	}
	if _, err := br.Exec(); err != nil {
		return Order{}, false, wrap("record sale payment", err)
	}
	o, err = scanOrder(br.QueryRow())
	if err != nil {
		return Order{}, false, wrap("record sale read", err)
	}
	if err := br.Close(); err != nil {
		return Order{}, false, wrap("record sale", err)
	}
	// the outbox row is written with the order's first write only
	return o, tag.RowsAffected() == 1, nil
}

// IsSeatConflict reports a concurrent second sale of one seat that the
// unique index stopped; the caller's retry records it as refund_due.
func IsSeatConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (pe.ConstraintName == "orders_seat_sold" || pe.ConstraintName == "order_seats_sold")
}

// perSeat expands orders into one per seat (SeatID one seat), for the
// seat-by-seat comparisons of restore and reconciliation.
func perSeat(orders []Order) []Order {
	var out []Order
	for _, o := range orders {
		ids := o.SeatIDs
		if len(ids) == 0 {
			ids = booking.SplitSeats(o.SeatID)
		}
		for _, id := range ids {
			if slices.Contains(o.CancelledSeatIDs, id) {
				continue // back on sale: not the order's any more
			}
			x := o
			x.SeatID, x.SeatIDs, x.SeatPrices = id, []string{id}, nil
			out = append(out, x)
		}
	}
	return out
}

func newOrderID() string { return "ord_" + strings.ToLower(rand.Text()) }

const orderColumns = `order_id, payment_id, event_id, user_id, seat_id, sequence, amount, currency, status,
	refund_reason, created_at, updated_at, refunded_at, phase, fact, fact_at, sold_out_at, channel, sold_by, customer_ref,
	ARRAY(SELECT os.seat_id FROM order_seats os WHERE os.order_id = orders.order_id ORDER BY os.position),
	ARRAY(SELECT os.price_cents FROM order_seats os WHERE os.order_id = orders.order_id ORDER BY os.position),
	ARRAY(SELECT os.seat_id FROM order_seats os WHERE os.order_id = orders.order_id AND os.status = 'cancelled' ORDER BY os.position)`

func scanOrder(row pgx.Row) (Order, error) {
	var o Order
	err := row.Scan(&o.OrderID, &o.PaymentID, &o.EventID, &o.UserID, &o.SeatID, &o.Sequence, &o.Amount, &o.Currency,
		&o.Status, &o.RefundReason, &o.CreatedAt, &o.UpdatedAt, &o.RefundedAt, &o.Phase, &o.Fact, &o.FactAt, &o.SoldOutAt, &o.Channel, &o.SoldBy, &o.CustomerRef,
		&o.SeatIDs, &o.SeatPrices, &o.CancelledSeatIDs)
	if err == nil && len(o.SeatIDs) == 0 {
		o.SeatIDs = booking.SplitSeats(o.SeatID)
	}
	return o, err
}

func scanOrderRow(row pgx.CollectableRow) (Order, error) { return scanOrder(row) }

func (l *Ledger) orders(ctx context.Context, op, where string, args ...any) ([]Order, error) {
	rows, err := l.pool.Query(ctx, `SELECT `+orderColumns+` FROM orders `+where, args...)
	out, err := rowsOf(rows, err, scanOrderRow)
	if out == nil {
		out = []Order{}
	}
	return out, wrap(op, err)
}

// UserOrders returns a user's orders, newest first, at most limit.
func (l *Ledger) UserOrders(ctx context.Context, userID string, limit int) ([]Order, error) {
	out, err := l.orders(ctx, "user orders", `WHERE user_id = $1 ORDER BY created_at DESC, order_id LIMIT $2`, userID, limit)
	if err == nil {
		err = l.withCancellations(ctx, out)
	}
	return out, err
}

// UserOrder returns one of a user's orders; ErrOrderNotFound when there is
// no such order or it is someone else's.
func (l *Ledger) UserOrder(ctx context.Context, userID, orderID string) (Order, error) {
	o, err := scanOrder(l.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id = $1 AND user_id = $2`, orderID, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, ErrOrderNotFound
	}
	if err == nil {
		return l.oneWithCancellations(ctx, o)
	}
	return o, wrap("user order", err)
}

// OrderByPayment returns the order of a payment id, or ErrOrderNotFound.
func (l *Ledger) OrderByPayment(ctx context.Context, paymentID string) (Order, error) {
	o, err := scanOrder(l.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE payment_id = $1`, paymentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, ErrOrderNotFound
	}
	if err == nil {
		return l.oneWithCancellations(ctx, o)
	}
	return o, wrap("order by payment", err)
}

// EventOrders returns every order of an event, oldest first.
func (l *Ledger) EventOrders(ctx context.Context, eventID string) ([]Order, error) {
	out, err := l.orders(ctx, "event orders", `WHERE event_id = $1 ORDER BY created_at, order_id`, eventID)
	if err == nil {
		err = l.withCancellations(ctx, out)
	}
	return out, err
}

// oneWithCancellations is o with its cancellations.
func (l *Ledger) oneWithCancellations(ctx context.Context, o Order) (Order, error) {
	one := []Order{o}
	err := l.withCancellations(ctx, one)
	return one[0], err
}

// SoldOrders returns an event's completed orders (its sold seats).
func (l *Ledger) SoldOrders(ctx context.Context, eventID string) ([]Order, error) {
	return l.orders(ctx, "sold orders", `WHERE event_id = $1 AND status = 'completed' ORDER BY seat_id`, eventID)
}

// RefundsDue returns the orders due for a refund, oldest first, at most limit.
func (l *Ledger) RefundsDue(ctx context.Context, limit int) ([]Order, error) {
	return l.orders(ctx, "refunds due", `WHERE status = 'refund_due' ORDER BY created_at, order_id LIMIT $1`, limit)
}

// MarkRefunded moves a refund_due order to refunded. A refunded order
// stays as it is (idempotent); a completed order is ErrNotRefundable;
// ErrOrderNotFound when there is no such order.
func (l *Ledger) MarkRefunded(ctx context.Context, orderID string) (Order, error) {
	o, err := scanOrder(l.pool.QueryRow(ctx, `UPDATE orders SET status = 'refunded', refunded_at = now(), updated_at = now()
		WHERE order_id = $1 AND status = 'refund_due' RETURNING `+orderColumns, orderID))
	if err == nil {
		return o, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Order{}, wrap("mark refunded", err)
	}
	o, err = scanOrder(l.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id = $1`, orderID))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Order{}, ErrOrderNotFound
	case err != nil:
		return Order{}, wrap("mark refunded", err)
	case o.Status != StatusRefunded:
		return o, ErrNotRefundable
	}
	return o, nil
}

// Order returns an order by id, or ErrOrderNotFound.
func (l *Ledger) Order(ctx context.Context, orderID string) (Order, error) {
	o, err := scanOrder(l.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id = $1`, orderID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, ErrOrderNotFound
	}
	if err == nil {
		return l.oneWithCancellations(ctx, o)
	}
	return o, wrap("order", err)
}

// MaxSequence is the highest join sequence the ledger saw for an event
// (orders and payments), the floor of a restored event's sequence.
func (l *Ledger) MaxSequence(ctx context.Context, eventID string) (int64, error) {
	var n int64
	err := l.pool.QueryRow(ctx, `SELECT GREATEST(
		(SELECT COALESCE(MAX(sequence), 0) FROM orders WHERE event_id = $1),
		(SELECT COALESCE(MAX(sequence), 0) FROM payments WHERE event_id = $1))`, eventID).Scan(&n)
	return n, wrap("max sequence", err)
}

// ChannelSales is what one channel of an event's sale sold: its completed
// orders' seats (less the cancelled) and their prices, per currency.
// Channel "" is the fans' orders through the queue; a box-office sale's
// channel is the one it was sold through (box_office by default).
type ChannelSales struct {
	Channel  string `json:"channel"`
	Currency string `json:"currency"`
	Orders   int64  `json:"orders"`
	Seats    int64  `json:"seats"`
	Revenue  int64  `json:"revenue"`
}

// SalesByChannel returns the event's sold seats and revenue per channel,
// by channel then currency.
func (l *Ledger) SalesByChannel(ctx context.Context, eventID string) ([]ChannelSales, error) {
	return salesBy[ChannelSales](ctx, l, "channel", eventID)
}
