package booking

import (
	"fmt"
	"strconv"
	"time"
)

// The sales window's event settings beside SalesStart and SalesEnd:
// whether users in the room at the sales end may finish within their
// hold (FinishAfterEnd) and until when a fan may cancel their own sold
// order (RefundableUntil). Like the door's (frontdoor.go) they are
// written with the rest of the event's config (doorFields), by
// CreateEvent and RestoreEvent alike.
//
// After SalesEnd, by Redis's clock, nobody joins (join.lua) and nobody is
// admitted (promote.lua answers reason "sales_ended"); a waiting user's
// position says so (Status.SalesEnded). Users in the room finish within
// their hold, unless the event's holds end with the sale
// (HoldsEndWithSale): then seat selection and payment start are refused
// with ErrSalesEnded and a payment confirmed after the end is late
// (OutcomeLate, refunded). docs/booking-engine.md "The sales window".

// windowUpdate is the update that gives a created or restored event c's
// window settings (nil when c has the defaults).
func windowUpdate(c EventConfig) []any {
	var args []any
	if c.HoldsEndWithSale {
		args = append(args, "finish_after_end", 0)
	}
	if !c.RefundableUntil.IsZero() {
		args = append(args, "refundable_until_ms", unixMS(c.RefundableUntil))
	}
	return args
}

// windowArgs are update_event.lua's field, value pairs of the window
// settings in u.
func (u EventUpdate) windowArgs() ([]any, error) {
	var args []any
	if u.FinishAfterEnd != nil {
		v := 0
		if *u.FinishAfterEnd {
			v = 1
		}
		args = append(args, "finish_after_end", v)
	}
	if u.RefundableUntil != nil {
		if err := checkSalesTime("refundable_until", *u.RefundableUntil); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
		}
		args = append(args, "refundable_until_ms", unixMS(*u.RefundableUntil))
	}
	return args, nil
}

// applyWindow sets e's window settings from its config hash and whether
// the sale has ended at now (Redis's clock, the read's).
func applyWindow(e *Event, cfg map[string]string, now time.Time) {
	e.FinishAfterEnd = cfg["finish_after_end"] != "0"
	if v, _ := strconv.ParseInt(cfg["refundable_until_ms"], 10, 64); v > 0 {
		e.RefundableUntil = ms(v)
	}
	e.SalesEnded = !e.SalesEnd.IsZero() && now.After(e.SalesEnd)
	e.At = now
}

// Refundable reports whether a fan may cancel their own sold order at now
// (Redis's clock, Store.Clock): the event has a RefundableUntil and now is
// not after it.
func (e Event) Refundable(now time.Time) bool {
	return !e.RefundableUntil.IsZero() && !now.After(e.RefundableUntil)
}
