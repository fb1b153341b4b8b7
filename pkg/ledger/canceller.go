package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Canceller carries out the cancellations CancelOrder records, step by
// step, each step recorded on the cancellation's row once done:
//
//  1. the seats back on sale in Redis (booking.Store.ReleaseSold, one
//     atomic step that a repeat cannot repeat; an event missing from
//     Redis counts as done: its rebuild leaves cancelled seats free),
//  2. the order_cancelled fact, acknowledged by Kafka,
//  3. the refund with the provider, under the idempotency key
//     RefundKey(id), so however often it is asked the money goes back
//     once; a refusal or failure leaves it pending with the reason (a
//     box-office sale's money goes back at the counter: no provider),
//  4. the refund_issued fact.
//
// Finish runs them for one cancellation (the request that recorded it);
// Sweep, on a tick (Run), finishes every cancellation left unfinished by
// a crash, a Redis, Kafka or provider outage, or a refusal, so a failure
// between two steps loses nothing: the steps are idempotent and a fact
// published twice has the same id.
type Canceller struct {
	Ledger  *Ledger
	Store   *booking.Store
	Refunds payment.Refunder
	Kafka   publisher
	Log     *zap.Logger
	// Age is how long a cancellation is left to the request that recorded
	// it before a sweep takes it (default 5 s).
	Age time.Duration
	// Offers, when set, announces the waitlist offers the release of
	// cancelled seats made (admission.Announcer.AnnounceWaitlist); without
	// it the safety net's sweep announces them.
	Offers func(ctx context.Context, eventID string) error
}

// RefundKey is the provider's idempotency key of a cancellation's refund.
func RefundKey(id int64) string { return fmt.Sprintf("can_%d", id) }

func (c *Canceller) log() *zap.Logger {
	if c.Log == nil {
		return zap.NewNop()
	}
	return c.Log
}

// Finish runs the steps of x that are not done yet and returns the
// cancellation as recorded after them. The error is the first step that
// failed (the later ones wait for the next try); a refund the provider
// refused or did not confirm is recorded as pending with the reason and
// returned as an error too.
func (c *Canceller) Finish(ctx context.Context, x Cancellation) (Cancellation, error) {
	var err error
	if x.Released == nil {
		if x, err = c.release(ctx, x); err != nil {
			return x, err
		}
	}
	if !x.CancelledPublished && c.Kafka != nil {
		f := events.OrderCancelled(x.ID, x.EventID, x.UserID, strings.Join(x.SeatIDs, ","), x.PaymentID, x.Reason,
			x.Amount, x.Currency, x.CreatedAt)
		if err := c.Kafka.Publish(ctx, f); err != nil {
			return x, fmt.Errorf("ledger: publish order_cancelled: %w", err)
		}
		if x, err = c.Ledger.MarkPublished(ctx, x.ID, false); err != nil {
			return x, err
		}
	}
	if x.RefundStatus != RefundRefunded {
		if x, err = c.refund(ctx, x); err != nil {
			return x, err
		}
	}
	if !x.RefundPublished && c.Kafka != nil {
		f := events.RefundIssued(x.ID, x.EventID, x.UserID, strings.Join(x.SeatIDs, ","), x.PaymentID, x.Reason,
			x.Amount, x.Currency, *x.RefundedAt)
		if err := c.Kafka.Publish(ctx, f); err != nil {
			return x, fmt.Errorf("ledger: publish refund_issued: %w", err)
		}
		if x, err = c.Ledger.MarkPublished(ctx, x.ID, true); err != nil {
			return x, err
		}
	}
	return x, nil
}

func (c *Canceller) release(ctx context.Context, x Cancellation) (Cancellation, error) {
	res, err := c.Store.ReleaseSold(ctx, x.EventID, x.UserID, x.PaymentID, x.SeatIDs)
	switch {
	case errors.Is(err, booking.ErrEventNotFound):
		// gone from Redis: its rebuild reads the ledger, where the seats
		// are cancelled, and leaves them free
	case err != nil:
		return x, fmt.Errorf("ledger: release cancelled seats: %w", err)
	case len(res.Left) > 0:
		c.log().Info("cancellation: seats not sold to the buyer in Redis left as they are", zap.Int64("cancellation_id", x.ID),
			zap.String("event_id", x.EventID), zap.Strings("seats", res.Left))
	}
	if err == nil && res.Released > 0 && c.Offers != nil {
		if err := c.Offers(ctx, x.EventID); err != nil {
			c.log().Warn("waitlist offers left to the sweep", zap.String("event_id", x.EventID), zap.Error(err))
		}
	}
	return c.Ledger.MarkReleased(ctx, x.ID)
}

// refund gives the cancelled seats' amount back: through the provider,
// except for a box-office sale (booking.IsBoxOfficePayment), paid at the
// counter, whose money the operator who cancels hands back there: its
// refund is recorded made at once.
func (c *Canceller) refund(ctx context.Context, x Cancellation) (Cancellation, error) {
	if x.Amount > 0 && !booking.IsBoxOfficePayment(x.PaymentID) {
		if c.Refunds == nil {
			return c.refundFailed(ctx, x, errors.New("no payment provider for refunds is configured"))
		}
		if _, err := c.Refunds.Refund(ctx, x.PaymentID, x.Amount, RefundKey(x.ID)); err != nil {
			return c.refundFailed(ctx, x, err)
		}
	}
	return c.Ledger.MarkCancellationRefunded(ctx, x.ID)
}

// refundFailed records the refund as pending with the reason: the
// provider's error code when it answered, else what went wrong.
func (c *Canceller) refundFailed(ctx context.Context, x Cancellation, cause error) (Cancellation, error) {
	reason := "unavailable: " + cause.Error()
	var pe *payment.Error
	if errors.As(cause, &pe) && pe.Refused() {
		reason = "refused: " + strings.TrimSpace(pe.Code+" "+pe.Message)
	}
	c.log().Warn("cancellation: refund not confirmed; retried by the sweep", zap.Int64("cancellation_id", x.ID),
		zap.String("payment_id", x.PaymentID), zap.Int64("amount", x.Amount), zap.Error(cause))
	y, err := c.Ledger.MarkRefundFailed(ctx, x.ID, reason)
	if err != nil {
		return x, err
	}
	return y, fmt.Errorf("%w: %s", ErrRefundPending, reason)
}

// ErrRefundPending: the provider refused or did not confirm a refund; it
// stays pending and the sweep asks again.
var ErrRefundPending = errors.New("refund pending")

const cancelSweepBatch = 100

// Sweep finishes every cancellation with a step left whose last change
// is older than Age, and returns how many it finished.
func (c *Canceller) Sweep(ctx context.Context) (int, error) {
	open, err := c.Ledger.OpenCancellations(ctx, sweepGrace(c.Age), cancelSweepBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, x := range open {
		if _, err := c.Finish(ctx, x); err != nil {
			errs = append(errs, fmt.Errorf("cancellation %d: %w", x.ID, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Run sweeps every interval until ctx ends; what a sweep could not
// finish is logged and tried again at the next tick.
func (c *Canceller) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, c.log(), "cancellations", c.Sweep)
}
