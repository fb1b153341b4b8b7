package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/pass"
)

// Publisher is the confirmed RabbitMQ publisher (*amqpx.Publisher): a nil
// error means the broker stored the message.
type Publisher interface {
	Publish(ctx context.Context, exchange, key string, msg amqpx.Message) error
	PublishDelayed(ctx context.Context, exchange, key string, msg amqpx.Message, delay time.Duration) error
	PublishBatch(ctx context.Context, out []amqpx.Outgoing) []error
}

// Producer writes Kafka events with acks=all (*events.KafkaProducer).
type Producer interface {
	Publish(ctx context.Context, evs ...events.Event) error
}

// OutboxStore is the part of *booking.Store the Announcer needs.
type OutboxStore interface {
	Outbox(ctx context.Context, eventID string, olderThan time.Duration) ([]booking.OutboxEntry, error)
	AckOutbox(ctx context.Context, eventID string, entries ...booking.OutboxEntry) error
	MarkOutbox(ctx context.Context, eventID string, rabbit bool, entries ...booking.OutboxEntry) error
}

// Announcer publishes the side effects of outbox entries and acknowledges
// them. It is safe for concurrent use and keeps no state of its own.
type Announcer struct {
	store       OutboxStore
	pub         Publisher
	kafka       Producer
	log         *zap.Logger
	now         func() time.Time
	concurrency int
	metrics     *Metrics
	pass        *pass.Signer
	offerHook   func(messages.Notification) error
	redemptions Redemptions
}

// Redemptions records the access-code uses of joined entries (those
// whose Code is set) in the system of record (*ledger.Ledger's
// RecordRedemptions); a repeat of one must change nothing.
type Redemptions func(ctx context.Context, eventID string, joins []booking.OutboxEntry) error

// Option configures an Announcer.
type Option func(*Announcer)

// WithClock sets the clock used to compute timeout delays (default
// time.Now). It must agree with the booking Store's clock.
func WithClock(now func() time.Time) Option { return func(a *Announcer) { a.now = now } }

// WithConcurrency bounds the RabbitMQ publishes in flight per Announce call
// (default 1024): an Announce sends its messages in batches of at most
// that many (amqpx.Publisher.PublishBatch), each batch sent back to back
// with its confirms awaited together, so a batch of promotions costs about
// one round trip, not one per user.
func WithConcurrency(n int) Option {
	return func(a *Announcer) {
		if n > 0 {
			a.concurrency = n
		}
	}
}

// WithPass signs an admission pass into every your_turn (nil: none).
func WithPass(s *pass.Signer) Option { return func(a *Announcer) { a.pass = s } }

// WithOfferHook hands every waitlist offer's notification to hook too,
// as part of the offer's RabbitMQ side: an error leaves that side to be
// announced again (so hook may see an offer twice). pkg/platform's hook
// POSTs it to WAITLIST_WEBHOOK_URL, for e-mail or SMS senders. nil: none.
func WithOfferHook(hook func(messages.Notification) error) Option {
	return func(a *Announcer) { a.offerHook = hook }
}

// WithRedemptions records every access-code use of a join before its
// Kafka side (booking_request and code_redeemed) is published: while rec
// fails, those joins' Kafka side is left in the outbox (ErrKafkaPending)
// for the next sweep, so no code_redeemed fact is published that the
// ledger does not hold. Without it (a deployment without a ledger) the
// facts are published alone.
func WithRedemptions(rec Redemptions) Option { return func(a *Announcer) { a.redemptions = rec } }

// WithMetrics counts announce failures (default: unregistered metrics).
func WithMetrics(m *Metrics) Option { return func(a *Announcer) { a.metrics = m } }

// New returns an Announcer. log may be nil.
func New(store OutboxStore, pub Publisher, kafka Producer, log *zap.Logger, opts ...Option) *Announcer {
	if log == nil {
		log = zap.NewNop()
	}
	a := &Announcer{store: store, pub: pub, kafka: kafka, log: log, now: time.Now, concurrency: 1024}
	for _, o := range opts {
		o(a)
	}
	if a.metrics == nil {
		a.metrics = NewMetrics(nil)
	}
	return a
}

