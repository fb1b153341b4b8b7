package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// publisher writes Kafka events with acks=all (*events.KafkaProducer).
type publisher interface {
	Publish(ctx context.Context, evs ...events.Event) error
}

// Restorer rebuilds events whose Redis state is gone from the ledger, and
// reconciles sold seats (reconcile.go). The slot-released consumer runs it
// every safety-net interval (Run); the gateway's admin restore calls
// Restore. Any number of instances may run: a rebuild is one Lua script
// that does nothing when the event is present.
type Restorer struct {
	Ledger *Ledger
	Store  *booking.Store
	// Kafka publishes the rebuild's event_restored fact at once and the
	// fact's outbox entry is acknowledged; optional. The entry is written
	// by the rebuild itself, so when Kafka is down (or nil) the safety
	// net's outbox sweep (pkg/admission) publishes it later.
	Kafka publisher
	Log   *zap.Logger
	// Metrics counts restores and reconciliation differences; optional.
	Metrics *Metrics
	// Now is the clock of the sequence base (default time.Now).
	Now func() time.Time
	// ReconcileEvery is how often Run reconciles (0: every interval). A
	// restore is cheap to check for (one EXISTS per event) and runs every
	// interval; a reconciliation reads every sold seat of every event from
	// both stores, work that grows with the seats sold, and repairs what
	// only a lost Redis write leaves behind.
	ReconcileEvery time.Duration

	mu      sync.Mutex
	pending map[string]string // event id -> the rebuild's steps the last pass found still to run
}

// SeqBaseFactor spaces the join sequences of successive rebuilds: a
// rebuilt event's counter restarts at now_ms × SeqBaseFactor (or above
// the highest sequence the ledger saw), so sequences, and fact ids built
// from them, never repeat across a rebuild while fewer than SeqBaseFactor
// users join per millisecond. 1000 × now_ms stays below 2^53.
const SeqBaseFactor = 1000

// SeqBaseGap is the least distance between the sequence bases of two
// rebuilds of one event (recorded in the ledger, events.seq_base): more
// joins than any sale has between two rebuilds, so a rebuild by an
// instance whose clock is behind the previous rebuilder's still starts
// above every sequence issued. 2^32 per rebuild leaves room for millions
// of rebuilds below 2^53.
const SeqBaseGap = 1 << 32

func (r *Restorer) log() *zap.Logger {
	if r.Log == nil {
		return zap.NewNop()
	}
	return r.Log
}

