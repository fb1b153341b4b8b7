package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/requestid"
)

// PromoteStore is the part of *booking.Store the Promoter needs.
type PromoteStore interface {
	Promote(ctx context.Context, eventID string, max int) (booking.PromoteResult, error)
	EventIDs(ctx context.Context) ([]string, error)
}

// Promoter fills the booking room: on every slot-released message, and on
// a slow safety-net tick for every event. Any number of Promoters may run
// at once: a promotion is one atomic script that admits only into free
// capacity, so duplicate or concurrent runs never admit past capacity.
type Promoter struct {
	store    PromoteStore
	ann      *Announcer
	log      *zap.Logger
	m        *Metrics
	sweepAge time.Duration
	// maxOutage ends a payment provider outage (hold clocks stopped)
	// that lasted longer (WithMaxOutage)
	maxOutage time.Duration
	outages   OutageLedger // records the end of such an outage (WithOutageLedger)

	mu      sync.Mutex
	soldOut map[string]bool // events whose sold_out broadcast this process sent
	ended   map[string]bool // events whose sales_ended broadcast this process sent
}

// PromoterOption configures a Promoter.
type PromoterOption func(*Promoter)

// WithSweepAge sets how old an outbox entry must be before the safety net
// re-announces it (default 30 s): younger entries are probably being
// announced by the instance that wrote them.
func WithSweepAge(d time.Duration) PromoterOption { return func(p *Promoter) { p.sweepAge = d } }

// WithMaxOutage sets how long an event's hold clocks may stay stopped
// for a payment provider outage (default 30 minutes; 0: no limit): a
// promotion that finds them stopped longer restarts them
// (booking.Store.EndProviderOutage), records it in the ledger
// (WithOutageLedger), publishes provider_recovered with
// "by=max_outage", and the holds run out the time they had left and are
// released by the normal rules (docs/runbook.md "Payment provider
// outage").
func WithMaxOutage(d time.Duration) PromoterOption { return func(p *Promoter) { p.maxOutage = d } }

// OutageLedger records the end of a payment provider outage in the system
// of record (*ledger.Ledger).
type OutageLedger interface {
	RecordProviderRecovered(ctx context.Context, eventID string, pausedSince, at time.Time, holds int64, by string) error
}

// WithOutageLedger records every outage a promotion ends for lasting
// longer than the maximum in l (PostgreSQL) before its fact is published.
func WithOutageLedger(l OutageLedger) PromoterOption { return func(p *Promoter) { p.outages = l } }

// DefaultMaxOutage is the default of WithMaxOutage.
const DefaultMaxOutage = 30 * time.Minute

// DefaultSweepAge is the default of WithSweepAge.
const DefaultSweepAge = 30 * time.Second

