package main

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// The waitlist (docs/http-api.md "The waitlist"; booking.Store's
// JoinWaitlist, Waitlist, AnswerOffer): a fan joins a sold-out event's
// waitlist and is offered returned seats in turn, each offer a hold for
// the event's offer time that the fan accepts (then pays the normal way)
// or declines. Offers are pushed over WebSocket (the offer notification)
// and read here.

// waitlistRoutes registers the waitlist's routes, for authenticated fans.
func (s *Server) waitlistRoutes(api *gin.RouterGroup) {
	w := api.Group("/events/:id/waitlist", httpapi.Authenticate(s.Auth))
	w.POST("", s.joinWaitlist)
	w.GET("", s.waitlistStatus)
	w.POST("/offers/:seq/accept", s.answerOffer(true))
	w.POST("/offers/:seq/decline", s.answerOffer(false))
}

// joinWaitlistRequest is the body of a join; it may be empty (one seat).
type joinWaitlistRequest struct {
	Seats int `json:"seats"`
}

func (r joinWaitlistRequest) Validate() error {
	if r.Seats < 0 || r.Seats > booking.MaxSeatsPerOrderLimit {
		return errf("seats must be from 1 to " + strconv.Itoa(booking.MaxSeatsPerOrderLimit))
	}
	return nil
}

// waitlistView is a fan's place on the waitlist or their open offer.
type waitlistView struct {
	booking.WaitlistStatus
	EventID string `json:"event_id"`
	// ExpireTime is an offer's deadline in unix seconds (0 while waiting).
	ExpireTime int64 `json:"expire_time"`
}

func viewOfWaitlist(eventID string, w booking.WaitlistStatus) waitlistView {
	return waitlistView{WaitlistStatus: w, EventID: eventID, ExpireTime: unixOrZero(w.ExpireAt)}
}

// waitlistEvent is the :id of a waitlist route, checked; false when it
// answered (an id no event can have is not found).
func (s *Server) waitlistEvent(c *gin.Context) (string, bool) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return "", false
	}
	return id, s.limitRequest(c, id)
}

// joinWaitlist: POST /api/events/{id}/waitlist {"seats"} (default 1).
// 201 with the new place, 200 for a repeat (the same place, or the open
// offer); 409 not_sold_out or waitlist_disabled.
func (s *Server) joinWaitlist(c *gin.Context) {
	id, ok := s.waitlistEvent(c)
	if !ok {
		return
	}
	var req joinWaitlistRequest
	if c.Request.ContentLength != 0 && !httpapi.Bind(c, &req) {
		return
	}
	if req.Seats == 0 {
		req.Seats = 1
	}
	ctx := c.Request.Context()
	user := httpapi.Identity(c).UserID
	w, err := s.Store.JoinWaitlist(ctx, id, user, req.Seats)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	// the place in the system of record, so a rebuild of Redis keeps it:
	// 503 when PostgreSQL is down (the fan's retry is the same place)
	if w.State == booking.Waitlisted && s.Ledger != nil {
		err := s.Ledger.RecordWaitlistJoin(ctx, ledger.WaitlistEntry{EventID: id, UserID: user, Sequence: w.Sequence, Seats: int(w.Seats)})
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
	}
	// waitlist_joined is in the outbox: a failure here is the sweep's
	if err := s.Announcer.AnnounceWaitlist(ctx, id); err != nil {
		httpapi.Logger(c).Warn("waitlist announcement left to the sweep")
	}
	status := http.StatusOK
	if w.Created {
		status = http.StatusCreated
	}
	c.JSON(status, viewOfWaitlist(id, w))
}

// waitlistStatus: GET /api/events/{id}/waitlist: the caller's place or
// open offer; 404 booking_not_found when neither.
func (s *Server) waitlistStatus(c *gin.Context) {
	id, ok := s.waitlistEvent(c)
	if !ok {
		return
	}
	w, err := s.Store.Waitlist(c.Request.Context(), id, httpapi.Identity(c).UserID)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, viewOfWaitlist(id, w))
}

