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
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	b.Queue(`DELETE FROM order_outbox WHERE order_id = $1`, orderID)
	b.Queue(`COMMIT`)
	return wrap("order facts published", l.pool.SendBatch(ctx, b).Close())
}

// OrderFactMetrics are the order outbox's metrics (NewOrderFactMetrics).
type OrderFactMetrics struct {
	unpublished prometheus.Gauge
	oldest      prometheus.Gauge
	swept       prometheus.Counter
}

// NewOrderFactMetrics registers with reg (nil: unregistered):
//
//	boxoffice_ledger_order_facts_unpublished     gauge, orders whose facts Kafka has not acknowledged, at the last sweep
//	boxoffice_ledger_order_facts_oldest_seconds  gauge, how long the oldest of them has waited, at the last sweep
//	boxoffice_ledger_order_facts_swept_total     orders whose facts the sweep published
func NewOrderFactMetrics(reg prometheus.Registerer) *OrderFactMetrics {
	f := promx.New(reg, "ledger")
	return &OrderFactMetrics{
		unpublished: f.Gauge("order_facts_unpublished", "Orders whose Kafka facts were not acknowledged yet, at the last sweep."),
		oldest:      f.Gauge("order_facts_oldest_seconds", "Age of the oldest order whose Kafka facts were not acknowledged, at the last sweep."),
		swept:       f.Counter("order_facts_swept_total", "Orders whose Kafka facts the sweep published (their webhook did not)."),
	}
}

// Unpublished is the backlog gauge (for tests).
func (m *OrderFactMetrics) Unpublished() prometheus.Gauge { return m.unpublished }

// OrderPublisher is the sweep of the orders whose facts no webhook got
// published: Kafka was down for longer than the provider kept retrying,
// or the webhook's process died between the ledger and Kafka. On a tick
// (Run) it takes the order_outbox rows older than Age that no one else
// holds (FOR UPDATE SKIP LOCKED, so two replicas never publish one order
// at once), publishes each order's facts (Order.Facts, the webhook's
// bytes) and deletes the rows in the same transaction. A webhook's
// repeat racing the sweep, or a crash between Kafka's acknowledgement
// and the commit, publishes the facts again with the same ids: delivery
// is at-least-once and consumers dedupe by id.
type OrderPublisher struct {
	Ledger *Ledger
	Kafka  publisher
	Log    *zap.Logger
	// Age is how long an order is left to its webhook (and the provider's
	// retries) before a sweep takes it (default DefaultOrderFactAge).
	Age time.Duration
	// Metrics, when set, gets the backlog after every sweep.
	Metrics *OrderFactMetrics
}

// DefaultOrderFactAge is OrderPublisher.Age when unset: long enough for
// the webhook that wrote the order to publish its facts, so the sweep
// publishes only what a request left behind.
const DefaultOrderFactAge = 30 * time.Second

const orderFactBatch = 100

// Sweep publishes the facts of every order in the outbox older than
// Age, in batches, and returns how many orders it published.
func (p *OrderPublisher) Sweep(ctx context.Context) (int, error) {
	age := p.Age
	if age <= 0 {
		age = DefaultOrderFactAge
	}
	total := 0
	for {
		n, err := p.publish(ctx, age)
		total += n
		if err != nil || n < orderFactBatch {
			if merr := p.measure(ctx); err == nil {
				err = merr
			}
			return total, err
		}
	}
}

// publish takes up to orderFactBatch outbox rows older than age that no
// one else holds, publishes their orders' facts and deletes the rows, in
// one transaction.
func (p *OrderPublisher) publish(ctx context.Context, age time.Duration) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, p.Ledger.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id IN (
				SELECT order_id FROM order_outbox WHERE created_at < now() - make_interval(secs => $1)
				ORDER BY created_at, order_id LIMIT `+strconv.Itoa(orderFactBatch)+` FOR UPDATE SKIP LOCKED)
			ORDER BY created_at, order_id`, age.Seconds())
		orders, err := rowsOf(rows, err, scanOrderRow)
		if err != nil || len(orders) == 0 {
			return err
		}
		var facts []events.Event
		ids := make([]string, len(orders))
		for i, o := range orders {
			facts, ids[i] = append(facts, o.Facts()...), o.OrderID
		}
		if len(facts) > 0 {
			if err := p.Kafka.Publish(ctx, facts...); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM order_outbox WHERE order_id = ANY($1)`, ids); err != nil {
			return err
		}
		n = len(orders)
		return nil
	})
	if err != nil {
		return 0, wrap("publish order facts", err)
	}
	if p.Metrics != nil {
		p.Metrics.swept.Add(float64(n))
	}
	return n, nil
}

// measure sets the backlog gauges.
func (p *OrderPublisher) measure(ctx context.Context) error {
	if p.Metrics == nil {
		return nil
	}
	var count int64
	var oldest float64
	err := p.Ledger.pool.QueryRow(ctx, `SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
		FROM order_outbox`).Scan(&count, &oldest)
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
