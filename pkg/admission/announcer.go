package admission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/pass"
)

// Outbox entry kinds written by the booking engine.
const (
	KindJoined    = "joined"
	KindPromoted  = "promoted"
	KindExpired   = "expired"
	KindCancelled = "cancelled"
)

// Publisher is the confirmed RabbitMQ publisher (*amqpx.Publisher): a nil
// error means the broker stored the message.
type Publisher interface {
	Publish(ctx context.Context, exchange, key string, msg amqpx.Message) error
	PublishDelayed(ctx context.Context, exchange, key string, msg amqpx.Message, delay time.Duration) error
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
}

// Option configures an Announcer.
type Option func(*Announcer)

// WithClock sets the clock used to compute timeout delays (default
// time.Now). It must agree with the booking Store's clock.
func WithClock(now func() time.Time) Option { return func(a *Announcer) { a.now = now } }

// WithConcurrency bounds the RabbitMQ publishes in flight per Announce call
// (default 64). Confirms are pipelined on one channel, so a batch of
// promotions costs about one round trip, not one per user.
func WithConcurrency(n int) Option {
	return func(a *Announcer) {
		if n > 0 {
			a.concurrency = n
		}
	}
}

// WithPass signs an admission pass into every your_turn (nil: none).
func WithPass(s *pass.Signer) Option { return func(a *Announcer) { a.pass = s } }

// WithMetrics counts announce failures (default: unregistered metrics).
func WithMetrics(m *Metrics) Option { return func(a *Announcer) { a.metrics = m } }