// Announce publishes the side effects of entries of eventID and then
// acknowledges them in the outbox:
//
//   - joined: the Kafka booking_request event and, for a join that
//     redeemed an access code, its code_redeemed, once the ledger recorded
//     the use (WithRedemptions);
//   - promoted: the delayed messages.Timeout for the hold's deadline (onto
//     timeout-exchange/timeout), a your_turn notification and the Kafka
//     user_promoted event;
//   - expired: an expired notification and the Kafka booking_expired event;
//   - cancelled (by the user, or by the system for absence, From
//     "abandoned", or at a phase's end, From "phase_ended"): the Kafka
//     booking_cancelled event, the user's cancelled notification (not
//     for "abandoned") and, when the user left the room (From "active"),
//     a slot-released message.
//
// An entry is acknowledged (removed) once its RabbitMQ publishes were
// confirmed and its Kafka write succeeded. The two sides' progress is kept
// apart: when only one side succeeds, the entry is marked with it
// (booking.Store.MarkOutbox) and a retry does only the other side, so a
// Kafka outage does not repeat timeouts and notifications on every
// safety-net tick, nor a RabbitMQ outage the Kafka events. The RabbitMQ
// side is marked as soon as it is confirmed when the Kafka write is still
// in flight, so an announcer sweeping meanwhile redoes only Kafka. Any
// failure is returned (wrapping ErrKafkaPending when the Kafka write was
// the only one); the entries not acknowledged stay in the outbox for a
// retry (SweepOutbox). Announcing an entry twice is harmless: every publish
// carries a deterministic id.
func (a *Announcer) Announce(ctx context.Context, eventID string, entries []booking.OutboxEntry) error {
	return a.announce(ctx, eventID, entries, false)
}

