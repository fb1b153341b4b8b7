package main

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// Cancelling sold tickets (docs/ledger.md "Cancellations"): the intent is
// recorded in the ledger first, then the Canceller releases the seats in
// Redis, refunds with the provider and publishes the facts; what a
// failure leaves, its sweep (canceller's Run, in main) finishes.

// maxCancelReason bounds a cancellation's reason.
const maxCancelReason = 500

type cancelOrderRequest struct {
	Reason  string   `json:"reason"`
	SeatIDs []string `json:"seat_ids"`
}

func (r cancelOrderRequest) Validate() error {
	if n := strings.TrimSpace(r.Reason); n == "" || len(r.Reason) > maxCancelReason || !utf8.ValidString(r.Reason) ||
		strings.ContainsFunc(r.Reason, unicode.IsControl) {
		return errf("reason must be 1-500 characters without control characters")
	}
	if len(r.SeatIDs) > 100 {
		return errf("seat_ids must list at most 100 seats")
	}
	for i, id := range r.SeatIDs {
		if !ids.Valid(id) {
			return errf("seat_ids must be seat ids: 1-128 printable ASCII characters without spaces, braces or |")
		}
		if slices.Contains(r.SeatIDs[:i], id) {
			return errf("seat_ids must not repeat a seat")
		}
	}
	return nil
}

// canceller carries out the server's cancellations.
func (s *Server) canceller() *ledger.Canceller {
	c := &ledger.Canceller{Ledger: s.Ledger, Store: s.Store, Log: s.Log}
	if s.Announcer != nil {
		c.Offers = s.Announcer.AnnounceWaitlist
	}
	if s.Refunds != nil {
		c.Refunds = s.Refunds
	}
	if s.Kafka != nil {
		c.Kafka = s.Kafka
	}
	return c
}

// cancelOrder: POST /api/admin/orders/{order_id}/cancel (operator) —
// cancel seats of a sold order (seat_ids; none: every seat left) for a
// reason: recorded in the ledger with who and why, the seats back on
// sale, the amount refunded. 200 {changed, order, cancellation}: changed
// false for a repeat (every seat named cancelled already, or the whole
// order), which changes nothing but retries what is unfinished (a
// pending refund). A refund the provider refused or did not confirm is
// 200 too, with the cancellation's refund_status pending and its
// refund_error: the sweep retries it. Errors: 404 order_not_found, 400
// seat_not_in_order, 409 seat_already_cancelled (some of the seats named
// are, others not), 409 not_cancellable (not a sold ticket: a refund due
// goes through /api/admin/refunds).
func (s *Server) cancelOrder(c *gin.Context) {
	id := c.Param("order_id")
	if !ids.Valid(id) { // a NUL byte would fail PostgreSQL's text: unknown, not 503
		httpapi.Abort(c, http.StatusNotFound, "order_not_found", ledger.ErrOrderNotFound.Error())
		return
	}
	var req cancelOrderRequest
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	p := principal(c)
	res, err := s.Ledger.CancelOrder(c.Request.Context(), ledger.CancelRequest{OrderID: id, SeatIDs: req.SeatIDs,
		Reason: req.Reason, Actor: p.Account})
	if cancelFailed(c, err) {
		return
	}
	if res.Created {
		x := res.Cancellation
		if !s.audit(c, operators.ActionOrderCancel, x.EventID, x.OrderID,
			gin.H{"status": ledger.StatusCompleted, "seat_ids": x.SeatIDs},
			gin.H{"status": res.Order.Status, "cancellation_id": x.ID, "seat_ids": x.SeatIDs, "amount": x.Amount,
				"currency": x.Currency, "reason": x.Reason}) {
			return // the sweep carries the cancellation out
		}
	} else {
		noChange(c)
	}
	s.finishCancel(c, id, res, true)
}

// finishCancel carries out a recorded cancellation (and, on a repeat,
// whatever of the order's is unfinished: a retry retries a pending
// refund) and answers 200 {changed, order, cancellation}, the order in a
// fan's view unless operator.
func (s *Server) finishCancel(c *gin.Context, id string, res ledger.CancelResult, operator bool) {
	// the intent is recorded: a client that hangs up must not stop the rest
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 15*time.Second)
	defer cancel()
	cn := s.canceller()
	for _, x := range res.Order.Cancellations {
		if x.Finished() {
			continue
		}
		if _, err := cn.Finish(ctx, x); err != nil {
			httpapi.Logger(c).Warn("cancellation unfinished; the sweep retries it", zap.Int64("cancellation_id", x.ID),
				zap.String("order_id", id), zap.Error(err))
		}
	}
	o, err := s.Ledger.Order(ctx, id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	x := res.Cancellation
	for _, y := range o.Cancellations {
		if y.ID == x.ID {
			x = y
		}
	}
	if !operator {
		fanView(&o)
		x.Actor = ""
	}
	c.JSON(http.StatusOK, gin.H{"changed": res.Created, "order": o, "cancellation": x})
}

