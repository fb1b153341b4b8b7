package admission

import (
	"context"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// Relay announces outbox entries in the background, after the caller has
// answered its client. The gateway hands it the joined entry of every new
// join: the booking_request fact is already in the outbox, written by the
// same script that queued the user, so the join can answer as soon as Redis
// has it instead of waiting for a Kafka round trip.
//
// Entries handed in by concurrent callers are batched per event into one
// Announce (one Kafka write, one outbox acknowledgement). An entry the
// Relay cannot announce — Kafka down, the queue full, the process killed —
// stays in the outbox and the safety net's sweep (Promoter.Tick) announces
// it later: it is late, never lost. Safe for concurrent use.
type Relay struct {
	ann      *Announcer
	metrics  *Metrics
	maxBatch int
	timeout  time.Duration

	mu     sync.RWMutex // guards closed against Add's send
	closed bool
	queue  chan relayItem
	wg     sync.WaitGroup
}

type relayItem struct {
	eventID string
	entries []booking.OutboxEntry
}

// RelayOption configures a Relay.
type RelayOption func(*relayConfig)

type relayConfig struct {
	workers, queue, maxBatch int
	timeout                  time.Duration
}

// WithRelayWorkers sets how many batches may be announced at once (default 4).
func WithRelayWorkers(n int) RelayOption { return func(c *relayConfig) { c.workers = n } }

// WithRelayQueue sets how many Add calls may wait for a worker (default
// 65536); beyond that Add leaves the entries to the safety net.
func WithRelayQueue(n int) RelayOption { return func(c *relayConfig) { c.queue = n } }

// WithRelayBatch sets the most entries announced in one call (default 500).
func WithRelayBatch(n int) RelayOption { return func(c *relayConfig) { c.maxBatch = n } }

// WithRelayTimeout bounds one batch's Announce (default 10s).
func WithRelayTimeout(d time.Duration) RelayOption { return func(c *relayConfig) { c.timeout = d } }

// NewRelay starts a Relay's workers over ann, counting in ann's metrics
// (boxoffice_admission_relay_entries_total). Close stops them.
func NewRelay(ann *Announcer, opts ...RelayOption) *Relay {
	cfg := relayConfig{workers: 4, queue: 1 << 16, maxBatch: 500, timeout: 10 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	r := &Relay{ann: ann, metrics: ann.metrics, maxBatch: max(cfg.maxBatch, 1),
		timeout: cfg.timeout, queue: make(chan relayItem, max(cfg.queue, 1))}
	for range max(cfg.workers, 1) {
		r.wg.Go(r.work)
	}
	return r
}

// Add hands entries of eventID to the Relay without waiting. It returns
// false when the Relay is closed or its queue is full: the entries then
// stay in the outbox for the safety net.
func (r *Relay) Add(eventID string, entries ...booking.OutboxEntry) bool {
	if len(entries) == 0 {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.closed {
		select {
		case r.queue <- relayItem{eventID, entries}:
			return true
		default:
		}
	}
	r.metrics.RelayEntries.WithLabelValues("left_to_sweep").Add(float64(len(entries)))
	return false
}

// Close stops accepting entries, announces what is queued and waits for
// the workers, or until ctx is done (what is left stays in the outbox).
func (r *Relay) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Relay) work() {
	// A batch's entries are gathered into slices kept from one batch to
	// the next (Announce keeps none once it returns), not into a new map
	// of slices grown entry by entry on every batch.
	byEvent := map[string][]booking.OutboxEntry{}
	var order []string
	var spare [][]booking.OutboxEntry
	add := func(it relayItem) int {
		b, seen := byEvent[it.eventID]
		if !seen {
			order = append(order, it.eventID)
			if n := len(spare); n > 0 {
				b, spare = spare[n-1], spare[:n-1]
			} else {
				b = make([]booking.OutboxEntry, 0, 64)
			}
		}
		byEvent[it.eventID] = append(b, it.entries...)
		return len(it.entries)
	}
	for first := range r.queue {
		// take what else is queued, up to a batch, grouped by event in
		// arrival order
		order = order[:0]
		n := add(first)
	drain:
		for n < r.maxBatch {
			select {
			case it, ok := <-r.queue:
				if !ok {
					break drain
				}
				n += add(it)
			default:
				break drain
			}
		}
		for _, id := range order {
			b := byEvent[id]
			r.announce(id, b)
			delete(byEvent, id)
			if cap(b) <= 4*r.maxBatch && len(spare) < 8 {
				clear(b) // no user ids kept alive in between
				spare = append(spare, b[:0])
			}
		}
	}
}

func (r *Relay) announce(eventID string, entries []booking.OutboxEntry) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	// Announce logs a failure itself (once per batch)
	if err := r.ann.Announce(ctx, eventID, entries); err != nil {
		r.metrics.RelayEntries.WithLabelValues("failed").Add(float64(len(entries)))
		return
	}
	r.metrics.RelayEntries.WithLabelValues("announced").Add(float64(len(entries)))
}
