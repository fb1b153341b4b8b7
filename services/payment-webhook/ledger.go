package main

import (
	"context"
	"errors"

	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// recorder is the system of record (*ledger.Ledger): a success webhook's
// order is written there before the provider gets its 2xx, so a 2xx means
// "durable in PostgreSQL"; PostgreSQL unreachable answers 503 and the
// provider retries (RecordSale is idempotent on the payment id).
type recorder interface {
	RecordSale(ctx context.Context, s ledger.Sale) (ledger.Order, error)
	RecordFailure(ctx context.Context, paymentID, eventID, userID, seatID, reason string) error
	Payment(ctx context.Context, paymentID string) (ledger.Payment, error)
}

// recordSale writes the order of a success webhook after its Lua step:
// a ticket (refund "") or a refund due, and returns it (its amount and
// currency are the payment's, recorded at initiation). seatID is the
// engine's (the seats joined by ','), prices the seats' prices when known:
// the order gets one line per seat. No-op without a ledger (tests of the
// Redis path only): a zero order.
func (w *Webhooks) recordSale(ctx context.Context, wh payment.Webhook, seatID string, prices []int64, seq int64, refund, phase string) (ledger.Order, error) {
	if w.Ledger == nil {
		return ledger.Order{Phase: phase}, nil
	}
	if seatID == "" {
		seatID = wh.SeatID
	}
	return w.Ledger.RecordSale(ctx, ledger.Sale{PaymentID: wh.PaymentID, EventID: wh.EventID, UserID: wh.UserID,
		SeatID: seatID, SeatPrices: prices, Sequence: seq, RefundReason: refund, Phase: phase})
}

// paymentMoney is the amount and currency the ledger recorded for a
// payment id at initiation (0, "" without a ledger or for an unknown id).
func (w *Webhooks) paymentMoney(ctx context.Context, paymentID string) (int64, string, error) {
	if w.Ledger == nil {
		return 0, "", nil
	}
	p, err := w.Ledger.Payment(ctx, paymentID)
	if errors.Is(err, ledger.ErrPaymentNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	return p.Amount, p.Currency, nil
}

// recordFailure writes a failure webhook's outcome.
func (w *Webhooks) recordFailure(ctx context.Context, wh payment.Webhook, seatID, reason string) error {
	if w.Ledger == nil {
		return nil
	}
	if seatID == "" {
		seatID = wh.SeatID
	}
	return w.Ledger.RecordFailure(ctx, wh.PaymentID, wh.EventID, wh.UserID, seatID, reason)
}

// knownPayment reports whether the ledger issued this payment id to this
// user for this event: a success for it that Redis cannot match (the
// booking's state was lost with Redis) is money to give back, recorded as
// refund_due, never dropped.
func (w *Webhooks) knownPayment(ctx context.Context, wh payment.Webhook) (bool, error) {
	if w.Ledger == nil {
		return false, nil
	}
	p, err := w.Ledger.Payment(ctx, wh.PaymentID)
	if errors.Is(err, ledger.ErrPaymentNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return p.UserID == wh.UserID && p.EventID == wh.EventID, nil
}

func failureReason(r string) string {
	if r == "" {
		return DefaultFailureReason
	}
	return r
}