// cancelFailed answers CancelOrder's error, if any (true: answered).
func cancelFailed(c *gin.Context, err error) bool {
	var se *ledger.SeatError
	switch {
	case errors.Is(err, ledger.ErrOrderNotFound):
		httpapi.Abort(c, http.StatusNotFound, "order_not_found", err.Error())
		return true
	case errors.Is(err, ledger.ErrNotCancellable):
		httpapi.Abort(c, http.StatusConflict, "not_cancellable",
			"the order is not a sold ticket (a refund due is refunded with POST /api/admin/refunds/{order_id})")
		return true
	case errors.As(err, &se) && errors.Is(err, ledger.ErrSeatNotInOrder):
		httpapi.Abort(c, http.StatusBadRequest, "seat_not_in_order", "not seats of the order: "+strings.Join(se.Seats, ", "))
		return true
	case errors.As(err, &se):
		httpapi.Abort(c, http.StatusConflict, "seat_already_cancelled",
			"cancelled already (name only these for the existing cancellation, or leave them out): "+strings.Join(se.Seats, ", "))
		return true
	case err != nil:
		bookinghttp.Fail(c, err)
		return true
	}
	return false
}

// fanCancelRequest is the body of POST /api/orders/{order_id}/cancel:
// seat_ids as an operator's (none: every seat left), the reason optional.
type fanCancelRequest struct {
	Reason  string   `json:"reason"`
	SeatIDs []string `json:"seat_ids"`
}

// fanCancelReason is a fan's cancellation's reason when they give none.
const fanCancelReason = "cancelled by the fan"

// Validate checks the request as an operator's (the reason defaulted).
func (r fanCancelRequest) Validate() error {
	if r.Reason == "" {
		r.Reason = fanCancelReason
	}
	return cancelOrderRequest(r).Validate()
}

// fanActor is the ledger's actor of a fan's own cancellation: "fan:"
// and their user id (an operator's is their account).
func fanActor(userID string) string { return "fan:" + userID }

// cancelMyOrder: POST /api/orders/{order_id}/cancel (the fan's token) —
// a fan cancels seats of their own sold order (seat_ids; none: every
// seat left) while the event's refundable_until has not passed, by
// Redis's clock: the same path as an operator's cancellation
// (cancelOrder), recorded with the fan as its actor and their reason.
// 200 {changed, order, cancellation}; a repeat (cancelled already) is
// changed false, whatever the deadline. Errors: 404 order_not_found
// (someone else's too), 409 not_refundable (the event lets no fan
// cancel), 409 refund_deadline_passed, 409 not_cancellable, 400
// seat_not_in_order, 409 seat_already_cancelled.
func (s *Server) cancelMyOrder(c *gin.Context) {
	id := c.Param("id")
	if !ids.Valid(id) {
		httpapi.Abort(c, http.StatusNotFound, "order_not_found", ledger.ErrOrderNotFound.Error())
		return
	}
	var req fanCancelRequest
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	if req.Reason == "" {
		req.Reason = fanCancelReason
	}
	ctx := c.Request.Context()
	user := httpapi.Identity(c).UserID
	o, err := s.Ledger.UserOrder(ctx, user, id)
	if cancelFailed(c, err) {
		return
	}
	if repeat := o.Status == ledger.StatusCancelled && len(req.SeatIDs) == 0; !repeat {
		def, err := s.Ledger.Event(ctx, o.EventID)
		if err != nil {
			bookinghttp.Fail(c, ledgerErr(err))
			return
		}
		until := def.Config.RefundableUntil
		if until.IsZero() {
			httpapi.Abort(c, http.StatusConflict, "not_refundable", "this event's tickets cannot be cancelled by fans")
			return
		}
		now, err := s.Store.Clock(ctx, o.EventID) // one clock: Redis's
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		if now.After(until) {
			httpapi.Abort(c, http.StatusConflict, "refund_deadline_passed",
				"tickets of this event could be cancelled until "+until.UTC().Format(time.RFC3339))
			return
		}
	}
	res, err := s.Ledger.CancelOrder(ctx, ledger.CancelRequest{OrderID: id, SeatIDs: req.SeatIDs,
		Reason: req.Reason, Actor: fanActor(user)})
	if cancelFailed(c, err) {
		return
	}
	s.finishCancel(c, id, res, false)
}
