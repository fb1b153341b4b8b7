package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// Reconciliation compares, per event, the seats Redis has sold with the
// completed orders of the ledger. The safe direction is repaired: a seat
// sold in the ledger but not in Redis becomes sold in Redis
// (booking.Store.RepairSold). The other direction, a seat Redis sold with
// no order in the ledger, is logged and counted for an operator: it is
// normal for the moments between a webhook's Lua step and its ledger
// write (and while PostgreSQL is down: the provider retries), and a
// lasting one means a webhook never reached 2xx.

// Reconciliation is one event's comparison.
type Reconciliation struct {
	EventID string
	// MissingInRedis are seats the ledger sold that Redis did not have
	// sold to the same buyer (before the repair).
	MissingInRedis []string
	// Repaired of them became sold in Redis.
	Repaired int64
	// Conflicts are seats Redis sold to another buyer than the ledger's.
	Conflicts []string
	// MissingInLedger are seats Redis sold with no completed order.
	MissingInLedger []string
	// DrawSeedMismatches are the draws (their phases; "": the event's
	// own) whose seed in Redis differs from the one the ledger kept.
	DrawSeedMismatches []string
	// UndoneSettings are the settings Redis took in a change the ledger
	// then rolled back, put back in Redis (Ledger.SettleSettings).
	UndoneSettings []string
	// RecordedPhase is the phase Redis had that the ledger's record
	// lacked, now recorded (Ledger.KeepPhase); "" none.
	RecordedPhase string
	// RecordedMarks are the holds, kills, allocations, releases and ends
	// of allocations Redis had that the ledger's record lacked, now
	// recorded (Ledger.KeepMarks).
	RecordedMarks []MarkChange
	// RecordedKinds are the seats whose accessibility kind Redis had and
	// the ledger's record lacked or had otherwise, now recorded
	// (Ledger.KeepKinds).
	RecordedKinds []string
	// SelectionReset: the users Redis had as selected by the registration
	// draw differed from the ledger's draw and were set to them
	// (Ledger.KeepSelection).
	SelectionReset bool
}