func (r *Restorer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Restored is one rebuilt event.
type Restored struct {
	EventID string
	booking.RestoreResult
}

// Restore rebuilds one event from the ledger when its configuration is
// gone from Redis. Errors: booking.ErrEventExists (present in Redis:
// nothing done), ErrEventNotFound (not in the ledger).
func (r *Restorer) Restore(ctx context.Context, eventID string) (Restored, error) {
	def, err := r.Ledger.Event(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	sold, err := r.Ledger.SoldOrders(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	maxSeq, err := r.Ledger.MaxSequence(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	base, err := r.Ledger.reserveSeqBase(ctx, eventID, max(maxSeq, r.now().UnixMilli()*SeqBaseFactor))
	if err != nil {
		return Restored{}, err
	}
	marks, err := r.Ledger.SeatMarks(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	alog, err := r.Ledger.AdmissionLogStart(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	// the draws' seeds and the current phase (the last change): the
	// rebuilt event has them from its first step, so the commitments
	// published before still match the seeds revealed and a presale's
	// audience holds throughout
	seeds, err := r.Ledger.DrawSeeds(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	phases, err := r.Ledger.Phases(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	// the schedule (the gateways' next tick applies the phase it says
	// now: its settings and prices, a change only when the phase differs)
	// and the draws' beacons: with the config too, so no step's failure
	// leaves a sale stuck in its phase or a draw closing without the
	// beacon round it was committed to
	sch, err := r.Ledger.Schedule(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	beacons, err := r.Ledger.Beacons(ctx, eventID)
	if err != nil {
		return Restored{}, err
	}
	in := booking.RestoreInput{Config: def.Config, Paused: def.Paused, SeqBase: base, Sold: soldSeats(perSeat(sold)),
		Marks: markedSeats(marks), AdmissionLog: alog, DrawSeeds: seeds, Schedule: sch, Beacons: beacons}
	if len(phases) > 0 {
		last := phases[len(phases)-1]
		in.Phase = booking.PhaseState{Phase: last.Phase, Audience: last.Audience}
	}
	res, err := r.Store.RestoreEvent(ctx, in)
	if err != nil {
		return Restored{}, err
	}
	failed := r.restoreSteps(ctx, eventID, nil)
	if err := r.Store.SetRestorePending(ctx, eventID, strings.Join(failed, ",")); err != nil {
		r.log().Error("the rebuild's failed steps not recorded", zap.String("event_id", eventID),
			zap.Strings("failed", failed), zap.Error(err))
	}
	out := Restored{EventID: eventID, RestoreResult: res}
	r.log().Warn("event restored from the ledger", zap.String("event_id", eventID), zap.Int64("seats", res.Total),
		zap.Int64("sold", res.Sold), zap.Int64("skipped", res.Skipped), zap.Int64("seq_base", res.SeqBase),
		zap.Int("marked", len(marks)-len(res.Unmarked)), zap.Strings("unmarked", res.Unmarked))
	if r.Metrics != nil {
		r.Metrics.restores.Inc()
	}
	if err := r.Ledger.countRestore(ctx, eventID); err != nil {
		r.log().Warn("count restore failed", zap.String("event_id", eventID), zap.Error(err))
	}
	if r.Kafka != nil {
		fact := res.Restored
		err := r.Kafka.Publish(ctx, events.EventRestored(eventID, fact.Sequence, fact.Reason, fact.At))
		if err == nil {
			err = r.Store.AckOutbox(ctx, eventID, fact)
		}
		if err != nil {
			// the rebuild stands, and so does its outbox entry: the
			// safety net's sweep publishes the fact (same id) later
			r.log().Warn("event_restored left to the outbox sweep", zap.String("event_id", eventID), zap.Error(err))
			if r.Metrics != nil {
				r.Metrics.errors.WithLabelValues("publish").Inc()
			}
		}
	}
	return out, nil
}

// The steps of a rebuild after RestoreEvent, by name: each loads what the
// ledger keeps of one part of the event, and can run again (a step that
// failed runs again on a later pass: RestoreMissing).
const (
	stepAllocations = "allocations"
	stepAccessible  = "accessible"
	stepCodes       = "codes"
	stepSelected    = "selected"
	stepSeeds       = "seeds"
	stepWaitlist    = "waitlist"
)

var restoreStepOrder = []string{stepAllocations, stepAccessible, stepCodes, stepSelected, stepSeeds, stepWaitlist}

// restoreSteps runs the steps of a rebuild after RestoreEvent, all of
// them (only nil) or those only names, in their order, and returns the
// names of those that failed (each logged).
func (r *Restorer) restoreSteps(ctx context.Context, eventID string, only map[string]bool) (failed []string) {
	for _, name := range restoreStepOrder {
		if only != nil && !only[name] {
			continue
		}
		if err := r.restoreStep(ctx, eventID, name); err != nil {
			r.log().Error("a step of the rebuild failed; it runs again on the next pass", zap.String("event_id", eventID),
				zap.String("step", name), zap.Error(err))
			failed = append(failed, name)
			if r.Metrics != nil {
				r.Metrics.errors.WithLabelValues("restore_step").Inc()
			}
		}
	}
	return failed
}

func (r *Restorer) restoreStep(ctx context.Context, eventID, name string) error {
	switch name {
	case stepAllocations:
		// the allocations' release times (until they are set, the
		// allocation sweep puts the ledger's back once one is due)
		releases, err := r.Ledger.AllocationReleases(ctx, eventID)
		for _, a := range releases {
			if err != nil {
				break
			}
			err = r.Store.SetAllocationRelease(ctx, eventID, a.Channel, a.ReleaseAt)
		}
		return err
	case stepAccessible:
		// the wheelchair spaces and companion seats, also those whose
		// allocation ended (until then the seat map shows them without
		// their kind)
		kinds, err := r.Ledger.AccessibleSeats(ctx, eventID)
		if err != nil {
			return err
		}
		return markAccessible(ctx, r.Store, eventID, kinds)
	case stepCodes:
		// the access codes, with their uses and users so far (until then
		// the event's code joins are refused)
		codes, err := r.Ledger.Codes(ctx, eventID)
		if err != nil || len(codes) == 0 {
			return err
		}
		return r.Store.LoadCodes(ctx, eventID, codes)
	case stepSelected:
		// the fans the registration's draw selected (until then they are
		// refused as not selected)
		selected, err := r.Ledger.Selected(ctx, eventID)
		if err != nil || len(selected) == 0 {
			return err
		}
		return r.Store.MarkSelected(ctx, eventID, selected)
	case stepSeeds:
		// the seeds of draws the ledger had none of (new ones the rebuild
		// drew for the event's pre-queue or a later phase's; the
		// reconciliation records them too)
		_, err := r.Ledger.KeepDrawSeeds(ctx, r.Store, eventID, r.log())
		return err
	case stepWaitlist:
		// the waitlist's open places, last: the seats free after the
		// rebuild go to its head first (until then the fans' places stay
		// in the ledger; a place already back, or a buyer's, is skipped)
		places, err := r.Ledger.WaitlistPlaces(ctx, eventID)
		if err != nil || len(places) == 0 {
			return err
		}
		n, offers, err := r.Store.LoadWaitlist(ctx, eventID, places)
		if err == nil {
			r.log().Info("waitlist restored", zap.String("event_id", eventID), zap.Int("places", n), zap.Int("offers", offers))
		}
		return err
	}
	return fmt.Errorf("unknown rebuild step %q", name)
}

func soldSeats(orders []Order) []booking.SoldSeat {
	out := make([]booking.SoldSeat, len(orders))
	for i, o := range orders {
		out[i] = booking.SoldSeat{UserID: o.UserID, SeatID: o.SeatID, PaymentID: o.PaymentID, Sequence: o.Sequence}
	}
	return out
}

// RestoreMissing rebuilds every event of the ledger whose configuration is
// gone from Redis, and runs again the steps after RestoreEvent that a
// rebuild left undone (failed, or not run because its process stopped)
// and that the pass before found undone too. It goes on past an event
// that fails and returns the errors joined.
func (r *Restorer) RestoreMissing(ctx context.Context) ([]Restored, error) {
	ids, err := r.Ledger.EventIDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Restored
	var errs []error
	pending := map[string]string{}
	for _, id := range ids {
		ok, steps, err := r.Store.RestorePending(ctx, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			if steps != "" {
				pending[id] = steps
				r.resume(ctx, id, steps)
			}
			continue
		}
		res, err := r.Restore(ctx, id)
		if errors.Is(err, booking.ErrEventExists) {
			continue // another instance was first
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", id, err))
			continue
		}
		out = append(out, res)
	}
	r.mu.Lock()
	r.pending = pending
	r.mu.Unlock()
	return out, errors.Join(errs...)
}

// resume runs again the steps of eventID's rebuild that are still to run
// (steps: booking.RestorePendingAll or names), when the last pass found
// them pending too (a rebuild in progress, by this instance or another,
// is left to finish its own steps).
func (r *Restorer) resume(ctx context.Context, eventID, steps string) {
	r.mu.Lock()
	seen := r.pending[eventID] == steps
	r.mu.Unlock()
	if !seen {
		return
	}
	var only map[string]bool
	if steps != booking.RestorePendingAll {
		only = map[string]bool{}
		for _, name := range strings.Split(steps, ",") {
			only[name] = true
		}
	}
	failed := r.restoreSteps(ctx, eventID, only)
	if err := r.Store.SetRestorePending(ctx, eventID, strings.Join(failed, ",")); err != nil {
		r.log().Error("the rebuild's failed steps not recorded", zap.String("event_id", eventID), zap.Error(err))
		return
	}
	r.log().Warn("rebuild steps run again", zap.String("event_id", eventID), zap.String("steps", steps),
		zap.Strings("still_failing", failed))
}

// Run restores and reconciles every interval until ctx ends: the ledger's
// part of the safety net. A failed pass is logged and retried next tick.
func (r *Restorer) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var reconciled time.Time
	for {
		r.restorePass(ctx)
		if time.Since(reconciled) >= r.ReconcileEvery {
			r.reconcilePass(ctx)
			reconciled = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick is one whole pass of Run: restore what is missing, then reconcile.
func (r *Restorer) Tick(ctx context.Context) {
	r.restorePass(ctx)
	r.reconcilePass(ctx)
}

func (r *Restorer) restorePass(ctx context.Context) {
	if _, err := r.RestoreMissing(ctx); err != nil && ctx.Err() == nil {
		r.log().Warn("restore pass failed", zap.Error(err))
		if r.Metrics != nil {
			r.Metrics.errors.WithLabelValues("restore").Inc()
		}
	}
}

func (r *Restorer) reconcilePass(ctx context.Context) {
	if _, err := r.ReconcileAll(ctx); err != nil && ctx.Err() == nil {
		r.log().Warn("reconcile pass failed", zap.Error(err))
		if r.Metrics != nil {
			r.Metrics.errors.WithLabelValues("reconcile").Inc()
		}
	}
}

// markAccessible gives the seats of kinds (seat -> kind) their kind in
// Redis, one call per kind.
func markAccessible(ctx context.Context, store *booking.Store, eventID string, kinds map[string]string) error {
	byKind := map[string][]string{}
	for seat, kind := range kinds {
		byKind[kind] = append(byKind[kind], seat)
	}
	for _, kind := range []string{booking.ChannelWheelchair, booking.ChannelCompanion} {
		if seats := byKind[kind]; len(seats) > 0 {
			slices.Sort(seats)
			if _, err := store.MarkAccessible(ctx, eventID, kind, seats); err != nil {
				return err
			}
		}
	}
	return nil
}
