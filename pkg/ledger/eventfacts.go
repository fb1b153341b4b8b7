package ledger

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// EventCreatedFact is the event_created fact of the event cfg (its
// defaults applied) created at at: its settings as key=value, keys
// sorted, ending with draw_commit=<hex> when drawCommit (the pre-queue
// draw's commitment) is set, so the commitment is on record before the
// sale.
func EventCreatedFact(cfg booking.EventConfig, drawCommit string, at time.Time) events.Event {
	settings := eventSettings(cfg)
	if drawCommit != "" {
		settings += " draw_commit=" + drawCommit
	}
	return events.EventCreated(cfg.ID, settings, at)
}

// eventSettings is an event_created fact's settings: key=value, keys
// sorted.
func eventSettings(cfg booking.EventConfig) string {
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
	kv := map[string]string{
		"seats":           strconv.Itoa(len(cfg.Seats)),
		"capacity":        strconv.Itoa(cfg.Capacity),
		"hold_seconds":    secs(cfg.Hold),
		"grace_seconds":   secs(cfg.Grace),
		"abandon_seconds": secs(cfg.Abandon),
		"batch_size":      strconv.Itoa(cfg.BatchSize),
	}
	if !cfg.SalesStart.IsZero() {
		kv["sales_start"] = cfg.SalesStart.UTC().Format(time.RFC3339)
	}
	if !cfg.SalesEnd.IsZero() {
		kv["sales_end"] = cfg.SalesEnd.UTC().Format(time.RFC3339)
	}
	// the front door's settings, when set
	if cfg.AdmitPerMinute != 0 {
		kv["admit_per_minute"] = strconv.Itoa(cfg.AdmitPerMinute)
	}
	if cfg.EarlyJoin != 0 {
		kv["early_join_seconds"] = secs(cfg.EarlyJoin)
	}
	if cfg.Challenge == booking.ChallengePoW {
		kv["challenge"] = cfg.Challenge
	}
	if cfg.NoOrphanRule {
		kv["no_orphan_rule"] = "true"
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + kv[k]
	}
	return strings.Join(parts, " ")
}

// EventFactPublisher publishes the facts of an event's definition, its
// event_created and the event_updated of each settings revision: at
// once (PublishCreated, PublishUpdated, by the request that made the
// change) and, on a tick (Run), those a crash or a Kafka outage left
// (Sweep). Each is built from the ledger's row, so a copy published
// twice has the same id and bytes.
type EventFactPublisher struct {
	Ledger *Ledger
	Kafka  publisher
	Log    *zap.Logger
	// Age is how long a fact is left to its request before a sweep takes
	// it (default 5 s).
	Age time.Duration
}

// PublishCreated publishes eventID's event_created fact with its draw's
// commitment drawCommit ("" without a pre-queue) and records Kafka's
// acknowledgement. ErrEventNotFound when the ledger has no such event.
func (p *EventFactPublisher) PublishCreated(ctx context.Context, eventID, drawCommit string) error {
	def, err := p.Ledger.Event(ctx, eventID)
	if err != nil {
		return err
	}
	if err := p.Kafka.Publish(ctx, EventCreatedFact(def.Config, drawCommit, def.CreatedAt)); err != nil {
		return fmt.Errorf("ledger: publish event_created: %w", err)
	}
	_, err = p.Ledger.pool.Exec(ctx, `UPDATE events SET created_published = true WHERE id = $1`, eventID)
	return wrap("event_created published", err)
}

// PublishUpdated publishes the event_updated facts of eventID's settings
// revisions Kafka has not acknowledged, in order (event_changes), or,
// when there are none, its last revision's again (the same id and bytes:
// a request that changed nothing repeats what the event says), and
// records Kafka's acknowledgement. Nothing for an event never changed.
func (p *EventFactPublisher) PublishUpdated(ctx context.Context, eventID string) error {
	def, err := p.Ledger.Event(ctx, eventID)
	if err != nil || def.Revision == 0 {
		return err
	}
	rows, err := p.Ledger.pool.Query(ctx, `SELECT c.revision, c.change, c.changed_at FROM event_changes c JOIN events e ON e.id = c.event_id
		WHERE c.event_id = $1 AND c.revision > e.published_revision ORDER BY c.revision`, eventID)
	facts, err := rowsOf(rows, err, func(r pgx.CollectableRow) (events.Event, error) {
		var rev int64
		var change string
		var at time.Time
		err := r.Scan(&rev, &change, &at)
		return events.EventUpdated(eventID, rev, change, at), err
	})
	if err != nil {
		return wrap("settings changes", err)
	}
	if len(facts) == 0 {
		facts = []events.Event{events.EventUpdated(eventID, def.Revision, def.LastChange, def.ChangedAt)}
	}
	if err := p.Kafka.Publish(ctx, facts...); err != nil {
		return fmt.Errorf("ledger: publish event_updated: %w", err)
	}
	_, err = p.Ledger.pool.Exec(ctx, `UPDATE events SET published_revision = GREATEST(published_revision, $2) WHERE id = $1`,
		eventID, facts[len(facts)-1].Sequence)
	return wrap("event_updated published", err)
}

// Sweep publishes the event_created facts and the event_updated facts
// not acknowledged yet; it returns how many events it published for. The event_created of
// an event with a pre-queue waits until the ledger keeps its draw's seed
// (the request records it, or the reconciliation): its fact carries the
// commitment.
func (p *EventFactPublisher) Sweep(ctx context.Context) (int, error) {
	age := sweepGrace(p.Age).Seconds()
	ids := func(query string) func() ([]string, error) {
		return func() ([]string, error) {
			rows, err := p.Ledger.pool.Query(ctx, query, age)
			out, err := rowsOf(rows, err, pgx.RowTo[string])
			return out, wrap("unpublished event facts", err)
		}
	}
	created, err := publishAll(ctx, ids(`SELECT id FROM events e
		WHERE NOT created_published AND created_at < now() - make_interval(secs => $1)
		AND (early_join_ms = 0 OR EXISTS (SELECT 1 FROM draw_seeds d WHERE d.event_id = e.id AND d.phase = ''))
		ORDER BY id LIMIT 100`), func(ctx context.Context, id string) error {
		seeds, err := p.Ledger.keptSeeds(ctx, id)
		if err != nil {
			return err
		}
		return p.PublishCreated(ctx, id, seeds[""].Commit)
	})
	if err != nil {
		return created, err
	}
	updated, err := publishAll(ctx, ids(`SELECT id FROM events
		WHERE published_revision < revision AND changed_at < now() - make_interval(secs => $1)
		ORDER BY id LIMIT 100`), p.PublishUpdated)
	return created + updated, err
}

// Run sweeps every interval until ctx ends.
func (p *EventFactPublisher) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, p.Log, "event facts", p.Sweep)
}
