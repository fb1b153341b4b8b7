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
	ReadDraw(ctx context.Context, eventID string) (booking.Draw, error)
	MarkDrawn(ctx context.Context, eventID string) error
}

// publishDraw runs when promotion answers draw_pending (the sale started
// and its pre-queue's draw is not out yet): it reads the pre-queue in its
// drawn order, publishes the Kafka queue_randomized fact (seed, count and
// the order's digest; confirmed, acks=all) and then lets promotion go on.
// Several instances may do it at once: the fact's id is the same, so
// consumers keep one.
func (p *Promoter) publishDraw(ctx context.Context, eventID string) error {
	ds, ok := p.store.(drawStore)
	if !ok {
		return errors.New("admission: the store cannot draw a pre-queue")
	}
	d, err := ds.ReadDraw(ctx, eventID)
	if err != nil {
		return err
	}
	if d.Count > 0 {
		ev := events.QueueRandomized(eventID, d.Count, d.Seed, d.Commit, d.Digest, p.ann.now())
		if err := p.ann.kafka.Publish(ctx, ev); err != nil {
			return fmt.Errorf("publish queue_randomized: %w", err)
		}
		p.log.Info("pre-queue drawn", zap.String("event_id", eventID), zap.Int64("count", d.Count),
			zap.String("digest", d.Digest))
	}
	return ds.MarkDrawn(ctx, eventID)
}
