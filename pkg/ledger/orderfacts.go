package ledger

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/promx"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Facts are the Kafka facts of the order as RecordSale fixed them: its
// booking_completed or payment_late (with the payment's amount and the
// sale's phase), then the event_sold_out its sale caused. The success
// webhook publishes them and so does the sweep (OrderPublisher), so
// every copy has the same id and bytes. None for an order written before
// the ledger recorded facts with orders (Fact "").
func (o Order) Facts() []events.Event {
	if o.FactAt == nil {
		return nil
	}
	var f events.Event
	switch o.Fact {
	case events.TopicBookingCompleted:
		f = events.BookingCompleted(o.EventID, o.UserID, o.SeatID, o.PaymentID, o.Sequence, *o.FactAt)
	case events.TopicPaymentLate:
		f = events.PaymentLate(o.EventID, o.UserID, o.SeatID, o.PaymentID, o.Sequence, *o.FactAt)
	default:
		return nil
	}
	out := []events.Event{f.WithMoney(o.Amount, o.Currency).WithPhase(o.Phase).WithChannel(o.Channel)}
	if o.SoldOutAt != nil {
		out = append(out, events.EventSoldOut(o.EventID, *o.SoldOutAt))
	}
	return out
}

// Facts are the Kafka facts of a failed payment as its first failure
// fixed them (RecordFailure): its payment_failed, with the payment's
// amount. The failure webhook publishes them and so does the sweep
// (OrderPublisher), so every copy has the same id and bytes. None for a
// payment whose failure released no hold, none yet, or one recorded
// before the ledger kept its fact (FailedAt nil).
func (p Payment) Facts() []events.Event {
	if p.FailedAt == nil {
		return nil
	}
	return []events.Event{events.PaymentFailed(p.EventID, p.UserID, p.SeatID, p.PaymentID, p.Sequence, p.Reason, *p.FailedAt).
		WithMoney(p.Amount, p.Currency)}
}

// FactsPublished records that Kafka acknowledged the facts of order id:
// it leaves order_outbox (waiting, when a sweep is publishing them, for
// the sweep to finish). An order not in the outbox is left as it is.
//
// The delete commits without waiting for its WAL flush
// (synchronous_commit off, one round trip), so a success webhook waits
// for one flush, its order's, not two (BenchmarkSuccessWebhookWithLedger
// in payment-webhook measures the webhook with both). A crash
// of PostgreSQL may lose the delete, and then the sweep publishes the
// facts once more, with the same ids; it cannot lose the order or its
// outbox row, which committed durably before.
func (l *Ledger) FactsPublished(ctx context.Context, orderID string) error {
	return l.acknowledge(ctx, orderOutbox, orderID)
}

// FailureFactsPublished records that Kafka acknowledged the facts of
// the failed payment id (Payment.Facts), as FactsPublished does for an
// order's: it leaves failure_outbox.
func (l *Ledger) FailureFactsPublished(ctx context.Context, paymentID string) error {
	return l.acknowledge(ctx, failureOutbox, paymentID)
}

// acknowledge deletes id from outbox o, without waiting for the WAL
// flush (FactsPublished).
func (l *Ledger) acknowledge(ctx context.Context, o factOutbox, id string) error {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	b.Queue(`DELETE FROM `+o.table+` WHERE `+o.key+` = $1`, id)
	b.Queue(`COMMIT`)
	return wrap(o.name+" published", l.pool.SendBatch(ctx, b).Close())
}

// factOutbox is a table of the webhooks' facts Kafka has not
// acknowledged yet, keyed by the id of the row that fixed them.
type factOutbox struct {
	name  string // in errors
	table string
	key   string
	// facts reads the facts of the rows whose keys the subquery in
	// selects, oldest first, and returns them with those keys.
	facts func(ctx context.Context, tx pgx.Tx, in string, args ...any) ([]events.Event, []string, error)
}

