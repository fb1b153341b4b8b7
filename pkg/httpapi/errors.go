package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// Error is the JSON error body of every boxoffice HTTP service.
type Error struct {
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Timestamp  string `json:"timestamp"`
	Path       string `json:"path"`
}

// Codes that are not booking sentinels.
const (
	CodeInvalidBody      = "invalid_body"
	CodeInvalidArgument  = "invalid_argument"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeUnsupportedMediaType is a 415: an admin body not sent as
	// application/json (BindStrict).
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal"
	// CodeRateLimited is a 429 of the abuse limits (booking.ErrRateLimited),
	// sent with Retry-After.
	CodeRateLimited = "rate_limited"
)

// Abort writes the JSON error and stops the handler chain.
func Abort(c *gin.Context, status int, code, message string) {
	c.AbortWithStatusJSON(status, newError(status, code, message, c.Request.URL.Path))
}

func newError(status int, code, message, path string) Error {
	return Error{
		StatusCode: status,
		Error:      http.StatusText(status),
		Code:       code,
		Message:    message,
		Timestamp:  time.Now().UTC().Format(time.RFC3339Nano),
		Path:       path,
	}
}

// Write writes the JSON error on a plain net/http response, for handlers
// that run outside gin and fasthttp (the notifier's WebSocket upgrade).
func Write(w http.ResponseWriter, status int, code, message, path string) {
	w.Header().Set("Content-Type", jsonContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(status, code, message, path))
}

// errorBody is the JSON error as Abort writes it.
func errorBody(status int, code, message, path string) []byte {
	b, _ := json.Marshal(newError(status, code, message, path)) // strings and ints only: cannot fail
	return b
}

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
	{booking.ErrCannotCancel, http.StatusConflict, "cannot_cancel"},
	{booking.ErrPaymentMismatch, http.StatusConflict, "payment_mismatch"},
	{booking.ErrLatePayment, http.StatusConflict, "late_payment"},
	{booking.ErrAlreadyCompleted, http.StatusConflict, "already_completed"},
	{booking.ErrTooManySeats, http.StatusBadRequest, "too_many_seats"},
	{booking.ErrInvalidArgument, http.StatusBadRequest, CodeInvalidArgument},
	{booking.ErrRateLimited, http.StatusTooManyRequests, CodeRateLimited},
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
	return http.StatusServiceUnavailable, CodeUnavailable
}

// Fail writes err as the JSON error. For 4xx the sentinel's text is the
// message; a 503 hides the internal error from the client and logs it.
func Fail(c *gin.Context, err error) {
	status, code, msg := failure(err, func() *zap.Logger { return Logger(c) })
	if s, ok := RetryAfter(err); ok {
		c.Header("Retry-After", s)
	}
	Abort(c, status, code, msg)
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

// failure is the status, code and client message of err; a 5xx is logged
// on the request's logger.
func failure(err error, logger func() *zap.Logger) (int, string, string) {
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
			if s, ok := RetryAfter(err); ok {
				return "too many requests; retry after " + s + " s"
			}
			return m.err.Error()
		}
	}
	return err.Error()
}

// NoRoute and NoMethod answer unknown paths and methods in the JSON format.
func NoRoute(c *gin.Context) { Abort(c, http.StatusNotFound, CodeNotFound, "no such endpoint") }

// NoMethod answers a known path with a wrong method.
func NoMethod(c *gin.Context) {
	Abort(c, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed on this endpoint")
}
