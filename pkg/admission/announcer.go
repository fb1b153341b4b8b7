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
}

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
		if !ok {
			continue
		}
		evs = append(evs, k.event(eventID, e, now))
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
		_, hasKafka := kinds[e.Kind]
		kafka := e.KafkaDone || kafkaErr == nil || !hasKafka
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

// kindEffects is what announcing one kind of outbox entry does, all in one
// place: its Kafka event and, for the kinds that have one, its RabbitMQ
// side.
type kindEffects struct {
	// event is the entry's Kafka event, with the request id it carries.
	event func(eventID string, e booking.OutboxEntry, now time.Time) events.Event
	// rabbit, when set, is the entry's RabbitMQ messages; rabbitFor (nil:
	// every entry of the kind) says which entries have a RabbitMQ side.
	rabbit    func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error)
	rabbitFor func(e booking.OutboxEntry) bool
	// holdTimeout: the entry starts a hold whose delayed timeout message
	// is part of its RabbitMQ side; publishEntries sends one per deadline,
	// naming every hold of the batch that shares it.
	holdTimeout bool
}

// kinds gives each outbox kind its effects. An entry of a kind not listed
// here (booking.KindUnreadable) is acknowledged without effects.
var kinds = map[booking.OutboxKind]kindEffects{
	// a join: the Kafka booking_request only
	booking.KindJoined: {event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
		return withRequest(events.BookingRequested(eventID, e.UserID, e.Sequence, orNow(e.At, now)), e.RequestID)
	}},
	// an admission: the hold's timeout, your_turn and user_promoted
	booking.KindPromoted: {
		event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
			return withRequest(events.UserPromoted(eventID, e.UserID, e.Sequence, orNow(e.At, now)), e.RequestID)
		},
		rabbit: func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error) {
			p, err := a.pass.Sign(eventID, e.UserID, e.Sequence, now, e.ExpireAt)
			if err != nil {
				return nil, err
			}
			return one(notificationMessage(messages.Notification{Type: messages.NotifyYourTurn, EventID: eventID, UserID: e.UserID,
				Sequence: e.Sequence, ExpireTime: e.ExpireAt.Unix(), ExpireAtMS: e.ExpireAt.UnixMilli(),
				Timestamp: now.Unix(), Pass: p}))
		},
		holdTimeout: true,
	},
	// a hold that ran out: the expired notification and booking_expired
	booking.KindExpired: {
		event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
			// the hold's deadline, as AnnounceExpiry publishes it; time ended
			// the hold, not a request
			return withRequest(events.BookingExpired(eventID, e.UserID, e.SeatID, e.Sequence, orNow(e.ExpireAt, orNow(e.At, now))),
				events.NoRequestID)
		},
		rabbit: func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error) {
			return one(notificationMessage(messages.Notification{Type: messages.NotifyExpired, EventID: eventID, UserID: e.UserID,
				Sequence: e.Sequence, SeatID: e.SeatID, Reason: messages.ReasonTimeout, Timestamp: now.Unix()}))
		},
	},
	// a cancellation: booking_cancelled; the cancelled notification to the
	// user (their other tabs leave the queue at once) unless the engine
	// dropped an absent user (abandoned: nobody to tell); and, when the
	// user left the room, a slot-released message
	booking.KindCancelled: {
		event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
			return withRequest(events.BookingCancelled(eventID, e.UserID, e.SeatID, e.Sequence, e.From, orNow(e.At, now)), e.RequestID)
		},
		rabbit: func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error) {
			n, err := notificationMessage(messages.Notification{Type: messages.NotifyCancelled, EventID: eventID, UserID: e.UserID,
				Sequence: e.Sequence, SeatID: e.SeatID, Reason: e.From, Timestamp: now.Unix()})
			if err != nil {
				return nil, err
			}
			if e.From != events.CancelledFromActive {
				return []amqpx.Outgoing{n}, nil
			}
			released, err := slotReleasedMessage(eventID, messages.ReasonCancellation, e.UserID+"|"+strconv.FormatInt(e.Sequence, 10), now)
			if err != nil {
				return nil, err
			}
			return []amqpx.Outgoing{released, n}, nil
		},
		rabbitFor: func(e booking.OutboxEntry) bool { return e.From != booking.FromAbandoned },
	},
	// a rebuild from the ledger (pkg/ledger's Restorer publishes it at
	// once; this is the sweep's way when Kafka was down): event_restored
	booking.KindRestored: {event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
		return withRequest(events.EventRestored(eventID, e.Sequence, e.Reason, orNow(e.At, now)), events.NoRequestID)
	}},
}