// announce is Announce; with ledgerDown it holds back every join with a
// code use without asking the ledger (SweepOutbox: it failed earlier in
// the same pass).
func (a *Announcer) announce(ctx context.Context, eventID string, entries []booking.OutboxEntry, ledgerDown bool) error {
	if len(entries) == 0 {
		return nil
	}
	now := a.now()
	// held: joins whose code use the ledger did not record, their Kafka
	// side left to the outbox
	held, heldErr := a.recordRedemptions(ctx, eventID, entries, ledgerDown)
	evs := make([]events.Event, 0, len(entries))
	for i, e := range entries {
		if e.Kind == booking.KindUnreadable {
			// nothing to announce; removed below, logged whole here so
			// that an operator can still see what it was
			a.log.Error("outbox entry unreadable: removed unannounced", zap.String("event_id", eventID),
				zap.String("field", e.Field), zap.String("value", e.Value))
		}
		if e.KafkaDone {
			continue
		}
		k, ok := kinds[e.Kind]
		if !ok || (held != nil && held[i]) {
			continue
		}
		evs = append(evs, k.event(eventID, e, now))
		if e.Kind == booking.KindJoined && e.Code.CodeID != 0 {
			evs = append(evs, withRequest(events.CodeRedeemed(eventID, e.UserID, e.Sequence, e.Code.CodeID, e.Code.Use,
				e.Code.Phase, orNow(e.At, now)), e.RequestID))
		}
	}

	// RabbitMQ publishes run concurrently with the Kafka write.
	var kafkaErr error
	kafkaDone := make(chan struct{})
	go func() {
		defer close(kafkaDone)
		if len(evs) == 0 {
			return
		}
		if err := a.kafka.Publish(ctx, evs...); err != nil {
			kafkaErr = fmt.Errorf("publish kafka events: %w", err)
		}
	}()
	rabbitErrs := a.publishEntries(ctx, eventID, entries, now)

	var errs []error // all but the Kafka side's
	// settled: entries whose outbox record the early mark removed already
	settled := make([]bool, len(entries))
	select {
	case <-kafkaDone:
	default:
		// Kafka is still in flight (slow, or down and timing out): record
		// the RabbitMQ side now, so that a sweep meanwhile redoes only the
		// Kafka side and each entry's RabbitMQ side is published once.
		// (A relay's batch of joins has no RabbitMQ side: nothing to mark.)
		var early []booking.OutboxEntry
		var idx []int
		for i, e := range entries {
			if !e.RabbitDone && hasRabbitSide(e) && rabbitErrs[i] == nil {
				early = append(early, e)
				idx = append(idx, i)
			}
		}
		if len(early) > 0 {
			if err := a.store.MarkOutbox(ctx, eventID, true, early...); err != nil {
				errs = append(errs, err)
			} else {
				entries = slices.Clone(entries) // the caller's slice stays as given
				for _, i := range idx {
					settled[i] = entries[i].KafkaDone // both sides done: removed
					entries[i].RabbitDone = true
				}
			}
		}
	}
	<-kafkaDone

	var done, rabbitOnly, kafkaOnly []booking.OutboxEntry
	// done is entries[:len(done)] itself, no copy, for as long as every
	// entry so far is done (a relay's batch of joins), and clipped at the
	// first that is not, so that what is appended after it is a copy
	inPlace := true
	for i, e := range entries {
		isDone := false
		if !settled[i] {
			rabbit := e.RabbitDone || rabbitErrs[i] == nil
			_, hasKafka := kinds[e.Kind]
			kafka := e.KafkaDone || (kafkaErr == nil && (held == nil || !held[i])) || !hasKafka
			if rabbitErrs[i] != nil {
				errs = append(errs, rabbitErrs[i])
			}
			switch {
			case rabbit && kafka:
				isDone = true
			case rabbit && !e.RabbitDone && hasRabbitSide(e):
				rabbitOnly = append(rabbitOnly, e)
			case kafka && !e.KafkaDone:
				kafkaOnly = append(kafkaOnly, e)
			}
		}
		switch {
		case isDone && inPlace:
			done = entries[:i+1]
		case isDone:
			done = append(done, e)
		case inPlace:
			inPlace = false
			done = slices.Clip(done)
		}
	}
	if err := a.store.AckOutbox(ctx, eventID, done...); err != nil {
		errs = append(errs, err)
	}
	if err := a.store.MarkOutbox(ctx, eventID, true, rabbitOnly...); err != nil {
		errs = append(errs, err)
	}
	if err := a.store.MarkOutbox(ctx, eventID, false, kafkaOnly...); err != nil {
		errs = append(errs, err)
	}
	kafkaSide := errors.Join(heldErr, kafkaErr)
	if len(errs) > 0 || kafkaSide != nil {
		a.metrics.AnnounceFailures.Inc()
		err := errors.Join(append(errs, kafkaSide)...)
		a.log.Warn("announce failed; entries stay in the outbox",
			zap.String("event_id", eventID), zap.Int("entries", len(entries)),
			zap.Int("acked", len(done)), zap.Int("half_done", len(rabbitOnly)+len(kafkaOnly)), zap.Error(err))
		if len(errs) == 0 && kafkaErr == nil {
			// all published but the joins whose code use the ledger did
			// not record
			return fmt.Errorf("announce %d entries: %w: %w: %w", len(entries), ErrKafkaPending, errHeldOnly, heldErr)
		}
		if len(errs) == 0 {
			// every RabbitMQ side is published and recorded: only the
			// Kafka side is left, to the outbox
			return fmt.Errorf("announce %d entries: %w: %w", len(entries), ErrKafkaPending, kafkaSide)
		}
		return fmt.Errorf("announce %d entries: %w", len(entries), err)
	}
	return nil
}

// errHeldOnly marks an announce whose one failure was the ledger's record
// of code uses: everything else was published and acknowledged.
var errHeldOnly = errors.New("only joins with a code use held back")

