package main

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// Allocations to channels (docs/http-api.md "Holds and kills"): seats
// are allocated with the seat marks' route (action allocate, with a
// channel and an optional release_at); only a request through the
// channel (the token's channel claim, or the event's phase of that id)
// may take them. An allocation ends at its release time (the sweep main
// runs, ledger.AllocationSweeper; Redis's clock decides) or by an
// operator here.

// releaseAllocation: POST /api/admin/events/{id}/allocations/{channel}/release
// (operator): the channel's unsold seats go on sale at once, offered to
// the waitlist first; seats of it fans hold or bought go on sale when
// given back. 200 {changed, channel, seat_ids (put on sale), change_id}:
// changed false when the channel had no allocation. 404
// event_not_found, 400 invalid_argument for a malformed channel.
func (s *Server) releaseAllocation(c *gin.Context) {
	id, channel := c.Param("id"), c.Param("channel")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	if booking.CheckChannel(channel) != nil {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "channel must be an id of 1-64 characters")
		return
	}
	ctx := c.Request.Context()
	apply := func(ctx context.Context) (booking.AllocationEnd, error) {
		return s.Store.ReleaseAllocation(ctx, id, channel, false)
	}
	p := principal(c)
	var res ledger.MarkChange
	var err error
	if s.Ledger != nil {
		res, err = s.Ledger.ReleaseAllocation(ctx, s.Store, id, channel, p.Account, apply)
	} else {
		res = ledger.MarkChange{EventID: id, Mark: ledger.MarkReleaseAllocation, Purpose: channel, Actor: p.Account}
		var end booking.AllocationEnd
		end, err = apply(ctx)
		res.Changed = end.Released
		if err == nil && !end.Repeat {
			res.ID = 1
		}
	}
	if err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return
	}
	if len(res.Changed) > 0 {
		if err := s.Announcer.AnnounceWaitlist(ctx, id); err != nil {
			httpapi.Logger(c).Warn("waitlist offers left to the sweep", zap.Error(err))
		}
	}
	out := gin.H{"changed": res.ID != 0, "channel": channel, "seat_ids": nonNil(res.Changed), "change_id": res.ID}
	if res.ID == 0 {
		noChange(c)
		c.JSON(http.StatusOK, out)
		return
	}
	if !s.audit(c, operators.ActionAllocationRelease, id, channel, nil,
		gin.H{"seat_ids": nonNil(res.Changed), "change_id": res.ID}) {
		return
	}
	s.publishMarks(c, res)
	c.JSON(http.StatusOK, out)
}

// allocationSweeper ends the allocations whose release time has come.
func (s *Server) allocationSweeper() *ledger.AllocationSweeper {
	sw := &ledger.AllocationSweeper{Ledger: s.Ledger, Store: s.Store, Log: s.Log,
		Release: func(ctx context.Context, eventID, channel string) (booking.AllocationEnd, error) {
			return s.Store.ReleaseAllocation(ctx, eventID, channel, true)
		},
		SetRelease: s.Store.SetAllocationRelease, Announce: s.Announcer.AnnounceWaitlist}
	if s.Kafka != nil {
		sw.Publisher = s.markPublisher()
	}
	return sw
}