func one(o amqpx.Outgoing, err error) ([]amqpx.Outgoing, error) {
	if err != nil {
		return nil, err
	}
	return []amqpx.Outgoing{o}, nil
}

func withRequest(ev events.Event, requestID string) events.Event {
	ev.RequestID = requestID
	return ev
}

// hasRabbitSide reports whether an entry publishes anything to RabbitMQ
// (publishEntries): joins and abandonments are Kafka only.
func hasRabbitSide(e booking.OutboxEntry) bool {
	k := kinds[e.Kind]
	return k.rabbit != nil && (k.rabbitFor == nil || k.rabbitFor(e))
}

// publishEntries publishes the RabbitMQ effects of entries (those not
// done yet) in batches of at most a.concurrency messages and returns each
// entry's error: nil when every message of the entry was confirmed.
func (a *Announcer) publishEntries(ctx context.Context, eventID string, entries []booking.OutboxEntry, now time.Time) []error {
	errs := make([]error, len(entries))
	var out []amqpx.Outgoing
	var owners [][]int // entry indexes of each message in out
	// one timeout per deadline: the holds of one promotion share it
	byDeadline := map[int64][]int{}
	var deadlines []int64
	for i, e := range entries {
		if e.RabbitDone || !hasRabbitSide(e) {
			continue
		}
		k := kinds[e.Kind]
		msgs, err := k.rabbit(a, eventID, e, now)
		if err != nil {
			errs[i] = err
			continue
		}
		for _, m := range msgs {
			out = append(out, m)
			owners = append(owners, []int{i})
		}
		if k.holdTimeout {
			ms := e.ExpireAt.UnixMilli()
			if _, ok := byDeadline[ms]; !ok {
				deadlines = append(deadlines, ms)
			}
			byDeadline[ms] = append(byDeadline[ms], i)
		}
	}
	for _, ms := range deadlines {
		idx := byDeadline[ms]
		holds := make([]booking.Admission, len(idx))
		for k, i := range idx {
			e := entries[i]
			holds[k] = booking.Admission{UserID: e.UserID, Sequence: e.Sequence, ExpireAt: e.ExpireAt}
		}
		m, err := a.timeoutMessage(eventID, holds, now)
		if err != nil {
			for _, i := range idx {
				errs[i] = errors.Join(errs[i], err)
			}
			continue
		}
		out = append(out, m)
		owners = append(owners, idx)
	}
	for start := 0; start < len(out); start += a.concurrency {
		end := min(start+a.concurrency, len(out))
		for k, err := range a.pub.PublishBatch(ctx, out[start:end]) {
			if err = publishErr(out[start+k], err); err != nil {
				for _, i := range owners[start+k] {
					errs[i] = errors.Join(errs[i], err)
				}
			}
		}
	}
	return errs
}

// publishErr is the error of one published message as its caller sees it:
// a notification nobody is bound to receive is not an error (it is for
// users connected now), and the rest say what failed.
func publishErr(o amqpx.Outgoing, err error) error {
	switch {
	case err == nil:
		return nil
	case o.Exchange == amqpx.NotificationsExchange:
		// The fanout has no queue bound while no notifier runs: that is
		// not an error, so publish without caring about routing — Publish
		// is mandatory, hence the check.
		if errors.Is(err, amqpx.ErrUnroutable) {
			return nil
		}
		return fmt.Errorf("publish notification: %w", err)
	case o.Exchange == amqpx.TimeoutExchange:
		return fmt.Errorf("schedule timeout: %w", err)
	}
	return fmt.Errorf("publish %s: %w", o.Msg.Type, err)
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
	o, err := a.timeoutMessage(eventID, []booking.Admission{adm}, a.now())
	if err != nil {
		return err
	}
	return publishErr(o, a.pub.PublishDelayed(ctx, o.Exchange, o.Key, o.Msg, o.Delay))
}

