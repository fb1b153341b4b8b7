package admission

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// drawStore is the part of *booking.Store that publishes a pre-queue's
// draw (booking/prequeue.go).
type drawStore interface {
	CloseDraw(ctx context.Context, eventID string) (booking.Draw, error)
	MarkDrawn(ctx context.Context, eventID string) error
	ClosePhaseDraw(ctx context.Context, eventID string) (booking.PhaseDraw, bool, error)
	MarkPhaseDrawn(ctx context.Context, eventID, phase string) error
}

// publishDraw runs when promotion answers draw_pending (the sale started
// and its pre-queue's draw is not out yet): it closes the pre-queue and
// ranks it (booking.Store.CloseDraw), publishes the Kafka queue_randomized
// fact (the draw's inputs: seed, commitment, count, the closed list's
// digest and the beacon's round and value if any; confirmed, acks=all) and then lets promotion go on. Several
// instances may do it at once: one closes the draw while the others find
// it busy and leave it to the next call; the fact's id is the same, so
// consumers keep one. It reports whether the draw is out.
func (p *Promoter) publishDraw(ctx context.Context, eventID string) (bool, error) {
	ds, ok := p.store.(drawStore)
	if !ok {
		return false, errors.New("admission: the store cannot draw a pre-queue")
	}
	if done, pending, err := p.publishPhaseDraw(ctx, ds, eventID); pending || err != nil {
		return done, err
	}
	d, err := ds.CloseDraw(ctx, eventID)
	if errors.Is(err, booking.ErrDrawBusy) || errors.Is(err, booking.ErrBeaconPending) {
		// busy elsewhere, or waiting for the operator to supply the
		// beacon round's value: the pre-queue is not admitted yet
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if d.Count > 0 {
		ev := events.QueueRandomized(eventID, d.Count, d.Seed, d.Commit, d.Digest, d.Beacon, p.ann.now())
		if err := p.ann.kafka.Publish(ctx, ev); err != nil {
			return false, fmt.Errorf("publish queue_randomized: %w", err)
		}
		p.log.Info("pre-queue drawn", zap.String("event_id", eventID), zap.Int64("count", d.Count),
			zap.String("digest", d.Digest))
	}
	return true, ds.MarkDrawn(ctx, eventID)
}

// publishPhaseDraw is publishDraw for a later phase's pre-queue
// (booking.Store.ClosePhaseDraw), when one is pending (pending true): it
// is placed into the queue, its queue_randomized (reason ending with
// phase=<id>) published, and then promotion lets go on
// (MarkPhaseDrawn). done: the draw is out.
func (p *Promoter) publishPhaseDraw(ctx context.Context, ds drawStore, eventID string) (done, pending bool, err error) {
	d, pending, err := ds.ClosePhaseDraw(ctx, eventID)
	if errors.Is(err, booking.ErrDrawBusy) || errors.Is(err, booking.ErrBeaconPending) {
		// as publishDraw's: busy elsewhere, or waiting for the beacon
		return false, true, nil
	}
	if err != nil || !pending {
		return false, pending, err
	}
	if d.Count > 0 {
		ev := events.PhaseQueueRandomized(eventID, d.Phase, d.Count, d.Seed, d.Commit, d.Digest, d.Beacon,
			p.ann.now())
		if err := p.ann.kafka.Publish(ctx, ev); err != nil {
			return false, true, fmt.Errorf("publish queue_randomized: %w", err)
		}
		p.log.Info("phase pre-queue drawn", zap.String("event_id", eventID), zap.String("phase", d.Phase),
			zap.Int64("count", d.Count), zap.String("digest", d.Digest))
	}
	return true, true, ds.MarkPhaseDrawn(ctx, eventID, d.Phase)
}
