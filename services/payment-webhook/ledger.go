package main

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// recorder is the system of record (*ledger.Ledger): a success webhook's
// order is written there before the provider gets its 2xx, so a 2xx means
// "durable in PostgreSQL"; PostgreSQL unreachable answers 503 and the
// provider retries (RecordSale is idempotent on the payment id).
type recorder interface {
	RecordSale(ctx context.Context, s ledger.Sale) (ledger.Order, error)
	FactsPublished(ctx context.Context, orderID string) error
	RecordFailure(ctx context.Context, f ledger.Failure) (ledger.Payment, error)
	FailureFactsPublished(ctx context.Context, paymentID string) error
	Payment(ctx context.Context, paymentID string) (ledger.Payment, error)
}

// recordSale writes the order of a success webhook after its Lua step:
// a ticket (refund "") or a refund due, and returns it (its amount and
// currency are the payment's, recorded at initiation). seatID is the
// engine's (the seats joined by ','), prices the seats' prices when known:
// the order gets one line per seat. at is the time of its fact and
// soldOut the event_sold_out the sale caused (zero: none), which the
// order keeps with it. Without a ledger (tests of the Redis path only) it
// returns the order as it would have been written.
func (w *Webhooks) recordSale(ctx context.Context, wh payment.Webhook, seatID string, prices []int64, seq int64, refund, phase string,
	at, soldOut time.Time) (ledger.Order, error) {
	if seatID == "" {
		seatID = wh.SeatID
	}
	s := ledger.Sale{PaymentID: wh.PaymentID, EventID: wh.EventID, UserID: wh.UserID,
		SeatID: seatID, SeatPrices: prices, Sequence: seq, RefundReason: refund, Phase: phase, At: at, SoldOutAt: soldOut}
	if w.Ledger == nil {
		return s.Order(), nil
	}
	o, err := w.Ledger.RecordSale(ctx, s)
	if err == nil && o.FactAt == nil {
		// written before orders kept their facts: this call's are its
		mine := s.Order()
		o.Fact, o.FactAt, o.SoldOutAt = mine.Fact, mine.FactAt, mine.SoldOutAt
	}
	return o, err
}

// publishOrder publishes the order's facts (Order.Facts) and records
// Kafka's acknowledgement in the ledger. A failure to record it is logged
// only: the facts are out, and the sweep publishes them once more (the
// same ids).
func (w *Webhooks) publishOrder(ctx context.Context, log *zap.Logger, o ledger.Order) error {
	if err := w.Kafka.Publish(ctx, o.Facts()...); err != nil {
		return err
	}
	if w.Ledger == nil || o.OrderID == "" {
		return nil
	}
	if err := w.Ledger.FactsPublished(ctx, o.OrderID); err != nil {
		log.Warn("order facts published, acknowledgement not recorded; the sweep republishes them", zap.Error(err))
	}
	return nil
}

// recordFailure writes a failure webhook's outcome after its Lua step
// and returns the payment as the ledger recorded it, with the fact its
// first failure fixed (Payment.Facts; at zero: the failure released no
// hold and has none). Without a ledger (tests of the Redis path only), or
// for a payment whose failure the ledger recorded without a fact, it
// returns the payment with this call's fact.
func (w *Webhooks) recordFailure(ctx context.Context, wh payment.Webhook, seatID string, seq int64, reason string,
	at time.Time) (ledger.Payment, error) {
	if seatID == "" {
		seatID = wh.SeatID
	}
	f := ledger.Failure{PaymentID: wh.PaymentID, EventID: wh.EventID, UserID: wh.UserID, SeatID: seatID, Sequence: seq,
		Reason: reason, At: at}
	mine := ledger.Payment{PaymentID: f.PaymentID, EventID: f.EventID, UserID: f.UserID, SeatID: f.SeatID, Sequence: f.Sequence,
		Outcome: ledger.OutcomeFailed, Reason: f.Reason}
	if !at.IsZero() {
		mine.FailedAt = &at
	}
	if w.Ledger == nil {
		return mine, nil
	}
	p, err := w.Ledger.RecordFailure(ctx, f)
	if err == nil && p.FailedAt == nil && mine.FailedAt != nil {
		// its first failure released no hold, or was recorded before
		// the ledger kept the fact: this call's is its
		mine.Amount, mine.Currency = p.Amount, p.Currency
		p = mine
	}
	return p, err
}

// publishFailure publishes the failed payment's facts (Payment.Facts)
// and records Kafka's acknowledgement in the ledger, as publishOrder
// does for an order's.
func (w *Webhooks) publishFailure(ctx context.Context, log *zap.Logger, p ledger.Payment) error {
	if err := w.Kafka.Publish(ctx, p.Facts()...); err != nil {
		return err
	}
	if w.Ledger == nil {
		return nil
	}
	if err := w.Ledger.FailureFactsPublished(ctx, p.PaymentID); err != nil {
		log.Warn("failure facts published, acknowledgement not recorded; the sweep republishes them", zap.Error(err))
	}
	return nil
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
