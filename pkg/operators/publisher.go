package operators

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

// publisher writes Kafka events with acks=all (*events.KafkaProducer).
type publisher interface {
	Publish(ctx context.Context, evs ...events.Event) error
}

// Publisher publishes the audit trail's operator_action facts from the
// outbox that Record fills in the same transaction as the record: at once
// after the action (Publish), and whatever that left behind, Kafka down
// or the gateway killed, on a tick (Run, Sweep). A fact leaves the outbox
// only once Kafka acknowledged it, and is published under a row lock
// (FOR UPDATE SKIP LOCKED) so that two gateways, or a request and a sweep,
// never publish it at once. A crash between Kafka's acknowledgement and
// the outbox's delete republishes the same fact (same id, same bytes):
// consumers dedupe by id, as for every fact.
type Publisher struct {
	Store *Store
	Kafka publisher
	Log   *zap.Logger
	// Age is how old an outbox entry must be before a sweep takes it
	// (default 5 s), leaving the request that wrote it time to publish.
	Age time.Duration
	// IntentAge is how old a request's intent must be before a sweep
	// records it as interrupted (Store.Settle; default DefaultIntentAge).
	IntentAge time.Duration
	// Metrics, when set, counts the calls a sweep records as interrupted.
	Metrics *Metrics
}

const sweepBatch = 100

// Publish publishes record id's fact if it is still in the outbox and no
// one else is publishing it.
func (p *Publisher) Publish(ctx context.Context, id int64) error {
	_, err := p.publish(ctx, `o.action_id = $1`, id)
	return err
}

// Sweep records the intents of interrupted requests (Store.Settle), then
// publishes every outbox entry older than Age, in batches, and returns
// how many it published.
func (p *Publisher) Sweep(ctx context.Context) (int, error) {
	settled, err := p.Store.Settle(ctx, p.IntentAge)
	if p.Metrics != nil {
		p.Metrics.interrupted.Add(float64(len(settled)))
	}
	if err != nil {
		return 0, err
	}
	if len(settled) > 0 {
		// at once, not a sweep later
		if _, err := p.publish(ctx, `o.action_id = ANY($1)`, settled); err != nil {
			return 0, err
		}
	}
	age := p.Age
	if age <= 0 {
		age = 5 * time.Second
	}
	total := 0
	for {
		n, err := p.publish(ctx, `o.created_at < now() - make_interval(secs => $1)`, age.Seconds())
		total += n
		if err != nil || n < sweepBatch {
			return total, err
		}
	}
}

// publish takes the outbox entries matching cond (up to sweepBatch) that
// no one else holds, publishes their facts and deletes them, in one
// transaction.
func (p *Publisher) publish(ctx context.Context, cond string, arg any) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, p.Store.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT a.id, a.at, a.actor, a.via, a.role, a.action, a.event_id, a.target, a.remote_addr,
				a.request_id, a.before, a.after
			FROM operator_action_outbox o JOIN operator_actions a ON a.id = o.action_id
			WHERE `+cond+` ORDER BY o.action_id LIMIT `+strconv.Itoa(sweepBatch)+` FOR UPDATE OF o SKIP LOCKED`, arg)
		if err != nil {
			return err
		}
		acts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Action, error) { return scanAction(r) })
		if err != nil || len(acts) == 0 {
			return err
		}
		facts := make([]events.Event, len(acts))
		ids := make([]int64, len(acts))
		for i, a := range acts {
			facts[i], ids[i] = a.Fact(), a.ID
			facts[i].RequestID = a.RequestID
		}
		if err := p.Kafka.Publish(ctx, facts...); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM operator_action_outbox WHERE action_id = ANY($1)`, ids); err != nil {
			return err
		}
		n = len(acts)
		return nil
	})
	return n, wrap("publish operator_action", err)
}

// Run sweeps every interval until ctx ends; a failed sweep is logged and
// tried again at the next tick.
func (p *Publisher) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, p.Log, "operator_action facts", p.Sweep)
}

// Metrics are the audit trail's metrics (NewMetrics).
type Metrics struct {
	interrupted prometheus.Counter
}

// NewMetrics registers with reg (nil: unregistered):
//
//	boxoffice_operators_interrupted_calls_total  counter, admin calls recorded as request.interrupted (Store.Settle): each stopped between its change and its record, its outcome unknown
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promx.New(reg, "operators")
	return &Metrics{interrupted: f.Counter("interrupted_calls_total",
		"Admin calls recorded as request.interrupted: stopped between their change and their own record, outcome unknown.")}
}

// Interrupted is the counter of interrupted calls (for tests).
func (m *Metrics) Interrupted() prometheus.Counter { return m.interrupted }
