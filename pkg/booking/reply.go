package booking

import (
	"fmt"
	"strconv"
	"time"
)

// codeErrors maps a script's error reply code to its sentinel.
var codeErrors = map[string]error{
	"event_not_found":   ErrEventNotFound,
	"event_exists":      ErrEventExists,
	"sales_not_started": ErrSalesNotStarted,
	"sales_ended":       ErrSalesEnded,
	"sold_out":          ErrSoldOut,
	"not_found":         ErrNotFound,
	"invalid_state":     ErrInvalidState,
	"hold_expired":      ErrHoldExpired,
	"seat_unknown":      ErrSeatUnknown,
	"seat_unavailable":  ErrSeatUnavailable,
	"seat_refused":      ErrSeatUnavailable,
	"seat_not_for_sale": ErrSeatNotForSale,
	"cannot_cancel":     ErrCannotCancel,
	"payment_mismatch":  ErrPaymentMismatch,
	"late":              ErrLatePayment,
	"invalid_argument":  ErrInvalidArgument,
	"already_completed": ErrAlreadyCompleted,
	"too_many_seats":    ErrTooManySeats,
	"rate_limited":      ErrRateLimited,
	"invalid_code":      ErrInvalidCode,
	"code_wrong_phase":  ErrCodeWrongPhase,
	"code_expired":      ErrCodeExpired,
	"code_taken":        ErrCodeTaken,
	"code_used_up":      ErrCodeUsedUp,
	"code_required":     ErrCodeRequired,
	"not_selected":      ErrNotSelected,
	"phase_closed":      ErrPhaseClosed,
	"no_adjacent_seats": ErrNoAdjacentSeats,
	"section_unknown":   ErrSectionUnknown,
	"orphan_seat":       ErrOrphanSeat,
	"waitlist_disabled": ErrWaitlistDisabled,
	"not_sold_out":      ErrNotSoldOut,
	"offer_not_found":   ErrOfferNotFound,
	"not_your_offer":    ErrNotYourOffer,
	"offer_expired":     ErrOfferExpired,
	"offer_closed":      ErrOfferClosed,
	"not_due":           ErrAllocationNotDue,
}

// reply is a script's array reply. A script always answers an array whose
// first element is "ok" or an error code; scan decodes the values after it
// into named fields, in the order the script's header (lua/) lists them.
type reply []any

// scan decodes the values after the reply's code into dst, one each, in
// order (see values).
func (r reply) scan(dst ...any) { r[1:].values(dst...) }

// values decodes r's elements into dst, one each, in order. A destination
// is a *string, *int64, *int, *bool (1 is true), *time.Time (unix
// milliseconds, 0 the zero time), *State, *Outcome, *[]string (a nested
// array of strings) or *reply (a nested array); nil skips an element.
// Missing elements leave their destinations unchanged.
func (r reply) values(dst ...any) {
	for i, d := range dst {
		if i >= len(r) {
			return
		}
		switch d := d.(type) {
		case *string:
			*d = r.str(i)
		case *int64:
			*d = r.int(i)
		case *int:
			*d = int(r.int(i))
		case *bool:
			*d = r.int(i) == 1
		case *time.Time:
			*d = ms(r.int(i))
		case *State:
			*d = State(r.str(i))
		case *Outcome:
			*d = Outcome(r.str(i))
		case *[]string:
			l := r.list(i)
			*d = nil
			for j := range l {
				*d = append(*d, l.str(j))
			}
		case *reply:
			*d = r.list(i)
		case nil:
		default:
			// no %T: formatting d would make every scan's arguments escape
			panic("booking: cannot decode a reply into this destination type")
		}
	}
}

// records calls fn with each consecutive group of n elements of r (the
// flat arrays of records scripts answer), skipping an incomplete last one.
func (r reply) records(n int, fn func(reply)) {
	for i := 0; i+n <= len(r); i += n {
		fn(r[i : i+n])
	}
}

func asReply(v any) (reply, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, fmt.Errorf("unexpected script reply %T", v)
	}
	return reply(arr), nil
}

// err returns nil for an "ok" reply, the sentinel for a known code, and a
// descriptive error otherwise. invalid_state replies carry the state.
func (r reply) err() error {
	code := r.str(0)
	if code == "ok" {
		return nil
	}
	if e, ok := codeErrors[code]; ok {
		if code == "rate_limited" {
			return r.rateLimited()
		}
		if code == "invalid_state" && len(r) > 1 {
			return &StateError{State: State(r.str(1))}
		}
		return e
	}
	return fmt.Errorf("unknown script reply code %q", code)
}

func (r reply) str(i int) string {
	if i >= len(r) {
		return ""
	}
	switch v := r[i].(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(r[i])
}

func (r reply) int(i int) int64 {
	if i >= len(r) {
		return 0
	}
	switch v := r[i].(type) {
	case int64:
		return v
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

func (r reply) list(i int) reply {
	if i >= len(r) {
		return nil
	}
	arr, _ := r[i].([]any)
	return reply(arr)
}

// ms converts a unix-millisecond value to a time; 0 is the zero time.
func ms(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}
