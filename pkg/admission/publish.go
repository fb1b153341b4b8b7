package admission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// The RabbitMQ side of announcing: publishing the messages of outbox
// entries in confirmed batches, and the messages themselves (a hold's
// delayed timeout, slot-released, notifications) with their deterministic
// ids, also published one at a time by ScheduleTimeout, ReleaseSlot,
// Notify and AnnounceExpiry.

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
		// the deadline less the time Redis wrote the entry at (the
		// promotion's): an entry announced late schedules its message as
		// late, and promotion's reclaim releases the hold on time anyway
		m, err := a.timeoutMessage(eventID, holds, now, entries[idx[0]].At)
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

// ScheduleTimeout publishes the delayed timeout message of a hold, to be
// delivered at adm.ExpireAt by Redis's clock, which read at (a script's
// reply time, e.g. booking.TimeoutResult.At): the delay is ExpireAt − at,
// a duration, so no process's clock decides it (at once if the deadline
// has passed; at zero: the process's clock). The message id is derived
// from the hold and its deadline, so scheduling the same deadline twice
// publishes the same message id.
func (a *Announcer) ScheduleTimeout(ctx context.Context, eventID string, adm booking.Admission, at time.Time) error {
	o, err := a.timeoutMessage(eventID, []booking.Admission{adm}, a.now(), at)
	if err != nil {
		return err
	}
	return publishErr(o, a.pub.PublishDelayed(ctx, o.Exchange, o.Key, o.Msg, o.Delay))
}

// timeoutMessage is the delayed timeout message of holds that share one
// deadline (holds[0]'s): a single hold's message (ScheduleTimeout), or a
// batch naming every hold (a promotion's), whose id is derived from its
// holds and the deadline. Its delay is the deadline less at, the time
// Redis gave with it (zero: now, the process's).
func (a *Announcer) timeoutMessage(eventID string, holds []booking.Admission, now, at time.Time) (amqpx.Outgoing, error) {
	if at.IsZero() {
		at = now
	}
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
	return amqpx.Outgoing{Exchange: amqpx.TimeoutExchange, Key: amqpx.TimeoutRoutingKey, Msg: msg, Delay: deadline.Sub(at)}, nil
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