// New returns an Announcer. log may be nil.
func New(store OutboxStore, pub Publisher, kafka Producer, log *zap.Logger, opts ...Option) *Announcer {
	if log == nil {
		log = zap.NewNop()
	}
	a := &Announcer{store: store, pub: pub, kafka: kafka, log: log, now: time.Now, concurrency: 64}
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
//   - joined: the Kafka booking_request event;
//   - promoted: the delayed messages.Timeout for the hold's deadline (onto
//     timeout-exchange/timeout), a your_turn notification and the Kafka
//     user_promoted event;
//   - expired: an expired notification and the Kafka booking_expired event;
//   - cancelled (by the user, or by the system for absence, From
//     "abandoned"): the Kafka booking_cancelled event and, when the user
//     left the room (From "active"), a slot-released message.
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
	if len(entries) == 0 {
		return nil
	}
	now := a.now()
	var evs []events.Event
	for _, e := range entries {
		if e.KafkaDone {
			continue
		}
		var ev events.Event
		switch e.Kind {
		case KindJoined:
			ev = events.BookingRequested(eventID, e.UserID, e.Sequence, orNow(e.At, now))
		case KindPromoted:
			ev = events.UserPromoted(eventID, e.UserID, e.Sequence, orNow(e.At, now))
		case KindExpired:
			// the hold's deadline, as AnnounceExpiry publishes it
			ev = events.BookingExpired(eventID, e.UserID, e.SeatID, e.Sequence, orNow(e.ExpireAt, orNow(e.At, now)))
		case KindCancelled:
			ev = events.BookingCancelled(eventID, e.UserID, e.SeatID, e.Sequence, e.From, orNow(e.At, now))
		default:
			continue
		}
		ev.RequestID = e.RequestID
		if e.Kind == KindExpired {
			ev.RequestID = events.NoRequestID // time ended the hold, not a request
		}
		evs = append(evs, ev)
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
	rabbitErrs := make([]error, len(entries))
	sem := make(chan struct{}, a.concurrency)
	var wg sync.WaitGroup
	for i, e := range entries {
		if e.RabbitDone || !hasRabbitSide(e) { // no goroutine for nothing
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rabbitErrs[i] = a.publishEntry(ctx, eventID, e, now)
		})
	}
	wg.Wait()

	var errs []error
	// settled: entries whose outbox record the early mark removed already
	settled := make([]bool, len(entries))
	select {
	case <-kafkaDone:
	default:
		// Kafka is still in flight (slow, or down and timing out): record
		// the RabbitMQ side now, so that a sweep meanwhile redoes only the
		// Kafka side and each entry's RabbitMQ side is published once.
		entries = slices.Clone(entries) // the caller's slice stays as given
		var early []booking.OutboxEntry
		var idx []int
		for i, e := range entries {
			if !e.RabbitDone && hasRabbitSide(e) && rabbitErrs[i] == nil {
				early = append(early, e)
				idx = append(idx, i)
			}
		}
		if err := a.store.MarkOutbox(ctx, eventID, true, early...); err != nil {
			errs = append(errs, err)
		} else {
			for _, i := range idx {
				settled[i] = entries[i].KafkaDone // both sides done: removed
				entries[i].RabbitDone = true
			}
		}
	}
	<-kafkaDone

	var done, rabbitOnly, kafkaOnly []booking.OutboxEntry
	if kafkaErr != nil {
		errs = append(errs, kafkaErr)
	}
	for i, e := range entries {
		if settled[i] {
			continue
		}
		rabbit := e.RabbitDone || rabbitErrs[i] == nil
		kafka := e.KafkaDone || kafkaErr == nil
		if rabbitErrs[i] != nil {
			errs = append(errs, rabbitErrs[i])
		}
		switch {
		case rabbit && kafka:
			done = append(done, e)
		case rabbit && !e.RabbitDone && hasRabbitSide(e):
			rabbitOnly = append(rabbitOnly, e)
		case kafka && !e.KafkaDone:
			kafkaOnly = append(kafkaOnly, e)
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
	if len(errs) > 0 {
		a.metrics.AnnounceFailures.Inc()
		err := errors.Join(errs...)
		a.log.Warn("announce failed; entries stay in the outbox",
			zap.String("event_id", eventID), zap.Int("entries", len(entries)),
			zap.Int("acked", len(done)), zap.Int("half_done", len(rabbitOnly)+len(kafkaOnly)), zap.Error(err))
		if len(errs) == 1 && kafkaErr != nil {
			// every RabbitMQ side is published and recorded: only the
			// Kafka side is left, to the outbox
			return fmt.Errorf("announce %d entries: %w: %w", len(entries), ErrKafkaPending, kafkaErr)
		}
		return fmt.Errorf("announce %d entries: %w", len(entries), err)
	}
	return nil
}

// ErrKafkaPending is returned (wrapped) by Announce when the Kafka write
// was its only failure: every RabbitMQ side was confirmed and recorded in
// the outbox, whose entries keep only their Kafka side, which the safety
// net's sweep (Promoter.Tick) announces once Kafka is back. A message
// handler that announced through the outbox acknowledges its message on
// this error instead of retrying it toward its dead-letter queue: nothing
// is lost, and a Kafka outage does not dead-letter healthy messages.
var ErrKafkaPending = errors.New("kafka side left to the outbox")

// hasRabbitSide reports whether an entry publishes anything to RabbitMQ
// (publishEntry): joins and cancellations outside the room are Kafka only.
func hasRabbitSide(e booking.OutboxEntry) bool {
	switch e.Kind {
	case KindPromoted, KindExpired:
		return true
	case KindCancelled:
		return e.From == events.CancelledFromActive
	}
	return false
}

// publishEntry publishes the RabbitMQ effects of one entry.
func (a *Announcer) publishEntry(ctx context.Context, eventID string, e booking.OutboxEntry, now time.Time) error {
	switch e.Kind {
	case KindPromoted:
		adm := booking.Admission{UserID: e.UserID, Sequence: e.Sequence, ExpireAt: e.ExpireAt}
		if err := a.ScheduleTimeout(ctx, eventID, adm); err != nil {
			return err
		}
		p, err := a.pass.Sign(eventID, e.UserID, e.Sequence, now, e.ExpireAt)
		if err != nil {
			return err
		}
		n := messages.Notification{Type: messages.NotifyYourTurn, EventID: eventID, UserID: e.UserID,
			Sequence: e.Sequence, ExpireTime: e.ExpireAt.Unix(), ExpireAtMS: e.ExpireAt.UnixMilli(),
			Timestamp: now.Unix(), Pass: p}
		return a.notify(ctx, n)
	case KindExpired:
		n := messages.Notification{Type: messages.NotifyExpired, EventID: eventID, UserID: e.UserID,
			Sequence: e.Sequence, SeatID: e.SeatID, Reason: messages.ReasonTimeout, Timestamp: now.Unix()}
		return a.notify(ctx, n)
	case KindJoined: // the Kafka booking_request only
		return nil
	case KindCancelled:
		if e.From != events.CancelledFromActive {
			return nil
		}
		return a.ReleaseSlot(ctx, eventID, messages.ReasonCancellation, e.UserID+"|"+strconv.FormatInt(e.Sequence, 10))
	}
	a.log.Warn("unknown outbox entry kind; acknowledging it", zap.String("kind", e.Kind),
		zap.String("event_id", eventID), zap.String("user_id", e.UserID))
	return nil
}

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
		for start := 0; start < len(entries); start += 500 {
			end := min(start+500, len(entries))
			total += end - start
			if err := a.Announce(ctx, eventID, entries[start:end]); err != nil {
				return total, err
			}
		}
		if len(entries) < booking.OutboxReadMax || ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
	return total, nil
}

// sweepRoundsMax bounds the outbox reads of one SweepOutbox call.
const sweepRoundsMax = 20

// ScheduleTimeout publishes the delayed timeout message of a hold, to be
// delivered at adm.ExpireAt (at once if the deadline has passed). The
// message id is derived from the hold and its deadline, so scheduling the
// same deadline twice publishes the same message id.
func (a *Announcer) ScheduleTimeout(ctx context.Context, eventID string, adm booking.Admission) error {
	now := a.now()
	m := messages.NewTimeout(eventID, adm.UserID, adm.Sequence, adm.ExpireAt, now)
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode timeout: %w", err)
	}
	msg := amqpx.Message{
		ID:   messageID("timeout", eventID, adm.UserID, strconv.FormatInt(adm.Sequence, 10), strconv.FormatInt(adm.ExpireAt.UnixMilli(), 10)),
		Type: "timeout", Body: body, Timestamp: now,
	}
	if err := a.pub.PublishDelayed(ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, msg, adm.ExpireAt.Sub(now)); err != nil {
		return fmt.Errorf("schedule timeout: %w", err)
	}
	return nil
}