// answerOffer: POST /api/events/{id}/waitlist/offers/{seq}/accept or
// /decline. Accepting keeps the hold: the fan pays with the normal
// checkout (POST /api/booking/payment/initiate). Someone else's offer is
// 403 not_your_offer, an expired one 409 offer_expired, one answered
// otherwise 409 offer_closed: nothing changes.
func (s *Server) answerOffer(accept bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := s.waitlistEvent(c)
		if !ok {
			return
		}
		seq, err := strconv.ParseInt(c.Param("seq"), 10, 64)
		if err != nil || seq < 1 {
			bookinghttp.Fail(c, booking.ErrOfferNotFound)
			return
		}
		ctx := c.Request.Context()
		user := httpapi.Identity(c).UserID
		a, err := s.Store.AnswerOffer(ctx, id, user, seq, accept)
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		// a declined place is closed in the system of record, so a
		// rebuild does not put the fan back (a repeat closes it again)
		if a.Outcome == booking.OfferDeclined && s.Ledger != nil {
			if err := s.Ledger.RecordOfferDeclined(ctx, id, user, seq); err != nil {
				bookinghttp.Fail(c, err)
				return
			}
		}
		// the answer, and a decline's next offers, are in the outbox
		if err := s.Announcer.AnnounceWaitlist(ctx, id); err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"success": true, "outcome": a.Outcome, "seat_ids": nonNil(a.Seats), "duplicate": a.Duplicate,
			"expire_time": unixOrZero(a.ExpireAt), "expire_at": rfc3339OrEmpty(a.ExpireAt)})
	}
}

// waitlistSettingsRequest is the body of PUT /api/admin/events/{id}/waitlist.
type waitlistSettingsRequest struct {
	// OfferSeconds: how long an offer holds its seats; 0 turns the
	// waitlist off.
	OfferSeconds *int `json:"offer_seconds"`
	// Early lets fans join before the sell-out.
	Early bool `json:"early"`
}

func (r waitlistSettingsRequest) Validate() error {
	if r.OfferSeconds == nil {
		return errf("offer_seconds is required")
	}
	if n := *r.OfferSeconds; n != 0 && (n < int(booking.MinOfferTime.Seconds()) || n > int(booking.MaxOfferTime.Seconds())) {
		return errf("offer_seconds must be 0 (off) or from " + strconv.Itoa(int(booking.MinOfferTime.Seconds())) +
			" to " + strconv.Itoa(int(booking.MaxOfferTime.Seconds())))
	}
	return nil
}

// waitlistSettings is an event's waitlist settings as the admin API gives them.
type waitlistSettings struct {
	OfferSeconds int  `json:"offer_seconds"`
	Early        bool `json:"early"`
}

// setWaitlist: PUT /api/admin/events/{id}/waitlist {"offer_seconds","early"}
// (operator): the event's waitlist settings, for offers made from now on;
// audited as an event update.
func (s *Server) setWaitlist(c *gin.Context) {
	id := c.Param("id")
	var req waitlistSettingsRequest
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	ctx := c.Request.Context()
	e, err := s.Store.GetEvent(ctx, id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	before := waitlistSettings{OfferSeconds: e.OfferSeconds, Early: e.WaitlistEarly}
	after := waitlistSettings{OfferSeconds: *req.OfferSeconds, Early: req.Early}
	// the ledger and Redis together: a rebuild of Redis restores the
	// settings from the ledger
	offer := time.Duration(after.OfferSeconds) * time.Second
	u := booking.EventUpdate{OfferTime: &offer, WaitlistEarly: &after.Early}
	if !s.ledgerUpdateEvent(c, id, u, func(ctx context.Context, rev int64) error {
		u.Revision = rev
		_, err := s.Store.UpdateEvent(ctx, id, u)
		return err
	}) {
		return
	}
	if !s.audit(c, operators.ActionEventUpdate, id, "waitlist", before, after) {
		return
	}
	c.JSON(http.StatusOK, after)
}