// NewPromoter returns a Promoter announcing through ann. log may be nil.
func NewPromoter(store PromoteStore, ann *Announcer, log *zap.Logger, opts ...PromoterOption) *Promoter {
	if log == nil {
		log = zap.NewNop()
	}
	p := &Promoter{store: store, ann: ann, log: log, m: ann.metrics, sweepAge: DefaultSweepAge,
		maxOutage: DefaultMaxOutage, soldOut: map[string]bool{}, ended: map[string]bool{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// HandleSlotReleased is the amqpx.Handler of slot-released-queue: it
// promotes into the event's free capacity and announces every admission and
// reclaimed expiry before the message is acked. A malformed message is
// dead-lettered (amqpx.Permanent); a message for an unknown event is acked.
// A redelivered or retried message first re-announces the event's outbox
// entries older than the sweep age, so an announcement that failed on the
// first attempt is retried with the message instead of waiting for the
// safety net (younger entries are being announced by their writer). When
// only Kafka failed (ErrKafkaPending) the message is acked: the outbox
// keeps the Kafka side for the safety net.
func (p *Promoter) HandleSlotReleased(ctx context.Context, d amqpx.Delivery) error {
	m, err := messages.DecodeSlotReleased(d.Body)
	if err != nil {
		return amqpx.Permanent(err)
	}
	if !ids.Valid(m.EventID) {
		return amqpx.Permanent(fmt.Errorf("%w: bad event_id %q", messages.ErrMalformed, m.EventID))
	}
	p.m.SlotReleasedEvents.WithLabelValues(reasonLabel(m.Reason)).Inc()
	log := requestid.Logger(ctx, p.log).With(zap.String("event_id", m.EventID), zap.String("message_id", d.MessageID))
	if d.Redelivered || d.RetryCount > 0 {
		// only entries older than the sweep age: younger ones are being
		// announced by their writer (one RabbitMQ publish per entry)
		n, err := p.ann.SweepOutbox(ctx, m.EventID, p.sweepAge)
		p.m.OutboxSwept.Add(float64(n))
		if err != nil && !errors.Is(err, ErrKafkaPending) {
			return err
		}
	}
	admitted, err := p.PromoteEvent(ctx, m.EventID)
	if errors.Is(err, booking.ErrEventNotFound) {
		log.Info("slot-released for an unknown event; dropped")
		return nil
	}
	if errors.Is(err, ErrKafkaPending) {
		// every RabbitMQ side is done; the outbox keeps the Kafka side for
		// the safety net: retrying the message would only burn its retries
		log.Warn("slot-released handled; Kafka events left to the outbox", zap.Int("admitted", admitted), zap.Error(err))
		return nil
	}
	if err != nil {
		return err
	}
	log.Debug("slot-released handled", zap.String("reason", m.Reason), zap.Int("admitted", admitted))
	return nil
}

// PromoteEvent promotes eventID until the room is full or the queue empty
// (batch after batch) and announces each batch. It returns how many users
// it admitted. A failed announcement stops it with an error; the admitted
// users' entries stay in the outbox. A Kafka failure alone
// (ErrKafkaPending) does not stop it: it goes on and returns that error at
// the end.
func (p *Promoter) PromoteEvent(ctx context.Context, eventID string) (int, error) {
	admitted := 0
	var pending error
	for {
		res, err := p.store.Promote(ctx, eventID, 0)
		if err != nil {
			return admitted, errors.Join(err, pending)
		}
		admitted += len(res.Promoted)
		p.m.Promotions.Add(float64(len(res.Promoted)))
		if res.Reason == "provider_degraded" {
			p.m.ProviderDegraded.WithLabelValues(eventID).Set(1)
		} else {
			p.m.ProviderDegraded.WithLabelValues(eventID).Set(0)
		}
		p.m.ExpiredReclaimed.Add(float64(len(res.Expired)))
		if err := p.ann.Announce(ctx, eventID, res.Outbox); errors.Is(err, ErrKafkaPending) {
			pending = err
		} else if err != nil {
			return admitted, err
		}
		if freedSeats(res.Expired) {
			// the reclaimed seats were offered to the waitlist in the same step
			if err := p.ann.AnnounceWaitlist(ctx, eventID); errors.Is(err, ErrKafkaPending) {
				pending = err
			} else if err != nil {
				return admitted, err
			}
		}
		if err := p.soldOutTransition(ctx, eventID, res.Reason == "sold_out"); err != nil {
			// Only a nicety: waiting users also learn it from their position.
			p.log.Warn("sold_out broadcast failed", zap.String("event_id", eventID), zap.Error(err))
		}
		if err := p.salesEndedTransition(ctx, eventID, res.Reason == "sales_ended"); err != nil {
			p.log.Warn("sales_ended broadcast failed", zap.String("event_id", eventID), zap.Error(err))
		}
		if res.Reason == "draw_pending" {
			if done, err := p.publishDraw(ctx, eventID); err != nil || !done {
				return admitted, err
			}
			continue
		}
		if res.Reason == "provider_degraded" && p.maxOutage > 0 && !res.HoldsPausedSince.IsZero() &&
			res.At.Sub(res.HoldsPausedSince) >= p.maxOutage {
			if ended, err := p.endOutage(ctx, eventID); err != nil || !ended {
				return admitted, errors.Join(err, pending)
			}
			continue
		}
		if res.Reason != "batch" {
			return admitted, pending
		}
	}
}

// providerStore is the part of *booking.Store that ends an outage.
type providerStore interface {
	EndProviderOutage(ctx context.Context, eventID string) (booking.ProviderState, error)
}

// endOutage restarts the hold clocks of an event stopped for longer than
// the maximum outage (the event then says so to the page), records it in
// the ledger and publishes provider_recovered (by=max_outage). false when
// the store cannot, or another process did it first. A failure after the
// Redis step leaves the record and the fact undone (the step is not
// repeated): the error is returned and logged.
func (p *Promoter) endOutage(ctx context.Context, eventID string) (bool, error) {
	ps, ok := p.store.(providerStore)
	if !ok {
		return false, nil
	}
	st, err := ps.EndProviderOutage(ctx, eventID)
	if err != nil || !st.Changed {
		return false, err
	}
	p.log.Warn("payment provider outage longer than the maximum: hold clocks restarted", zap.String("event_id", eventID),
		zap.Duration("outage", st.At.Sub(st.Ended)), zap.Int64("holds", st.Holds))
	if p.outages != nil {
		if err := p.outages.RecordProviderRecovered(ctx, eventID, st.Ended, st.At, st.Holds, "max_outage"); err != nil {
			p.log.Error("payment provider outage end not recorded", zap.String("event_id", eventID), zap.Error(err))
			return false, fmt.Errorf("record provider recovered: %w", err)
		}
	}
	if err := p.ann.kafka.Publish(ctx, events.ProviderRecovered(eventID, st.Ended, st.Holds, "max_outage", st.At)); err != nil {
		return false, fmt.Errorf("publish provider_recovered: %w", err)
	}
	return true, nil
}

// soldOutTransition broadcasts sold_out once per transition into the sold
// out state, as seen by this process (another instance may send its own).
func (p *Promoter) soldOutTransition(ctx context.Context, eventID string, soldOut bool) error {
	sent, err := p.broadcastOnce(ctx, p.soldOut, messages.NotifySoldOut, eventID, soldOut)
	if sent {
		p.m.SoldOutBroadcasts.Inc()
	}
	return err
}

// salesEndedTransition broadcasts sales_ended once per transition into
// the ended state (promotion's reason sales_ended), as seen by this
// process; waiting users also learn it from their position.
func (p *Promoter) salesEndedTransition(ctx context.Context, eventID string, ended bool) error {
	_, err := p.broadcastOnce(ctx, p.ended, messages.NotifySalesEnded, eventID, ended)
	return err
}

// broadcastOnce sends a notification of type typ to eventID's
// connections when on and not sent since on was last false (sent, kept
// by event, is guarded by mu); it reports whether it sent one.
func (p *Promoter) broadcastOnce(ctx context.Context, sent map[string]bool, typ, eventID string, on bool) (bool, error) {
	p.mu.Lock()
	was := sent[eventID]
	if !on {
		delete(sent, eventID)
	}
	p.mu.Unlock()
	if !on || was {
		return false, nil
	}
	err := p.ann.Notify(ctx, messages.Notification{Type: typ, EventID: eventID, Timestamp: p.ann.now().Unix()})
	if err != nil {
		return false, err
	}
	p.mu.Lock()
	sent[eventID] = true
	p.mu.Unlock()
	return true, nil
}

// Tick is one run of the safety net: for every event, promote into free
// capacity (reclaiming expired holds whose timeout message was lost) and
// re-announce outbox entries older than the sweep age (an announcer that
// crashed). It goes on with the other events when one fails and returns the
// errors joined.
func (p *Promoter) Tick(ctx context.Context) error {
	ids, err := p.store.EventIDs(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		n, err := p.PromoteEvent(ctx, id)
		if errors.Is(err, booking.ErrEventNotFound) {
			continue
		}
		if n > 0 {
			p.m.SafetyNetPromoted.Add(float64(n))
			p.log.Info("safety net admitted users", zap.String("event_id", id), zap.Int("admitted", n))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("event %s: %w", id, err))
			if !errors.Is(err, ErrKafkaPending) {
				continue
			}
		}
		swept, err := p.ann.SweepOutbox(ctx, id, p.sweepAge)
		p.m.OutboxSwept.Add(float64(swept))
		if err != nil {
			errs = append(errs, fmt.Errorf("event %s: %w", id, err))
		}
	}
	p.m.SafetyNetRuns.Inc()
	return errors.Join(errs...)
}

// RunSafetyNet runs Tick every interval until ctx is done (then it returns
// nil). A failing tick is logged and retried at the next one.
func (p *Promoter) RunSafetyNet(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return errors.New("admission: safety-net interval must be positive")
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := p.Tick(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("safety-net tick failed", zap.Error(err))
		}
	}
}

func reasonLabel(r string) string {
	switch r {
	case messages.ReasonTimeout, messages.ReasonPaymentSuccess, messages.ReasonPaymentFailure,
		messages.ReasonCancellation, messages.ReasonSafetyNet, messages.ReasonCapacity, messages.ReasonDraw:
		return r
	}
	return "other"
}

// freedSeats reports whether reclaimed holds freed seats (which the
// promotion offered to the waitlist).
func freedSeats(expired []booking.Expiry) bool {
	for _, x := range expired {
		if x.SeatID != "" {
			return true
		}
	}
	return false
}
