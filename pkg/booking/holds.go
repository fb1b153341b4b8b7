package booking

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LockSeat holds one seat for an admitted user (replacing the seats they
// already hold): LockSeats with one seat. Errors: ErrNotFound,
// ErrInvalidState, ErrHoldExpired, ErrSeatUnknown, ErrSeatUnavailable,
// ErrEventNotFound, ErrSalesEnded (holds end with the sale, window.go).
func (s *Store) LockSeat(ctx context.Context, eventID, userID, seatID string) (time.Time, error) {
	return s.LockSeats(ctx, eventID, userID, []string{seatID})
}

// InitiatePayment moves a user's held seat to payment_pending under
// paymentID, or returns the payment already initiated (Created false).
// Errors: ErrNotFound, ErrInvalidState, ErrHoldExpired, ErrEventNotFound,
// ErrSalesEnded (holds end with the sale, window.go).
func (s *Store) InitiatePayment(ctx context.Context, eventID, userID, paymentID string) (PaymentHold, error) {
	if err := checkIDs(eventID, userID, paymentID); err != nil {
		return PaymentHold{}, err
	}
	r, err := s.run(ctx, scriptInitiatePayment, eventID, userID, paymentID)
	if err != nil {
		return PaymentHold{}, fmt.Errorf("initiate payment: %w", err)
	}
	var h PaymentHold
	var prices string
	r.scan(&h.PaymentID, &h.SeatID, &h.ExpireAt, &h.Created, &h.Sequence, &h.At, &h.AmountCents, &h.Currency, &prices)
	h.SeatIDs, h.SeatPrices = SplitSeats(h.SeatID), splitPrices(prices)
	return h, nil
}

// PaymentSuccess completes a booking: the seat is sold for good. A repeat
// is OutcomeDuplicate. A payment whose hold had already ended (released,
// failed, or its user joined again since, or ended with the sale:
// window.go) returns ErrLatePayment, a
// *LatePaymentError with the seats, sequence and amount of the hold it
// paid for, At and Duplicate, and must be refunded; a repeat answers the
// same. Every payment id
// ever issued for the event is classified so, for the event's lifetime.
// Errors: ErrNotFound (unknown user), ErrPaymentMismatch (the id was not
// issued to this user).
func (s *Store) PaymentSuccess(ctx context.Context, eventID, userID, paymentID string) (PaymentResult, error) {
	if err := checkIDs(eventID, userID, paymentID); err != nil {
		return PaymentResult{}, err
	}
	r, err := s.run(ctx, scriptPaymentSuccess, eventID, userID, paymentID)
	var res PaymentResult
	var prices string
	if errors.Is(err, ErrLatePayment) {
		r.scan(&res.SeatID, &res.Sequence, &res.At, &res.Duplicate, &res.AmountCents, &prices, &res.Phase)
		res.SeatIDs, res.SeatPrices = SplitSeats(res.SeatID), splitPrices(prices)
		return PaymentResult{}, &LatePaymentError{Payment: res}
	}
	if err != nil {
		return PaymentResult{}, fmt.Errorf("payment success: %w", err)
	}
	r.scan(&res.Outcome, &res.SeatID, &res.Sequence, &res.At, &res.SoldOutAt, &res.AmountCents, &prices, &res.Phase)
	res.SeatIDs, res.SeatPrices = SplitSeats(res.SeatID), splitPrices(prices)
	return res, nil
}

// PaymentFailure releases the hold of a declined payment (OutcomeFailed),
// or does nothing for a repeat (OutcomeDuplicate) or a hold already ended
// (OutcomeNoHold: expired, cancelled, its user joined again, or its success
// was classified as a refund). Errors: ErrNotFound, ErrPaymentMismatch,
// ErrAlreadyCompleted.
func (s *Store) PaymentFailure(ctx context.Context, eventID, userID, paymentID string) (PaymentResult, error) {
	if err := checkIDs(eventID, userID, paymentID); err != nil {
		return PaymentResult{}, err
	}
	r, err := s.run(ctx, scriptPaymentFailure, eventID, userID, paymentID)
	if err != nil {
		return PaymentResult{}, fmt.Errorf("payment failure: %w", err)
	}
	var res PaymentResult
	r.scan(&res.Outcome, &res.SeatID, &res.Sequence, &res.At)
	res.SeatIDs = SplitSeats(res.SeatID)
	return res, nil
}

// HandleTimeout processes a hold's timeout: OutcomeReleased (free the slot),
// OutcomeExtended (payment pending: grace given once; schedule again for
// ExpireAt), OutcomeNotDue (deadline later: schedule again), OutcomeNoHold
// (nothing to do; AlreadyExpired asks to republish the expiry's effects).
// A release writes the expiry's outbox entry in the same step; it comes
// back in Outbox (and with AlreadyExpired while not fully announced):
// announce it and then AckOutbox.
func (s *Store) HandleTimeout(ctx context.Context, eventID, userID string) (TimeoutResult, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return TimeoutResult{}, err
	}
	r, err := s.run(ctx, scriptHandleTimeout, eventID, userID)
	if err != nil {
		return TimeoutResult{}, fmt.Errorf("handle timeout: %w", err)
	}
	var res TimeoutResult
	var outbox string
	r.scan(&res.Outcome, &res.Sequence, &res.SeatID, &res.PaymentID, &res.ExpireAt, &res.AlreadyExpired, &outbox, &res.At)
	if outbox != "" {
		if e, ok := parseOutbox(outboxField('x', res.Sequence, userID), outbox); ok {
			res.Outbox = []OutboxEntry{e}
		}
	}
	return res, nil
}