// recordRedemptions hands the code uses of entries' joins whose Kafka
// side is still to do to a.redemptions (with ledgerDown, it does not ask);
// when it fails it returns which entries to hold back (nil: none) and the
// error.
func (a *Announcer) recordRedemptions(ctx context.Context, eventID string, entries []booking.OutboxEntry,
	ledgerDown bool) ([]bool, error) {
	if a.redemptions == nil {
		return nil, nil
	}
	// the joins with a code use whose Kafka side is still to do, and
	// where they are in entries
	var joins []booking.OutboxEntry
	var at []int
	for i, e := range entries {
		if e.Kind == booking.KindJoined && e.Code.CodeID != 0 && !e.KafkaDone {
			joins, at = append(joins, e), append(at, i)
		}
	}
	if len(joins) == 0 {
		return nil, nil
	}
	err := errors.New("the ledger failed earlier in this sweep")
	if !ledgerDown {
		if err = a.redemptions(ctx, eventID, joins); err == nil {
			return nil, nil
		}
	}
	held := make([]bool, len(entries))
	for _, i := range at {
		held[i] = true
	}
	return held, fmt.Errorf("record code uses: %w", err)
}

// ErrKafkaPending is returned (wrapped) by Announce when the Kafka write
// (or the ledger's record of a join's code use, which comes before it)
// was its only failure: every RabbitMQ side was confirmed and recorded in
// the outbox, whose entries keep only their Kafka side, which the safety
// net's sweep (Promoter.Tick) announces once Kafka is back. A message
// handler that announced through the outbox acknowledges its message on
// this error instead of retrying it toward its dead-letter queue: nothing
// is lost, and a Kafka outage does not dead-letter healthy messages.
var ErrKafkaPending = errors.New("kafka side left to the outbox")

// SweepOutbox re-announces eventID's outbox entries written at least
// olderThan ago (0: all): the work of an announcer that crashed or failed
// between a state change and its announcement, and the joins a Kafka
// outage left behind. The store hands out at most booking.OutboxReadMax
// entries per read; a full read is followed by another, up to
// sweepRoundsMax reads per call, so a backlog of millions drains at tens of
// thousands per second instead of one read per safety-net tick. It returns
// how many entries it announced or tried to.
func (a *Announcer) SweepOutbox(ctx context.Context, eventID string, olderThan time.Duration) (int, error) {
	total := 0
	for range sweepRoundsMax {
		entries, err := a.store.Outbox(ctx, eventID, olderThan)
		if err != nil {
			return total, fmt.Errorf("sweep outbox: %w", err)
		}
		if len(entries) == 0 {
			return total, nil
		}
		a.log.Info("announcing stale outbox entries", zap.String("event_id", eventID), zap.Int("entries", len(entries)))
		// held: the ledger did not record a batch's code uses; the pass
		// goes on without asking it again, those joins held back
		var held error
		for start := 0; start < len(entries); start += 500 {
			end := min(start+500, len(entries))
			total += end - start
			err := a.announce(ctx, eventID, entries[start:end], held != nil)
			switch {
			case errors.Is(err, errHeldOnly):
				if held == nil {
					held = err
				}
			case err != nil:
				return total, err
			}
		}
		if held != nil {
			return total, held // the held joins would fill the next read
		}
		if len(entries) < booking.OutboxReadMax || ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
	return total, nil
}

// sweepRoundsMax bounds the outbox reads of one SweepOutbox call.
const sweepRoundsMax = 20

// waitlistStore reads the waitlist's outbox entries (booking.Store).
type waitlistStore interface {
	WaitlistOutbox(ctx context.Context, eventID string) ([]booking.OutboxEntry, error)
}

// AnnounceWaitlist announces the event's unannounced waitlist entries:
// the offers (each its timeout, notification and offer_made), their ends
// and the joins. Whoever ran a step that may free seats calls it, since
// the step offers them at once (docs/booking-engine.md "The waitlist");
// what it misses (a crash) the safety net's sweep announces. Announcing
// an entry twice is harmless.
func (a *Announcer) AnnounceWaitlist(ctx context.Context, eventID string) error {
	ws, ok := a.store.(waitlistStore)
	if !ok {
		return nil
	}
	entries, err := ws.WaitlistOutbox(ctx, eventID)
	if err != nil || len(entries) == 0 {
		return err
	}
	return a.Announce(ctx, eventID, entries)
}