// timeoutMessage is the delayed timeout message of holds that share one
// deadline (holds[0]'s): a single hold's message (ScheduleTimeout), or a
// batch naming every hold (a promotion's), whose id is derived from its
// holds and the deadline.
func (a *Announcer) timeoutMessage(eventID string, holds []booking.Admission, now time.Time) (amqpx.Outgoing, error) {
	deadline := holds[0].ExpireAt
	parts := []string{eventID}
	for _, h := range holds {
		parts = append(parts, h.UserID, strconv.FormatInt(h.Sequence, 10))
	}
	parts = append(parts, strconv.FormatInt(deadline.UnixMilli(), 10))
	m := messages.NewTimeout(eventID, holds[0].UserID, holds[0].Sequence, deadline, now)
	if len(holds) > 1 {
		batch := make([]messages.TimeoutHold, len(holds))
		for i, h := range holds {
			batch[i] = messages.TimeoutHold{UserID: h.UserID, Sequence: h.Sequence}
		}
		m = messages.NewTimeoutBatch(eventID, batch, deadline, now)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return amqpx.Outgoing{}, fmt.Errorf("encode timeout: %w", err)
	}
	msg := amqpx.Message{ID: messageID("timeout", parts...), Type: "timeout", Body: body, Timestamp: now}
	return amqpx.Outgoing{Exchange: amqpx.TimeoutExchange, Key: amqpx.TimeoutRoutingKey, Msg: msg, Delay: deadline.Sub(now)}, nil
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
	o, err := slotReleasedMessage(eventID, reason, dedupe, a.now())
	if err != nil {
		return err
	}
	return publishErr(o, a.pub.Publish(ctx, o.Exchange, o.Key, o.Msg))
}

func slotReleasedMessage(eventID, reason, dedupe string, now time.Time) (amqpx.Outgoing, error) {
	body, err := json.Marshal(messages.NewSlotReleased(eventID, reason, now))
	if err != nil {
		return amqpx.Outgoing{}, fmt.Errorf("encode slot-released: %w", err)
	}
	msg := amqpx.Message{Type: "slot-released", Body: body, Timestamp: now}
	if dedupe != "" {
		msg.ID = messageID("slot-released", eventID, reason, dedupe)
	}
	return amqpx.Outgoing{Exchange: amqpx.SlotReleasedExchange, Key: amqpx.SlotReleasedRoutingKey, Msg: msg}, nil
}

// Notify publishes a notification to the notifications fanout exchange.
func (a *Announcer) Notify(ctx context.Context, n messages.Notification) error {
	return a.notify(ctx, n)
}

func (a *Announcer) notify(ctx context.Context, n messages.Notification) error {
	o, err := notificationMessage(n)
	if err != nil {
		return err
	}
	return publishErr(o, a.pub.Publish(ctx, o.Exchange, o.Key, o.Msg))
}

// notificationMessage is n on the notifications fanout; a user's
// notification has a deterministic id.
func notificationMessage(n messages.Notification) (amqpx.Outgoing, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return amqpx.Outgoing{}, fmt.Errorf("encode notification: %w", err)
	}
	id := ""
	if n.UserID != "" {
		id = messageID("notification", n.Type, n.EventID, n.UserID, strconv.FormatInt(n.Sequence, 10),
			strconv.FormatInt(n.ExpireAtMS, 10))
	}
	return amqpx.Outgoing{Exchange: amqpx.NotificationsExchange, Msg: amqpx.Message{ID: id, Type: "notification", Body: body}}, nil
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
