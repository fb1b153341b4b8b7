package main

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// more parses the sales window of a PATCH into u ("" clears a bound);
// false when it answered 400.
func (r updateEventRequest) more(u *booking.EventUpdate, c *gin.Context) bool {
	for _, f := range []struct {
		name string
		v    *string
		dst  **time.Time
	}{{"sales_start", r.SalesStart, &u.SalesStart}, {"sales_end", r.SalesEnd, &u.SalesEnd},
		{"refundable_until", r.RefundableUntil, &u.RefundableUntil}} {
		if f.v == nil {
			continue
		}
		var t time.Time
		if *f.v != "" {
			var err error
			if t, err = time.Parse(time.RFC3339, *f.v); err != nil {
				httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, f.name+` must be RFC 3339 (e.g. 2026-01-02T12:00:00Z) or "" for none`)
				return false
			}
		}
		*f.dst = &t
	}
	return true
}