// AnnounceExpiry publishes the effects of a hold that expired outside the
// outbox: the expired notification and the Kafka booking_expired event.
// Idempotent: the same expiry has the same ids. (The TimeoutHandler no
// longer uses it: handle_timeout.lua writes the expiry's outbox entry.)
func (a *Announcer) AnnounceExpiry(ctx context.Context, eventID string, x booking.Expiry) error {
	now := a.now()
	var kafkaErr error
	kafkaDone := make(chan struct{})
	go func() {
		defer close(kafkaDone)
		ev := events.BookingExpired(eventID, x.UserID, x.SeatID, x.Sequence, orNow(x.At, now))
		ev.RequestID = events.NoRequestID // the context's is the request that admitted the user
		if err := a.kafka.Publish(ctx, ev); err != nil {
			kafkaErr = fmt.Errorf("publish booking_expired: %w", err)
		}
	}()
	err := a.notify(ctx, messages.Notification{Type: messages.NotifyExpired, EventID: eventID, UserID: x.UserID,
		Sequence: x.Sequence, SeatID: x.SeatID, PaymentID: x.PaymentID, Reason: messages.ReasonTimeout,
		Timestamp: now.Unix()})
	<-kafkaDone
	if err = errors.Join(err, kafkaErr); err != nil {
		a.metrics.AnnounceFailures.Inc()
		return fmt.Errorf("announce expiry: %w", err)
	}
	return nil
}

// ReleaseSlot publishes a confirmed slot-released message for eventID.
// dedupe, when not empty, makes the message id deterministic (e.g. the hold
// whose release it reports), so a repeat carries the same id.
func (a *Announcer) ReleaseSlot(ctx context.Context, eventID, reason, dedupe string) error {
	now := a.now()
	body, err := json.Marshal(messages.NewSlotReleased(eventID, reason, now))
	if err != nil {
		return fmt.Errorf("encode slot-released: %w", err)
	}
	msg := amqpx.Message{Type: "slot-released", Body: body, Timestamp: now}
	if dedupe != "" {
		msg.ID = messageID("slot-released", eventID, reason, dedupe)
	}
	if err := a.pub.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, msg); err != nil {
		return fmt.Errorf("publish slot-released: %w", err)
	}
	return nil
}

// Notify publishes a notification to the notifications fanout exchange.
func (a *Announcer) Notify(ctx context.Context, n messages.Notification) error {
	return a.notify(ctx, n)
}

func (a *Announcer) notify(ctx context.Context, n messages.Notification) error {
	body, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	id := ""
	if n.UserID != "" {
		id = messageID("notification", n.Type, n.EventID, n.UserID, strconv.FormatInt(n.Sequence, 10),
			strconv.FormatInt(n.ExpireAtMS, 10))
	}
	msg := amqpx.Message{ID: id, Type: "notification", Body: body}
	// The fanout has no queue bound while no notifier runs: that is not an
	// error (a notification is for users connected now), so publish without
	// caring about routing — Publish is mandatory, hence the check.
	if err := a.pub.Publish(ctx, amqpx.NotificationsExchange, "", msg); err != nil && !errors.Is(err, amqpx.ErrUnroutable) {
		return fmt.Errorf("publish %s notification: %w", n.Type, err)
	}
	return nil
}

// messageID is a deterministic AMQP message id (at most 255 bytes on the
// wire, so the parts are hashed): kind-<32 hex>.
func messageID(kind string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "|")))
	return kind + "-" + hex.EncodeToString(h[:16])
}

func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}