// Cancel takes a user out of the queue (From "queue") or the room (From
// "active", freeing their seat). The cancellation's outbox entry comes back
// in Outbox: announce it (booking_cancelled; slot-released when From is
// "active") and AckOutbox. Cancelling again is not an error: Duplicate is
// set and Outbox holds the entry if it was never announced. Errors:
// ErrCannotCancel during payment, ErrNotFound, ErrInvalidState when the
// booking finished otherwise.
func (s *Store) Cancel(ctx context.Context, eventID, userID string) (CancelResult, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return CancelResult{}, err
	}
	r, err := s.run(ctx, scriptCancel, eventID, userID)
	if err != nil {
		return CancelResult{}, fmt.Errorf("cancel: %w", err)
	}
	var res CancelResult
	var outbox string
	r.scan(&res.From, &res.SeatID, &res.Sequence, &res.Duplicate, &outbox)
	if e, ok := parseOutbox(outboxField('c', res.Sequence, userID), outbox); ok {
		res.Outbox = []OutboxEntry{e}
	}
	return res, nil
}

// PaymentHold is the result of InitiatePayment.
type PaymentHold struct {
	PaymentID string
	SeatID    string // the seats' ids joined by ','
	SeatIDs   []string
	// AmountCents is the sum of the seats' section prices in Currency; 0
	// for an event created before sections (the caller prices it).
	AmountCents int64
	Currency    string
	// SeatPrices are the seats' prices now, in SeatIDs order: what a new
	// payment charges each (the ledger keeps them with it).
	SeatPrices []int64
	Sequence   int64
	ExpireAt   time.Time
	// Created is false when the payment had already been initiated and the
	// existing id is returned.
	Created bool
	// At is when the payment was first initiated, the same on a repeat
	// (payment_initiated's time); zero for a payment without a registry
	// record.
	At time.Time
}

// Outcome of a payment webhook or a timeout.
type Outcome string

const (
	OutcomeCompleted Outcome = "completed" // payment success took effect
	OutcomeFailed    Outcome = "failed"    // payment failure released the hold
	OutcomeDuplicate Outcome = "duplicate" // already applied: nothing changed
	OutcomeReleased  Outcome = "released"  // timeout released the hold
	OutcomeExtended  Outcome = "extended"  // timeout during payment: grace given
	OutcomeNotDue    Outcome = "not_due"   // deadline is later than now
	OutcomeNoHold    Outcome = "no_hold"   // user is not in the room (finished, never promoted)
)

// PaymentResult is the outcome of PaymentSuccess or PaymentFailure.
type PaymentResult struct {
	Outcome Outcome
	SeatID  string // the seats' ids joined by ','
	SeatIDs []string
	// AmountCents is the order's amount (completed, or late: the whole
	// amount to refund); 0 for an event created before sections.
	// SeatPrices are the seats' prices, in SeatIDs order (PaymentSuccess).
	AmountCents int64
	SeatPrices  []int64
	Sequence    int64
	// Phase is the sale's current phase when PaymentSuccess answered ("" none):
	// the ledger records the first answer's with the order.
	Phase string
	// At is when PaymentSuccess first classified the payment (completed, or
	// late: refund), or PaymentFailure first recorded its failure, the same
	// on every repeat; zero for a payment started before the payment
	// registry existed.
	At time.Time
	// Duplicate is set with ErrLatePayment when the payment had been
	// classified as a refund before.
	Duplicate bool
	// SoldOutAt (PaymentSuccess: completed or duplicate) is when the
	// event's last seat was sold (event_sold_out's time); zero while seats
	// remain.
	SoldOutAt time.Time
}

// TimeoutResult is the outcome of HandleTimeout.
type TimeoutResult struct {
	Outcome   Outcome
	Sequence  int64
	SeatID    string
	PaymentID string
	// ExpireAt is the (new) deadline for OutcomeExtended and OutcomeNotDue,
	// and the deadline that passed for OutcomeReleased.
	ExpireAt time.Time
	// AlreadyExpired is set with OutcomeNoHold when the hold had been
	// expired earlier (by a promotion's reclaim): the caller republishes the
	// expiry's side effects, which are idempotent.
	AlreadyExpired bool
	// At is the call's time, Redis's clock: a timeout message for
	// ExpireAt is due ExpireAt.Sub(At) from now.
	At time.Time
	// Outbox holds the expiry's outbox entry (kind "expired"): written by
	// OutcomeReleased, and returned with AlreadyExpired while some side of
	// it is still unannounced. Announce it and then AckOutbox.
	Outbox []OutboxEntry
}

// CancelResult is the outcome of Cancel.
type CancelResult struct {
	From     string // "queue" or "active"; "" on a repeat already announced
	SeatID   string
	Sequence int64
	// Duplicate is set when the user had cancelled already.
	Duplicate bool
	// Outbox holds the cancellation's entry while it is unannounced:
	// announce it (booking_cancelled, slot-released) and AckOutbox.
	Outbox []OutboxEntry
}

// FromAbandoned is the From of a cancellation made by the system: a waiting
// user absent when their turn came.
const FromAbandoned = "abandoned"

// FromPhaseEnded is the From of a cancellation made by a phase's end: a
// user waiting when the phase they joined in ended, with the event's
// on_phase_change leave (lua/apply_schedule.lua).
const FromPhaseEnded = "phase_ended"
