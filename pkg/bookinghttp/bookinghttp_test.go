package bookinghttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

func TestStatus(t *testing.T) {
	cases := []struct {
		err  error
		code int
		name string
	}{
		{fmt.Errorf("lock seat: %w", booking.ErrSeatUnavailable), 409, "seat_unavailable"},
		{booking.ErrSoldOut, 409, "sold_out"},
		{booking.ErrCannotCancel, 409, "cannot_cancel"},
		{booking.ErrInvalidState, 403, "invalid_state"},
		{booking.ErrEventNotFound, 404, "event_not_found"},
		{booking.ErrSeatUnknown, 404, "seat_not_found"},
		{booking.ErrSalesEnded, 400, "sales_ended"},
		{booking.ErrNotSoldOut, 409, "not_sold_out"},
		{fmt.Errorf("answer offer: %w", booking.ErrNotYourOffer), 403, "not_your_offer"},
		{fmt.Errorf("%w: bad id", booking.ErrInvalidArgument), 400, "invalid_argument"},
		{&booking.RateLimitedError{RetryAfter: time.Second}, 429, "rate_limited"},
		{errors.New("redis: connection refused"), 503, "unavailable"},
	}
	for _, tc := range cases {
		if code, name := Status(tc.err); code != tc.code || name != tc.name {
			t.Errorf("Status(%v) = %d %s, want %d %s", tc.err, code, name, tc.code, tc.name)
		}
	}
}

// Fail answers in the JSON error format: a sentinel's own text (not the
// wrapping), the field of an invalid argument, Retry-After for a rate
// limit, and nothing of an internal error in a 503.
func TestFail(t *testing.T) {
	r := httpapi.New(nil, nil)
	r.GET("/sold-out", func(c *gin.Context) { Fail(c, fmt.Errorf("lock seat: %w", booking.ErrSoldOut)) })
	r.GET("/invalid", func(c *gin.Context) { Fail(c, fmt.Errorf("%w: seat_id is required", booking.ErrInvalidArgument)) })
	r.GET("/limited", func(c *gin.Context) {
		Fail(c, fmt.Errorf("join: %w", &booking.RateLimitedError{RetryAfter: 1500 * time.Millisecond}))
	})
	r.GET("/down", func(c *gin.Context) { Fail(c, errors.New("redis: connection refused")) })
	for _, tc := range []struct {
		path, code, message, retryAfter string
		status                          int
	}{
		{"/sold-out", "sold_out", booking.ErrSoldOut.Error(), "", 409},
		{"/invalid", "invalid_argument", "seat_id is required", "", 400},
		{"/limited", "rate_limited", "retry after 2 s", "2", 429},
		{"/down", "unavailable", "retry the request", "", 503},
	} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", tc.path, nil))
		var e httpapi.Error
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v: %s", tc.path, err, w.Body)
		}
		if w.Code != tc.status || e.StatusCode != tc.status || e.Code != tc.code || e.Path != tc.path || !strings.Contains(e.Message, tc.message) {
			t.Errorf("%s: %d %+v, want %d %s %q", tc.path, w.Code, e, tc.status, tc.code, tc.message)
		}
		if got := w.Header().Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", tc.path, got, tc.retryAfter)
		}
		if strings.Contains(e.Message, "lock seat") || strings.Contains(e.Message, "refused") {
			t.Errorf("%s: the message leaks the wrapping: %q", tc.path, e.Message)
		}
	}
}
