package main

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// confirmWatch finds the outage the breaker cannot see: the provider takes
// payments but does not confirm them (its webhooks stop coming). Every
// tick it looks in the ledger for the oldest payment started
// PROVIDER_CONFIRM_TIMEOUT ago or more whose webhook has not arrived, with
// no webhook of any payment since it started, and asks the provider for its
// status: "pending" is a fan who has not paid (or left the checkout page),
// and a payment it does not know was never created (the gateway's call
// failed): neither is an outage; no answer, or an answer that the money moved while no
// webhook said so, declares the provider degraded (by=unconfirmed). Then
// each tick probes: the oldest unconfirmed payment's status is answered
// and still pending, or none is waiting and the provider answers; Probes
// successes in a row declare the recovery, only of an outage this watch
// declared (never one an operator or the breaker declared first), and not
// while the breaker is open. Its declarations are in the audit trail
// (actor unconfirmed). One goroutine runs Check (retry.Every).
type confirmWatch struct {
	Ledger interface {
		OldestUnconfirmed(ctx context.Context, wait time.Duration, after time.Time) (ledger.Unconfirmed, error)
	}
	// Status is the provider's status of a payment, called directly (not
	// through the breaker: an open breaker would refuse every probe).
	Status  func(ctx context.Context, paymentID string) (string, error)
	Timeout time.Duration
	Probes  int
	// Declare stops or restarts the hold clocks of every event and says
	// how many changed (Server.declareProvider).
	Declare func(ctx context.Context, degraded bool) (changed int, err error)
	// BreakerOpen, when set, holds a recovery back while it says true.
	BreakerOpen func() bool
	Log         *zap.Logger

	after    time.Time // payments started then or before are settled
	declared bool      // degraded, found by this watch
	ours     bool      // and this watch's declaration changed the clocks
	ok       int       // probes in a row that succeeded
}

// probeID is a payment id never issued: asking for it tells whether the
// provider answers at all (a 404 is an answer).
const probeID = "probe-provider-health"

// Check is one tick; it returns how many events' clocks it changed.
func (w *confirmWatch) Check(ctx context.Context) (int, error) {
	u, err := w.Ledger.OldestUnconfirmed(ctx, w.Timeout, w.after)
	none := errors.Is(err, ledger.ErrNoUnconfirmed)
	if err != nil && !none {
		return 0, err
	}
	if !w.declared {
		if none {
			return 0, nil
		}
		if u.Webhooked || w.pending(ctx, u.PaymentID) {
			w.after = u.CreatedAt // the provider confirms: look at the next one
			return 0, nil
		}
		n, err := w.Declare(ctx, true)
		if err != nil {
			return 0, err
		}
		w.declared, w.ours, w.ok = true, n > 0, 0
		w.log().Warn("payment provider does not confirm payments: declared degraded", zap.String("payment_id", u.PaymentID),
			zap.Time("started", u.CreatedAt), zap.Int("events_changed", n))
		return n, nil
	}
	answered := false
	if none {
		_, perr := w.Status(ctx, probeID)
		var pe *payment.Error
		answered = perr == nil || (errors.As(perr, &pe) && pe.Refused())
	} else if answered = w.pending(ctx, u.PaymentID); answered {
		w.after = u.CreatedAt
	}
	if !answered {
		w.ok = 0
		return 0, nil
	}
	if w.ok++; w.ok < w.Probes || (w.BreakerOpen != nil && w.BreakerOpen()) {
		return 0, nil
	}
	w.declared, w.ok = false, 0
	if !w.ours {
		return 0, nil
	}
	n, err := w.Declare(ctx, false)
	if err != nil {
		w.declared = true // the next tick tries again
		return 0, err
	}
	w.log().Warn("payment provider confirms payments again: declared recovered", zap.Int("events_changed", n))
	return n, nil
}

// pending: the provider answers that the payment waits for the fan, or
// that it never heard of it (the gateway's call to create it failed):
// either way no money moved that a webhook should have confirmed.
func (w *confirmWatch) pending(ctx context.Context, paymentID string) bool {
	st, err := w.Status(ctx, paymentID)
	var pe *payment.Error
	return (err == nil && st == "pending") || (errors.As(err, &pe) && pe.Refused())
}

func (w *confirmWatch) log() *zap.Logger {
	if w.Log == nil {
		return zap.NewNop()
	}
	return w.Log
}

// confirmWatch returns the watch of the provider's confirmations that
// declares through this server (by=unconfirmed), recorded in the audit
// trail.
func (s *Server) confirmWatch(l *ledger.Ledger, status func(context.Context, string) (string, error), timeout time.Duration, probes int,
	breakerOpen func() bool) *confirmWatch {
	return &confirmWatch{Ledger: l, Status: status, Timeout: timeout, Probes: probes, BreakerOpen: breakerOpen, Log: s.Log,
		Declare: func(ctx context.Context, degraded bool) (int, error) {
			resp, err := s.declareProvider(ctx, degraded, "unconfirmed")
			if err != nil {
				return 0, err
			}
			s.recordDeclaration(ctx, "unconfirmed", degraded, resp.Changed)
			return resp.Changed, nil
		}}
}

// confirmInterval is how often the watch looks: a quarter of the timeout,
// between a second and 30 s.
func confirmInterval(timeout time.Duration) time.Duration {
	return min(max(timeout/4, time.Second), 30*time.Second)
}

// probeBreaker asks the provider for a payment never issued through the
// breaker when it is not closed (payment.Breaker.Probe): the answer, a
// 404, is a successful probe, so the breaker closes (and recovers the
// provider it declared degraded) after an outage even when no fan pays.
// An open breaker is no error.
func probeBreaker(ctx context.Context, b *payment.Breaker, status func(context.Context, string) (string, error)) error {
	err := b.Probe(ctx, func(ctx context.Context) error { _, err := status(ctx, probeID); return err })
	if errors.Is(err, payment.ErrOpen) {
		return nil
	}
	return err
}
