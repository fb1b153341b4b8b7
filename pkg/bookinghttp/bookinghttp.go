// Package bookinghttp maps the booking engine's sentinel errors to HTTP
// answers in httpapi's JSON error format: a status and a machine-readable
// code for each sentinel (with errors.Is, at the edge only), the client
// message, and Retry-After for a rate limit. The gateway and the payment
// webhook answer with it; pkg/httpapi itself knows nothing of booking.
//
// Anything that is not a booking sentinel (Redis, RabbitMQ or Kafka
// unavailable, a timeout) is a 503, so that clients and payment providers
// retry the idempotent operation.
package bookinghttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// mapping of booking sentinels to status and code, in match order.
var bookingErrors = []struct {
	err    error
	status int
	code   string
}{
	{booking.ErrEventNotFound, http.StatusNotFound, "event_not_found"},
	{booking.ErrEventExists, http.StatusConflict, "event_exists"},
	{booking.ErrInvalidEvent, http.StatusBadRequest, "invalid_event"},
	{booking.ErrSalesNotStarted, http.StatusBadRequest, "sales_not_started"},
	{booking.ErrSalesEnded, http.StatusBadRequest, "sales_ended"},
	{booking.ErrSoldOut, http.StatusConflict, "sold_out"},
	{booking.ErrNotFound, http.StatusNotFound, "booking_not_found"},
	{booking.ErrInvalidState, http.StatusForbidden, "invalid_state"},
	{booking.ErrHoldExpired, http.StatusForbidden, "hold_expired"},
	{booking.ErrSeatUnknown, http.StatusNotFound, "seat_not_found"},
	{booking.ErrSeatUnavailable, http.StatusConflict, "seat_unavailable"},
	{booking.ErrSeatNotForSale, http.StatusConflict, "seat_not_for_sale"},
	{booking.ErrCannotCancel, http.StatusConflict, "cannot_cancel"},
	{booking.ErrPaymentMismatch, http.StatusConflict, "payment_mismatch"},
	{booking.ErrLatePayment, http.StatusConflict, "late_payment"},
	{booking.ErrAlreadyCompleted, http.StatusConflict, "already_completed"},
	{booking.ErrTooManySeats, http.StatusBadRequest, "too_many_seats"},
	{booking.ErrInvalidCode, http.StatusForbidden, "invalid_code"},
	{booking.ErrCodeWrongPhase, http.StatusForbidden, "code_wrong_phase"},
	{booking.ErrCodeExpired, http.StatusGone, "code_expired"},
	{booking.ErrCodeTaken, http.StatusConflict, "code_taken"},
	{booking.ErrCodeUsedUp, http.StatusConflict, "code_used_up"},
	{booking.ErrCodeRequired, http.StatusForbidden, "code_required"},
	{booking.ErrNotSelected, http.StatusForbidden, "not_selected"},
	{booking.ErrPhaseClosed, http.StatusForbidden, "phase_closed"},
	{booking.ErrInvalidArgument, http.StatusBadRequest, httpapi.CodeInvalidArgument},
	{booking.ErrRateLimited, http.StatusTooManyRequests, httpapi.CodeRateLimited},
	{booking.ErrSectionUnknown, http.StatusNotFound, "section_not_found"},
	{booking.ErrNoAdjacentSeats, http.StatusConflict, "no_adjacent_seats"},
	{booking.ErrOrphanSeat, http.StatusConflict, "orphan_seat"},
	{booking.ErrWaitlistDisabled, http.StatusConflict, "waitlist_disabled"},
	{booking.ErrNotSoldOut, http.StatusConflict, "not_sold_out"},
	{booking.ErrOfferNotFound, http.StatusNotFound, "offer_not_found"},
	{booking.ErrNotYourOffer, http.StatusForbidden, "not_your_offer"},
	{booking.ErrOfferExpired, http.StatusConflict, "offer_expired"},
	{booking.ErrOfferClosed, http.StatusConflict, "offer_closed"},
	{booking.ErrBeaconLocked, http.StatusConflict, "beacon_locked"},
	{booking.ErrBeaconNotCommitted, http.StatusConflict, "beacon_not_committed"},
	{booking.ErrBeaconValueSet, http.StatusConflict, "beacon_value_set"},
	{booking.ErrBeaconRoundEarly, http.StatusConflict, "beacon_round_too_early"},
	{booking.ErrNoPrequeue, http.StatusConflict, "no_prequeue"},
}

// Status returns the HTTP status and code for err. Booking sentinels map
// to 4xx; anything else (Redis, RabbitMQ or Kafka unavailable, timeouts) is
// 503 so the caller retries the idempotent operation.
func Status(err error) (int, string) {
	for _, m := range bookingErrors {
		if errors.Is(err, m.err) {
			return m.status, m.code
		}
	}
	return http.StatusServiceUnavailable, httpapi.CodeUnavailable
}

// Fail writes err as the JSON error. For 4xx the sentinel's text is the
// message; a 503 hides the internal error from the client and logs it.
func Fail(c *gin.Context, err error) {
	status, code, msg := Failure(err, func() *zap.Logger { return httpapi.Logger(c) })
	if s, ok := RetryAfter(err); ok {
		c.Header("Retry-After", s)
	}
	httpapi.Abort(c, status, code, msg)
}

// RetryAfter is the Retry-After header value (whole seconds, at least 1)
// of an error that has one: a *booking.RateLimitedError.
func RetryAfter(err error) (string, bool) {
	var rl *booking.RateLimitedError
	if !errors.As(err, &rl) {
		return "", false
	}
	return strconv.FormatInt(rl.RetryAfterSeconds(), 10), true
}

// Failure is the status, code and client message of err, for a server
// other than gin to answer with (Fail is gin's); a 5xx is logged on the
// request's logger.
func Failure(err error, logger func() *zap.Logger) (int, string, string) {
	status, code := Status(err)
	if status < 500 {
		return status, code, clientMessage(err)
	}
	logger().Warn("request failed", zap.String("code", code), zap.Error(err))
	if errors.Is(err, context.Canceled) {
		return status, code, "request cancelled"
	}
	return status, code, "a backing service is unavailable; retry the request"
}

// clientMessage is the sentinel's own text: wrapping context such as
// "lock seat: redis: ..." is for logs, not for clients.
func clientMessage(err error) string {
	for _, m := range bookingErrors {
		if errors.Is(err, m.err) {
			if m.err == booking.ErrInvalidArgument || m.err == booking.ErrInvalidEvent {
				return err.Error() // carries which field is bad
			}
			if m.err == booking.ErrBeaconRoundEarly { // and when the round comes out
				msg := err.Error()
				return msg[max(0, strings.Index(msg, m.err.Error())):]
			}
			if s, ok := RetryAfter(err); ok {
				return "too many requests; retry after " + s + " s"
			}
			return m.err.Error()
		}
	}
	return err.Error()
}
