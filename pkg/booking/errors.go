package booking

import (
	"errors"
	"fmt"
	"strings"

	"github.com/boxoffice/boxoffice/pkg/ids"
)

// Sentinel errors. Each one is a reply code of a script; callers map them to
// HTTP statuses or ack decisions with errors.Is at the edge.
var (
	ErrEventNotFound    = errors.New("event not found")
	ErrEventExists      = errors.New("event already exists")
	ErrInvalidEvent     = errors.New("invalid event configuration")
	ErrSalesNotStarted  = errors.New("sales have not started yet")
	ErrSalesEnded       = errors.New("sales have ended")
	ErrSoldOut          = errors.New("event is sold out")
	ErrNotFound         = errors.New("user has no booking for this event")
	ErrInvalidState     = errors.New("booking is not in the right state for this operation")
	ErrHoldExpired      = errors.New("the hold has expired")
	ErrSeatUnknown      = errors.New("seat does not exist in this event")
	ErrSeatUnavailable  = errors.New("seat is not available")
	ErrCannotCancel     = errors.New("cannot cancel during payment")
	ErrPaymentMismatch  = errors.New("payment id does not match the booking")
	ErrLatePayment      = errors.New("payment arrived after the hold was released; refund it")
	ErrInvalidArgument  = errors.New("invalid argument")
	ErrAlreadyCompleted = errors.New("booking already completed")
)

// Typed errors: a sentinel above with the data the caller needs to
// act on it. Each has an Is method, so errors.Is(err, ErrX) holds, and the
// data come out with errors.As. A method returning one of them returns
// the zero value as its result.

// StateError is ErrInvalidState with the state the booking was in.
type StateError struct{ State State }

func (e *StateError) Error() string {
	return fmt.Sprintf("%v (state %s)", ErrInvalidState, e.State)
}

// Is makes errors.Is(err, ErrInvalidState) true.
func (e *StateError) Is(target error) bool { return target == ErrInvalidState }

// LatePaymentError is ErrLatePayment (PaymentSuccess): the payment's hold
// had already ended, so the payment must be refunded. Payment describes
// the hold it paid for: SeatID, SeatIDs, Sequence, AmountCents,
// SeatPrices, At (when the payment was first classified as late) and
// Duplicate (it had been classified so before).
type LatePaymentError struct{ Payment PaymentResult }

func (e *LatePaymentError) Error() string { return ErrLatePayment.Error() }

// Is makes errors.Is(err, ErrLatePayment) true.
func (e *LatePaymentError) Is(target error) bool { return target == ErrLatePayment }

// NotFoundError is ErrNotFound from Position: the user has no booking for
// the event. Status still carries what a client shows someone who has not
// joined: SoldOut, AdmitPerMinute, SalesStart and Counts (Served, Waiting,
// AdmittedLastMinute).
type NotFoundError struct{ Status Status }

func (e *NotFoundError) Error() string { return ErrNotFound.Error() }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// SeatsTakenError is ErrSeatUnavailable naming the seats of a selection
// that another user holds or bought (nothing was locked).
type SeatsTakenError struct{ Seats []string }

func (e *SeatsTakenError) Error() string {
	return fmt.Sprintf("%v: %s", ErrSeatUnavailable, strings.Join(e.Seats, ", "))
}

// Is makes errors.Is(err, ErrSeatUnavailable) true.
func (e *SeatsTakenError) Is(target error) bool { return target == ErrSeatUnavailable }

// SeatUnknownError is ErrSeatUnknown naming the seat.
type SeatUnknownError struct{ Seat string }

func (e *SeatUnknownError) Error() string { return fmt.Sprintf("%v: %s", ErrSeatUnknown, e.Seat) }

// Is makes errors.Is(err, ErrSeatUnknown) true.
func (e *SeatUnknownError) Is(target error) bool { return target == ErrSeatUnknown }

// TooManySeatsError is ErrTooManySeats with the event's maximum.
type TooManySeatsError struct{ Max int }

func (e *TooManySeatsError) Error() string {
	return fmt.Sprintf("%v: at most %d", ErrTooManySeats, e.Max)
}

// Is makes errors.Is(err, ErrTooManySeats) true.
func (e *TooManySeatsError) Is(target error) bool { return target == ErrTooManySeats }

// IDError is the error of every Store method given a malformed id (one
// that fails ids.Valid): the same from each entry point. It is
// ErrInvalidArgument for errors.Is.
type IDError struct{ ID string }

func (e *IDError) Error() string { return fmt.Sprintf("%v: bad id %q", ErrInvalidArgument, e.ID) }

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *IDError) Is(target error) bool { return target == ErrInvalidArgument }

// checkIDs returns an *IDError for the first malformed id.
func checkIDs(list ...string) error {
	for _, id := range list {
		if !ids.Valid(id) {
			return &IDError{ID: id}
		}
	}
	return nil
}