// Reconcile compares and repairs one event. booking.ErrEventNotFound when
// the event is not in Redis (RestoreMissing's job).
func (r *Restorer) Reconcile(ctx context.Context, eventID string) (Reconciliation, error) {
	out := Reconciliation{EventID: eventID}
	if ok, err := r.Store.EventExists(ctx, eventID); err != nil || !ok {
		return out, cmp.Or(err, booking.ErrEventNotFound)
	}
	undone, err := r.Ledger.SettleSettings(ctx, r.Store, eventID)
	if err != nil {
		return out, err
	}
	if out.UndoneSettings = undone; len(undone) > 0 {
		r.log().Warn("reconcile: settings Redis took in a change the ledger rolled back, undone",
			zap.String("event_id", eventID), zap.Strings("fields", undone))
		if r.Metrics != nil {
			r.Metrics.undone.Add(float64(len(undone)))
		}
	}
	kept, err := r.Ledger.KeepPhase(ctx, r.Store, eventID)
	if err != nil {
		return out, err
	}
	if kept.ID != 0 {
		out.RecordedPhase = kept.Phase
		if r.Metrics != nil {
			r.Metrics.recorded.WithLabelValues("phase").Inc()
		}
		r.log().Warn("reconcile: the phase Redis has recorded in the ledger", zap.String("event_id", eventID),
			zap.String("phase", kept.Phase), zap.String("audience", kept.Audience), zap.String("previous_phase", kept.Previous))
	}
	if out.RecordedMarks, err = r.Ledger.KeepMarks(ctx, r.Store, eventID); err != nil {
		return out, err
	}
	if r.Metrics != nil && len(out.RecordedMarks) > 0 {
		r.Metrics.recorded.WithLabelValues("seat_marks").Add(float64(len(out.RecordedMarks)))
	}
	for _, c := range out.RecordedMarks {
		r.log().Warn("reconcile: seat marks Redis has recorded in the ledger", zap.String("event_id", eventID),
			zap.String("mark", string(c.Mark)), zap.String("purpose", c.Purpose), zap.Strings("seats", first(c.Changed, 20)))
	}
	if out.RecordedKinds, err = r.keepKinds(ctx, eventID); err != nil {
		return out, err
	}
	if out.SelectionReset, err = r.Ledger.KeepSelection(ctx, r.Store, eventID); err != nil {
		return out, err
	}
	if out.SelectionReset {
		r.log().Warn("reconcile: the registration draw's selection in Redis set to the ledger's", zap.String("event_id", eventID))
	}
	// The ledger first: a sale's Lua step comes before its order, so a
	// seat sold between the two reads is in Redis's newer answer and not
	// in the ledger's (counted as missing in the ledger, as it is for a
	// moment), never the other way round, which would be "repaired".
	orders, err := r.Ledger.SoldOrders(ctx, eventID)
	if err != nil {
		return out, err
	}
	redisSold, err := r.Store.SoldSeats(ctx, eventID)
	if err != nil {
		return out, err
	}
	orders = perSeat(orders)
	inLedger := make(map[string]bool, len(orders))
	var repair []Order
	for _, o := range orders {
		inLedger[o.SeatID] = true
		if redisSold[o.SeatID] != o.UserID {
			out.MissingInRedis = append(out.MissingInRedis, o.SeatID)
			repair = append(repair, o)
		}
	}
	for seat := range redisSold {
		if !inLedger[seat] {
			out.MissingInLedger = append(out.MissingInLedger, seat)
		}
	}
	sort.Strings(out.MissingInLedger)
	if len(repair) > 0 {
		res, err := r.Store.RepairSold(ctx, eventID, soldSeats(repair))
		if err != nil {
			return out, err
		}
		out.Repaired, out.Conflicts = res.Repaired, res.Conflicts
		r.log().Warn("reconcile: seats sold in the ledger repaired in Redis", zap.String("event_id", eventID),
			zap.Int64("repaired", res.Repaired), zap.Strings("conflicts", res.Conflicts), zap.Strings("unknown", res.Unknown))
	}
	if len(out.MissingInLedger) > 0 {
		r.log().Warn("reconcile: seats sold in Redis without an order in the ledger", zap.String("event_id", eventID),
			zap.Int("count", len(out.MissingInLedger)), zap.Strings("seats", first(out.MissingInLedger, 20)))
	}
	if m := r.Metrics; m != nil {
		m.difference.WithLabelValues(eventID, "missing_in_redis").Set(float64(len(out.MissingInRedis)))
		m.difference.WithLabelValues(eventID, "missing_in_ledger").Set(float64(len(out.MissingInLedger)))
		m.difference.WithLabelValues(eventID, "conflict").Set(float64(len(out.Conflicts)))
		m.repaired.Add(float64(out.Repaired))
	}
	// the draws' seeds the ledger lacks (a create, update or schedule
	// whose ledger write failed): recorded, so a rebuild keeps them; those
	// that differ from the ledger's are counted for the alert
	differ, err := r.Ledger.KeepDrawSeeds(ctx, r.Store, eventID, r.log())
	if err != nil {
		return out, fmt.Errorf("draw seeds: %w", err)
	}
	out.DrawSeedMismatches = differ
	if m := r.Metrics; m != nil {
		m.drawSeeds.WithLabelValues(eventID).Set(float64(len(differ)))
	}
	// likewise the draws' beacons (committed in Redis first)
	saved, err := r.Ledger.KeepBeacons(ctx, r.Store, eventID)
	if err != nil {
		return out, fmt.Errorf("beacons: %w", err)
	}
	if len(saved) > 0 {
		r.log().Warn("reconcile: draw beacons recorded from Redis", zap.String("event_id", eventID), zap.Strings("phases", saved))
	}
	return out, nil
}

// keepKinds is Ledger.KeepKinds, counted and logged.
func (r *Restorer) keepKinds(ctx context.Context, eventID string) ([]string, error) {
	kept, err := r.Ledger.KeepKinds(ctx, r.Store, eventID)
	if err != nil || len(kept) == 0 {
		return nil, err
	}
	if r.Metrics != nil {
		r.Metrics.recorded.WithLabelValues("seat_kinds").Add(float64(len(kept)))
	}
	r.log().Warn("reconcile: seat kinds Redis has recorded in the ledger", zap.String("event_id", eventID),
		zap.Strings("seats", first(kept, 20)))
	return kept, nil
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// ReconcileAll reconciles every event of the ledger present in Redis.
func (r *Restorer) ReconcileAll(ctx context.Context) ([]Reconciliation, error) {
	ids, err := r.Ledger.EventIDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []Reconciliation
	var errs []error
	seen := map[string]bool{} // reconciled, or kept from the last pass after an error
	for _, id := range ids {
		rec, err := r.Reconcile(ctx, id)
		if errors.Is(err, booking.ErrEventNotFound) {
			continue
		}
		seen[id] = true
		if err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", id, err))
			continue
		}
		out = append(out, rec)
	}
	if r.Metrics != nil {
		r.Metrics.keepOnly(seen)
	}
	return out, errors.Join(errs...)
}