var (
	orderOutbox = factOutbox{name: "order facts", table: "order_outbox", key: "order_id",
		facts: func(ctx context.Context, tx pgx.Tx, in string, args ...any) ([]events.Event, []string, error) {
			rows, err := tx.Query(ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id IN (`+in+`)
				ORDER BY created_at, order_id`, args...)
			return factsOf(rows, err, scanOrderRow, Order.Facts, func(o Order) string { return o.OrderID })
		}}
	failureOutbox = factOutbox{name: "failure facts", table: "failure_outbox", key: "payment_id",
		facts: func(ctx context.Context, tx pgx.Tx, in string, args ...any) ([]events.Event, []string, error) {
			rows, err := tx.Query(ctx, `SELECT `+paymentColumns+` FROM payments WHERE payment_id IN (`+in+`)
				ORDER BY failed_at, payment_id`, args...)
			return factsOf(rows, err, scanPaymentRow, Payment.Facts, func(p Payment) string { return p.PaymentID })
		}}
	// factOutboxes are what the sweep publishes, in this order.
	factOutboxes = []factOutbox{orderOutbox, failureOutbox}
)

// factsOf collects rows into the facts and keys of each.
func factsOf[T any](rows pgx.Rows, err error, scan func(pgx.CollectableRow) (T, error), facts func(T) []events.Event,
	key func(T) string) ([]events.Event, []string, error) {
	all, err := rowsOf(rows, err, scan)
	if err != nil {
		return nil, nil, err
	}
	var out []events.Event
	keys := make([]string, len(all))
	for i, x := range all {
		out, keys[i] = append(out, facts(x)...), key(x)
	}
	return out, keys, nil
}

// OrderFactMetrics are the webhook facts' outboxes' metrics
// (NewOrderFactMetrics): orders' and failed payments'.
type OrderFactMetrics struct {
	unpublished prometheus.Gauge
	oldest      prometheus.Gauge
	swept       prometheus.Counter
}

// NewOrderFactMetrics registers with reg (nil: unregistered):
//
//	boxoffice_ledger_order_facts_unpublished     gauge, orders and failed payments whose facts Kafka has not acknowledged, at the last sweep
//	boxoffice_ledger_order_facts_oldest_seconds  gauge, how long the oldest of them has waited, at the last sweep
//	boxoffice_ledger_order_facts_swept_total     orders and failed payments whose facts the sweep published
func NewOrderFactMetrics(reg prometheus.Registerer) *OrderFactMetrics {
	f := promx.New(reg, "ledger")
	return &OrderFactMetrics{
		unpublished: f.Gauge("order_facts_unpublished", "Orders and failed payments whose Kafka facts were not acknowledged yet, at the last sweep."),
		oldest:      f.Gauge("order_facts_oldest_seconds", "Age of the oldest order or failed payment whose Kafka facts were not acknowledged, at the last sweep."),
		swept:       f.Counter("order_facts_swept_total", "Orders and failed payments whose Kafka facts the sweep published (their webhook did not)."),
	}
}

// Unpublished is the backlog gauge (for tests).
func (m *OrderFactMetrics) Unpublished() prometheus.Gauge { return m.unpublished }

// OrderPublisher is the sweep of the payment webhooks' facts that no
// webhook got published: orders' (order_outbox, Order.Facts) and failed
// payments' (failure_outbox, Payment.Facts). Kafka was down for longer
// than the provider kept retrying, or the webhook's process died between
// the ledger and Kafka. On a tick (Run) it takes the outbox rows older
// than Age that no one else holds (FOR UPDATE SKIP LOCKED, so two
// replicas never publish one row at once), publishes their facts (the
// webhook's bytes) and deletes the rows in the same transaction. A
// webhook's repeat racing the sweep, or a crash between Kafka's
// acknowledgement and the commit, publishes the facts again with the
// same ids: delivery is at-least-once and consumers dedupe by id.
type OrderPublisher struct {
	Ledger *Ledger
	Kafka  publisher
	Log    *zap.Logger
	// Age is how long a row is left to its webhook (and the provider's
	// retries) before a sweep takes it (default DefaultOrderFactAge).
	Age time.Duration
	// Metrics, when set, gets the backlog after every sweep.
	Metrics *OrderFactMetrics
}

// DefaultOrderFactAge is OrderPublisher.Age when unset: long enough for
// the webhook that wrote the row to publish its facts, so the sweep
// publishes only what a request left behind.
const DefaultOrderFactAge = 30 * time.Second

const orderFactBatch = 100

// Sweep publishes the facts of every outbox row older than Age, orders'
// then failed payments', in batches, and returns how many rows it
// published.
func (p *OrderPublisher) Sweep(ctx context.Context) (int, error) {
	age := p.Age
	if age <= 0 {
		age = DefaultOrderFactAge
	}
	total := 0
	var err error
	for _, o := range factOutboxes {
		for err == nil {
			var n int
			n, err = p.publish(ctx, o, age)
			total += n
			if n < orderFactBatch {
				break
			}
		}
	}
	if merr := p.measure(ctx); err == nil {
		err = merr
	}
	return total, err
}

// publish takes up to orderFactBatch rows of outbox o older than age that
// no one else holds, publishes their facts and deletes the rows, in one
// transaction.
func (p *OrderPublisher) publish(ctx context.Context, o factOutbox, age time.Duration) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, p.Ledger.pool, func(tx pgx.Tx) error {
		facts, keys, err := o.facts(ctx, tx, `SELECT `+o.key+` FROM `+o.table+`
			WHERE created_at < now() - make_interval(secs => $1)
			ORDER BY created_at, `+o.key+` LIMIT `+strconv.Itoa(orderFactBatch)+` FOR UPDATE SKIP LOCKED`, age.Seconds())
		if err != nil || len(keys) == 0 {
			return err
		}
		if len(facts) > 0 {
			if err := p.Kafka.Publish(ctx, facts...); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+o.table+` WHERE `+o.key+` = ANY($1)`, keys); err != nil {
			return err
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, wrap("publish "+o.name, err)
	}
	if p.Metrics != nil {
		p.Metrics.swept.Add(float64(n))
	}
	return n, nil
}

// measure sets the backlog gauges, over every outbox.
func (p *OrderPublisher) measure(ctx context.Context) error {
	if p.Metrics == nil {
		return nil
	}
	var count int64
	var oldest float64
	err := p.Ledger.pool.QueryRow(ctx, `SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
		FROM (SELECT created_at FROM order_outbox UNION ALL SELECT created_at FROM failure_outbox) b`).Scan(&count, &oldest)
	if err != nil {
		return wrap("order facts backlog", err)
	}
	p.Metrics.unpublished.Set(float64(count))
	p.Metrics.oldest.Set(oldest)
	return nil
}

// Run sweeps every interval until ctx ends; a failed sweep (Kafka or
// PostgreSQL down) is logged and tried again at the next tick.
func (p *OrderPublisher) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, p.Log, "order facts", p.Sweep)
}
