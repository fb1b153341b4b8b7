package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/requestid"
)

// TimeoutStore is the part of *booking.Store the TimeoutHandler needs.
type TimeoutStore interface {
	HandleTimeout(ctx context.Context, eventID, userID string) (booking.TimeoutResult, error)
}

// TimeoutHandler handles the delayed timeout messages of holds.
type TimeoutHandler struct {
	store TimeoutStore
	ann   *Announcer
	log   *zap.Logger
	m     *Metrics
}

// NewTimeoutHandler returns a TimeoutHandler publishing through ann. log
// may be nil.
func NewTimeoutHandler(store TimeoutStore, ann *Announcer, log *zap.Logger) *TimeoutHandler {
	if log == nil {
		log = zap.NewNop()
	}
	return &TimeoutHandler{store: store, ann: ann, log: log, m: ann.metrics}
}

// Handle is the amqpx.Handler of timeout-queue. By HandleTimeout's outcome:
//
//   - released: publish slot-released (reason timeout), then announce the
//     expiry's outbox entry: the expired notification and Kafka
//     booking_expired (a Kafka failure alone acks the message and leaves
//     booking_expired to the outbox);
//   - extended (payment pending: grace given) or not_due (the deadline moved
//     later): publish a new delayed timeout for the new deadline;
//   - no_hold with AlreadyExpired: publish slot-released again and announce
//     the expiry's outbox entry if some side of it is still unannounced (a
//     previous attempt may have failed half-way; every effect is idempotent);
//   - no_hold otherwise: nothing.
//
// Every publish is confirmed before Handle returns nil (and the message is
// acked); a failure returns an error so the message is retried. A timeout
// of an older hold of the same user (its sequence differs from the current
// one) reschedules and republishes nothing, so late and duplicate messages
// change nothing.
//
// A batch message (the holds of one promotion, one deadline) is handled
// hold by hold, timeoutWorkers at a time; when any hold fails the message
// is retried whole, and the holds already handled find their work done
// (every outcome above is idempotent).
func (h *TimeoutHandler) Handle(ctx context.Context, d amqpx.Delivery) error {
	m, err := messages.DecodeTimeout(d.Body)
	if err != nil {
		return amqpx.Permanent(err)
	}
	holds := m.Holds()
	if !ids.Valid(m.EventID) || slices.ContainsFunc(holds, func(x messages.TimeoutHold) bool { return !ids.Valid(x.UserID) }) {
		return amqpx.Permanent(fmt.Errorf("%w: bad event_id or user_id", messages.ErrMalformed))
	}
	if len(holds) == 1 {
		return h.handleHold(ctx, d, m, holds[0])
	}
	errs := make([]error, len(holds))
	sem := make(chan struct{}, timeoutWorkers)
	var wg sync.WaitGroup
	for i, x := range holds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = h.handleHold(ctx, d, m, x)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// timeoutWorkers bounds the holds of one batch message handled at once.
const timeoutWorkers = 16

// handleHold handles the timeout of one hold of m (Handle).
func (h *TimeoutHandler) handleHold(ctx context.Context, d amqpx.Delivery, m messages.Timeout, x messages.TimeoutHold) error {
	log := requestid.Logger(ctx, h.log).With(zap.String("event_id", m.EventID), zap.String("user_id", x.UserID),
		zap.String("message_id", d.MessageID))
	res, err := h.store.HandleTimeout(ctx, m.EventID, x.UserID)
	if errors.Is(err, booking.ErrEventNotFound) {
		log.Info("timeout for an unknown event; dropped")
		return nil
	}
	if err != nil {
		return err
	}
	stale := x.Sequence > 0 && res.Sequence > 0 && x.Sequence != res.Sequence
	outcome := string(res.Outcome)
	defer func() { h.m.TimeoutOutcomes.WithLabelValues(outcome).Inc() }()

	switch res.Outcome {
	case booking.OutcomeReleased:
		log.Info("hold expired", zap.Int64("sequence", res.Sequence), zap.String("seat_id", res.SeatID))
		return h.expired(ctx, m.EventID, x.UserID, res)
	case booking.OutcomeExtended:
		log.Info("hold in payment extended by the grace period", zap.Time("expire_at", res.ExpireAt))
		return h.ann.ScheduleTimeout(ctx, m.EventID, booking.Admission{UserID: x.UserID, Sequence: res.Sequence, ExpireAt: res.ExpireAt}, res.At)
	case booking.OutcomeNotDue:
		if stale {
			outcome = "stale"
			return nil // the current hold has its own timeout message
		}
		return h.ann.ScheduleTimeout(ctx, m.EventID, booking.Admission{UserID: x.UserID, Sequence: res.Sequence, ExpireAt: res.ExpireAt}, res.At)
	case booking.OutcomeNoHold:
		if !res.AlreadyExpired || stale {
			return nil
		}
		// the deadline that passed is the one this message was scheduled for
		if d := m.Deadline(); d.Unix() > 0 {
			res.ExpireAt = d
		}
		return h.expired(ctx, m.EventID, x.UserID, res)
	}
	log.Warn("unknown timeout outcome; acking", zap.String("outcome", outcome))
	return nil
}

// expired publishes a released hold's effects: the slot first (the next
// user's admission matters most), then the expiry's outbox entry (the
// expired notification and Kafka booking_expired), which handle_timeout.lua
// wrote with the release. When only the Kafka write fails the message is
// acked: the entry keeps its Kafka side for the safety net's sweep, so a
// Kafka outage neither dead-letters the message nor loses the fact.
func (h *TimeoutHandler) expired(ctx context.Context, eventID, userID string, res booking.TimeoutResult) error {
	hold := userID + "|" + strconv.FormatInt(res.Sequence, 10)
	if err := h.ann.ReleaseSlot(ctx, eventID, messages.ReasonTimeout, hold); err != nil {
		return err
	}
	err := h.ann.Announce(ctx, eventID, res.Outbox)
	if err == nil && res.SeatID != "" {
		// the freed seats were offered to the waitlist in the same step
		err = h.ann.AnnounceWaitlist(ctx, eventID)
	}
	if errors.Is(err, ErrKafkaPending) {
		requestid.Logger(ctx, h.log).Warn("booking_expired left to the outbox (Kafka failed); timeout acked",
			zap.String("event_id", eventID), zap.String("user_id", userID), zap.Error(err))
		return nil
	}
	return err
}
