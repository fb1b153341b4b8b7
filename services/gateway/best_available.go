package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// Best available (pkg/booking bestavail.go): the engine picks count
// adjacent seats in the best section that has them and holds them as a
// manual selection would; the no-orphan rule's refusals carry what the
// fan can do instead.

type selectBestRequest struct {
	EventID string `json:"event_id"`
	Count   int    `json:"count"`
	Section string `json:"section"`
	// Accessible: the fan asks for accessibility seats; those reserved
	// for accessibility come first.
	Accessible bool `json:"accessible"`
}

func (r selectBestRequest) Validate() error {
	if err := checkEventID(r.EventID); err != nil {
		return err
	}
	if r.Count < 1 || r.Count > booking.MaxSeatsPerOrderLimit {
		return fmt.Errorf("count must be from 1 to %d", booking.MaxSeatsPerOrderLimit)
	}
	if len(r.Section) > booking.MaxSectionNameLen {
		return fmt.Errorf("section must be at most %d bytes", booking.MaxSectionNameLen)
	}
	return nil
}

func (r selectBestRequest) event() string { return r.EventID }

// noAdjacentBody is the 409 no_adjacent_seats: what is left, the most
// adjacent seats still free together (in the section) and the seats on
// sale.
type noAdjacentBody struct {
	httpapi.Error
	LargestTogether int `json:"largest_together"`
	Available       int `json:"available"`
}

// orphanBody is the 409 orphan_seat: the seats the choice would leave
// single and a suggested choice of as many seats that leaves none.
type orphanBody struct {
	httpapi.Error
	SeatIDs          []string `json:"seat_ids"`
	SuggestedSeatIDs []string `json:"suggested_seat_ids"`
}

// refuseOrphan answers a manual selection the no-orphan rule refused.
func refuseOrphan(c *gin.Context, err error, o *booking.OrphanSeatError) {
	status, code := bookinghttp.Status(err)
	c.AbortWithStatusJSON(status, orphanBody{Error: httpapi.Error{StatusCode: status, Error: http.StatusText(status),
		Code: code, Message: "this choice leaves a single seat free (" + strings.Join(o.Orphans, ", ") +
			"); try " + strings.Join(o.Suggested, ", "),
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Path: c.Request.URL.Path},
		SeatIDs: o.Orphans, SuggestedSeatIDs: o.Suggested})
}

// selectBest: POST /api/booking/select-best {"event_id","count","section"}
// holds the best count adjacent seats (section: only there), replacing
// the caller's selection. 400 for a count outside 1 to the event's
// seats per order, 404 section_not_found, 409 no_adjacent_seats with
// what is left. A caller whose token has a channel claim (or any caller
// while the event's phase is a channel) gets the channel's allocated
// seats first (allocations.go); a caller asking "accessible": true the
// seats reserved for accessibility (channels wheelchair and companion).
func (s *Server) selectBest(c *gin.Context) {
	var req selectBestRequest
	user, ok := s.bookingRequest(c, &req)
	if !ok {
		return
	}
	res, err := s.Store.SelectBestVia(c.Request.Context(), req.EventID, user, httpapi.Identity(c).Channel, req.Accessible, req.Count, req.Section)
	var left *booking.NoAdjacentSeatsError
	var many *booking.TooManySeatsError
	switch {
	case errors.As(err, &left):
		status, code := bookinghttp.Status(err)
		c.AbortWithStatusJSON(status, noAdjacentBody{Error: httpapi.Error{StatusCode: status, Error: http.StatusText(status),
			Code: code, Message: fmt.Sprintf("no %d seats together; at most %d together are left", req.Count, left.Largest),
			Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Path: c.Request.URL.Path},
			LargestTogether: left.Largest, Available: left.Available})
		return
	case errors.As(err, &many):
		status, code := bookinghttp.Status(err)
		httpapi.Abort(c, status, code, fmt.Sprintf("at most %d seats per order for this event", many.Max))
		return
	case errors.Is(err, booking.ErrSectionUnknown):
		status, code := bookinghttp.Status(err)
		httpapi.Abort(c, status, code, "no section "+req.Section+" in this event")
		return
	case err != nil:
		bookinghttp.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"success": true, "seat_ids": res.Seats,
		"expire_time": unixOrZero(res.Deadline), "expire_at": rfc3339OrEmpty(res.Deadline)})
}
