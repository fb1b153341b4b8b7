package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/jsonobj"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/receipt"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// joinResponse is the answer of POST /api/booking/request: success and
// position, status, sequence, and the hold deadline of an immediate
// admission.
type joinResponse struct {
	Success    bool   `json:"success"`
	Status     string `json:"status"` // queued | prequeued | active | completed
	State      string `json:"state"`
	Position   int64  `json:"position"`
	Sequence   int64  `json:"sequence"`
	ExpireTime int64  `json:"expire_time,omitempty"` // unix seconds, in the room
	ExpireAt   string `json:"expire_at,omitempty"`
	Pass       string `json:"pass,omitempty"` // the admission pass (pass.go)
	// Receipt is the join receipt of a queued (not pre-queued) user
	// (receipts.go): its leaf's seq against GET /api/events/{id}/progress
	// is the user's place.
	Receipt *receipt.Receipt `json:"receipt,omitempty"`
	// SalesStart is when the pre-queue's draw admits (status prequeued).
	SalesStart string `json:"sales_start,omitempty"`
}

// appendJSON is encoding/json's encoding of r, without reflection (the
// join is hot; TestResponsesEncodeLikeEncodingJSON holds them equal).
func (r *joinResponse) appendJSON(buf []byte) []byte {
	o := jsonobj.New(buf)
	o.Bool("success", r.Success)
	o.Str("status", r.Status)
	o.Str("state", r.State)
	o.Int("position", r.Position)
	o.Int("sequence", r.Sequence)
	o.IntOmitZero("expire_time", r.ExpireTime)
	o.StrOmitEmpty("expire_at", r.ExpireAt)
	o.StrOmitEmpty("pass", r.Pass)
	if r.Receipt != nil {
		o.Value("receipt", r.Receipt)
	}
	o.StrOmitEmpty("sales_start", r.SalesStart)
	return o.Bytes()
}

// statusOf is the coarse status of a state that clients show: queued,
// active, or the state itself.
func statusOf(st booking.State) string {
	switch {
	case st == booking.StateWaiting:
		return "queued"
	case st.InRoom():
		return "active"
	}
	return string(st)
}

// join: POST /api/booking/request {"event_id", "code" (optional: an
// access code, codes.go)}.
//
// The join's booking_request fact is written to the outbox by the same
// script that queues the user, so the answer does not wait for Kafka: a
// queued join hands the entry to the background relay (which publishes and
// acknowledges it, batched with other joins), and whatever the relay
// misses the safety net's outbox sweep publishes. An immediate admission
// is announced before the answer (timeout scheduled, your_turn, the Kafka
// events), and on failure left to the same sweep.
func (s *Server) join(c *fastserver.Ctx) {
	id, ok := fastserver.Identity(s.Auth, c)
	if !ok {
		return
	}
	req, ok := plainEventRequest(c.PostBody())
	if !ok && !c.Bind(&req) {
		return
	}
	if !s.joinChallenge(c, req.EventID) {
		return
	}
	user := id.UserID
	ctx := c.Context()
	ipLimit, userLimit := s.joinLimits(c, user)
	var res booking.JoinResult
	if req.Code != "" {
		// a presale's access code (codes.go)
		if res, ok = s.codeJoin(c, req.EventID, user, req.Code, ipLimit, userLimit); !ok {
			return
		}
	} else {
		var err error
		if res, err = s.Store.Enqueue(ctx, req.EventID, user, ipLimit, userLimit); err != nil {
			c.Fail(err)
			return
		}
	}
	if len(res.Outbox) > 0 {
		rid := c.RequestID()
		for i := range res.Outbox {
			res.Outbox[i].RequestID = rid
		}
		if res.State.InRoom() {
			// The user is admitted either way, so a failure is not the
			// client's error: the entries stay in the outbox.
			if err := s.Announcer.Announce(ctx, req.EventID, res.Outbox); err != nil {
				c.Logger().Warn("announce immediate admission failed; left to the outbox sweep",
					zap.String("event_id", req.EventID), zap.String("user_id", user), zap.Error(err))
			}
		} else {
			s.Relay.Add(req.EventID, res.Outbox...)
		}
	}
	resp := joinResponse{
		Success: true, Status: statusOf(res.State), State: string(res.State),
		Position: res.Position, Sequence: res.Sequence,
		ExpireTime: unixOrZero(res.ExpireAt), ExpireAt: rfc3339OrEmpty(res.ExpireAt),
	}
	if !res.PrequeuedUntil.IsZero() {
		resp.Status, resp.SalesStart = "prequeued", rfc3339OrEmpty(res.PrequeuedUntil)
	}
	if res.State.InRoom() && !s.fastPass(c, req.EventID, user, res.Sequence, res.At, res.ExpireAt, &resp.Pass) {
		return
	}
	// a pre-queued user's place is drawn at the start: no receipt until then
	if wantsReceipt(&res) && !s.fastReceipt(c, req.EventID, user, res.Sequence, res.At, res.Attached, &resp.Receipt) {
		return
	}
	c.WriteJSONBuffer(http.StatusOK, resp.appendJSON(c.BodyBuffer()))
}

// plainEventRequest reads a join's body when it is exactly
// {"event_id":"<id>"} with a valid id of printable ASCII (what clients
// send), without encoding/json's reflection (a share of a join's gateway
// CPU worth saving: BenchmarkJoinBody); any other body, valid or not, goes through Bind, so the
// answers and errors are Bind's. TestPlainEventRequestAgreesWithBind.
func plainEventRequest(body []byte) (eventRequest, bool) {
	const pre, suf = `{"event_id":"`, `"}`
	if len(body) < len(pre)+len(suf) || len(body) > httpapi.MaxBody ||
		string(body[:len(pre)]) != pre || string(body[len(body)-len(suf):]) != suf {
		return eventRequest{}, false
	}
	id := body[len(pre) : len(body)-len(suf)]
	for _, b := range id {
		if b < 0x20 || b >= 0x7f || b == '"' || b == '\\' {
			return eventRequest{}, false
		}
	}
	req := eventRequest{EventID: string(id)}
	return req, req.Validate() == nil
}

// positionResponse is the answer of GET /api/booking/position.
type positionResponse struct {
	// Status: queued, prequeued (waiting for the draw at sales_start),
	// active, completed, expired, failed, cancelled, abandoned, sold_out
	// (waiting, but every seat is sold) or not_found.
	Status   string `json:"status"`
	State    string `json:"state,omitempty"`
	EventID  string `json:"event_id"`
	Position int64  `json:"position,omitempty"`
	Sequence int64  `json:"sequence,omitempty"`
	// Served is the highest join sequence admitted so far.
	Served  int64 `json:"served"`
	Waiting int64 `json:"waiting"`
	// ETASeconds = position / (admitted in the last minute / 60), the rate
	// no more than the event's admit_per_minute; null while nobody was
	// admitted in the last minute.
	ETASeconds *int64 `json:"eta_seconds"`
	// Chance is the estimated probability that seats are left at the
	// user's turn (pkg/chance), to the hundredth: queued and sold_out
	// only.
	Chance *float64 `json:"chance,omitempty"`
	// SeatID is set for a one-seat selection; SeatIDs lists every seat.
	SeatID     string   `json:"seat_id,omitempty"`
	SeatIDs    []string `json:"seat_ids,omitempty"`
	PaymentID  string   `json:"payment_id,omitempty"`
	ExpireTime int64    `json:"expire_time,omitempty"`
	ExpireAt   string   `json:"expire_at,omitempty"`
	SoldOut    bool     `json:"sold_out"`
	// SalesEnded: the event's sales end has passed (Redis's clock): a
	// waiting user will not be admitted (status sales_ended).
	SalesEnded bool `json:"sales_ended"`
	// Pass is the admission pass, in the room (pass.go).
	Pass string `json:"pass,omitempty"`
	// SalesStart: when a prequeued user's draw admits.
	SalesStart string `json:"sales_start,omitempty"`
}

// setSeats sets seat_ids from the engine's ','-joined seats, and seat_id
// when there is one seat.
func (r *positionResponse) setSeats(joined string) {
	r.SeatIDs = booking.SplitSeats(joined)
	if len(r.SeatIDs) == 1 {
		r.SeatID = r.SeatIDs[0]
	}
}

// appendJSON is encoding/json's encoding of r, without reflection (the
// position is polled by every waiting user).
func (r *positionResponse) appendJSON(buf []byte) []byte {
	o := jsonobj.New(buf)
	o.Str("status", r.Status)
	o.StrOmitEmpty("state", r.State)
	o.Str("event_id", r.EventID)
	o.IntOmitZero("position", r.Position)
	o.IntOmitZero("sequence", r.Sequence)
	o.Int("served", r.Served)
	o.Int("waiting", r.Waiting)
	o.IntPtr("eta_seconds", r.ETASeconds)
	o.FloatPtrOmitNil("chance", r.Chance)
	o.StrOmitEmpty("seat_id", r.SeatID)
	o.StrsOmitEmpty("seat_ids", r.SeatIDs)
	o.StrOmitEmpty("payment_id", r.PaymentID)
	o.IntOmitZero("expire_time", r.ExpireTime)
	o.StrOmitEmpty("expire_at", r.ExpireAt)
	o.Bool("sold_out", r.SoldOut)
	o.Bool("sales_ended", r.SalesEnded)
	o.StrOmitEmpty("pass", r.Pass)
	o.StrOmitEmpty("sales_start", r.SalesStart)
	return o.Bytes()
}

// position: GET /api/booking/position?event_id=.
func (s *Server) position(c *fastserver.Ctx) {
	id, ok := fastserver.Identity(s.Auth, c)
	if !ok {
		return
	}
	eventID, err := eventIDParam(c.Query("event_id"))
	if err != nil {
		c.Abort(http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
		return
	}
	st, err := s.Store.Position(c.Context(), eventID, id.UserID, s.Limits.User(id.UserID))
	if nf := (*booking.NotFoundError)(nil); errors.As(err, &nf) {
		st = nf.Status // not joined: the event's numbers still show
	}
	resp := positionResponse{EventID: eventID, Served: st.Counts.Served, Waiting: st.Counts.Waiting, SoldOut: st.SoldOut,
		SalesEnded: st.SalesEnded}
	switch {
	case errors.Is(err, booking.ErrNotFound):
		resp.Status = "not_found"
		c.WriteJSONBuffer(http.StatusOK, resp.appendJSON(c.BodyBuffer()))
		return
	case err != nil:
		c.Fail(err)
		return
	}
	resp.Status, resp.State, resp.Sequence = statusOf(st.State), string(st.State), st.Sequence
	switch {
	case st.State == booking.StateWaiting:
		resp.Position = st.Position
		if st.At.Before(st.SalesStart) { // by Redis's clock, the script's
			resp.Status, resp.SalesStart = "prequeued", rfc3339OrEmpty(st.SalesStart)
		} else if st.SalesEnded { // nobody is admitted any more (booking/window.go)
			resp.Status = "sales_ended"
		} else if st.SoldOut {
			resp.Status, resp.Chance = "sold_out", new(float64)
		} else if st.Position == 0 {
			// in a later phase's pre-queue, until its draw
			resp.Status, resp.SalesStart = "prequeued", rfc3339OrEmpty(st.SalesStart)
		} else {
			if rate := etaRate(st.Counts.AdmittedLastMinute, st.AdmitPerMinute); rate > 0 {
				eta := int64(math.Ceil(float64(st.Position) * 60 / float64(rate)))
				resp.ETASeconds = &eta
			}
			resp.Chance = s.chanceAt(c, eventID, st.Position-1)
		}
	case st.State.InRoom():
		resp.PaymentID = st.PaymentID
		resp.setSeats(st.SeatID)
		resp.ExpireTime, resp.ExpireAt = unixOrZero(st.ExpireAt), rfc3339OrEmpty(st.ExpireAt)
		if !s.fastPass(c, eventID, id.UserID, st.Sequence, st.At, st.ExpireAt, &resp.Pass) {
			return
		}
	case st.State == booking.StateCompleted:
		resp.PaymentID = st.PaymentID
		resp.setSeats(st.SeatID)
	}
	c.WriteJSONBuffer(http.StatusOK, resp.appendJSON(c.BodyBuffer()))
}

// chanceAt is the chance of a ticket of a user with ahead users ahead,
// from the event's progress snapshot (read from Redis at most once per
// ProgressMaxAge per event, not per user); nil when the snapshot cannot
// be read (the position answers without it).
func (s *Server) chanceAt(c *fastserver.Ctx, eventID string, ahead int64) *float64 {
	snap, _, err := s.progressSnapshot(c.Context(), eventID)
	if err != nil {
		c.Logger().Warn("chance of a ticket unavailable", zap.String("event_id", eventID), zap.Error(err))
		return nil
	}
	p := snap.v.Chance(ahead)
	return &p
}

// etaRate is the admissions per minute the ETA assumes: the last
// minute's, but never more than the rate cap (which may just have been
// lowered; 0: none).
func etaRate(lastMinute, admitPerMinute int64) int64 {
	if admitPerMinute > 0 && lastMinute > admitPerMinute {
		return admitPerMinute
	}
	return lastMinute
}

type selectSeatRequest struct {
	EventID string   `json:"event_id"`
	SeatID  string   `json:"seat_id"`
	SeatIDs []string `json:"seat_ids"`
	// Accessible: the fan asks for accessibility seats (wheelchair
	// spaces, companion seats; no proof asked), which they may then take.
	Accessible bool `json:"accessible"`
}

func (r selectSeatRequest) Validate() error {
	if err := checkEventID(r.EventID); err != nil {
		return err
	}
	if r.SeatID == "" && len(r.SeatIDs) == 0 {
		return errf("seat_ids (or seat_id) is required")
	}
	if r.SeatID != "" && len(r.SeatIDs) > 0 {
		return errf("give seat_ids or seat_id, not both")
	}
	if len(r.SeatIDs) > booking.MaxSeatsPerOrderLimit {
		return fmt.Errorf("at most %d seat_ids", booking.MaxSeatsPerOrderLimit)
	}
	seen := make(map[string]bool, len(r.SeatIDs))
	for _, id := range r.SeatIDs {
		if id == "" {
			return errf("seat_ids must not hold an empty id")
		}
		if seen[id] {
			return fmt.Errorf("seat %q is given twice", id)
		}
		seen[id] = true
	}
	return nil
}

// seatsTakenBody is the 409 of a selection some of whose seats are taken:
// the project's error with the taken seats' ids.
type seatsTakenBody struct {
	httpapi.Error
	SeatIDs []string `json:"seat_ids"`
}

// seats returns the selection, one seat_id or seat_ids.
func (r selectSeatRequest) seats() []string {
	if len(r.SeatIDs) > 0 {
		return r.SeatIDs
	}
	return []string{r.SeatID}
}

// bookingBody is the body of a gin booking route: it names its event.
type bookingBody interface {
	httpapi.Validator
	event() string
}

func (r eventRequest) event() string      { return r.EventID }
func (r selectSeatRequest) event() string { return r.EventID }

// bookingRequest is the preamble of the gin booking routes (select-seat,
// payment initiate, cancel; the authentication is their group's): req
// bound from the body, the request counted against the abuse limits of
// its event, and the caller's user id; false when it answered.
func (s *Server) bookingRequest(c *gin.Context, req bookingBody) (user string, ok bool) {
	if !httpapi.Bind(c, req) || !s.limitRequest(c, req.event()) {
		return "", false
	}
	return httpapi.Identity(c).UserID, true
}

// selectSeat: POST /api/booking/select-seat {"event_id","seat_ids":[…]}
// (or "seat_id"): all the seats are held or none; selecting again
// replaces the selection. A 409 seat_unavailable names the taken seats
// in "seat_ids"; a 409 seat_not_for_sale the seats operators hold or
// killed, or allocated to a channel not the caller's (the token's
// channel claim or the current phase; allocations.go); a 409 orphan_seat the seats the choice would
// leave single and a suggestion (best_available.go). Seats reserved for
// accessibility (allocated to the channels wheelchair and companion) are
// the caller's to take with "accessible": true.
func (s *Server) selectSeat(c *gin.Context) {
	var req selectSeatRequest
	user, ok := s.bookingRequest(c, &req)
	if !ok {
		return
	}
	seats := req.seats()
	deadline, err := s.Store.LockSeatsVia(c.Request.Context(), req.EventID, user, httpapi.Identity(c).Channel, req.Accessible, seats)
	var orphan *booking.OrphanSeatError
	switch {
	case errors.As(err, &orphan):
		refuseOrphan(c, err, orphan)
		return
	case refuseSeats(c, err):
		return
	case err != nil:
		bookinghttp.Fail(c, err)
		return
	}
	resp := gin.H{"success": true, "seat_ids": seats,
		"expire_time": unixOrZero(deadline), "expire_at": rfc3339OrEmpty(deadline)}
	if len(seats) == 1 {
		resp["seat_id"] = seats[0]
	}
	c.JSON(http.StatusOK, resp)
}

// refuseSeats answers a selection's (or box-office sale's) refusal that
// names seats or the order limit: 409 with the seat ids of those not for
// sale or taken, 400 over the limit, 404 for an unknown seat. false, and
// nothing written, for any other error.
func refuseSeats(c *gin.Context, err error) bool {
	var taken *booking.SeatsTakenError
	var kept *booking.SeatsNotForSaleError
	var many *booking.TooManySeatsError
	var unknown *booking.SeatUnknownError
	switch {
	case errors.As(err, &kept):
		status, code := bookinghttp.Status(err)
		c.AbortWithStatusJSON(status, seatsTakenBody{Error: httpapi.Error{StatusCode: status, Error: http.StatusText(status),
			Code: code, Message: "seats not for sale: " + strings.Join(kept.Seats, ", "),
			Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Path: c.Request.URL.Path}, SeatIDs: kept.Seats})
	case errors.As(err, &taken):
		status, code := bookinghttp.Status(err)
		c.AbortWithStatusJSON(status, seatsTakenBody{Error: httpapi.Error{StatusCode: status, Error: http.StatusText(status),
			Code: code, Message: "seats already taken: " + strings.Join(taken.Seats, ", "),
			Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Path: c.Request.URL.Path}, SeatIDs: taken.Seats})
	case errors.As(err, &many):
		status, code := bookinghttp.Status(err)
		httpapi.Abort(c, status, code, fmt.Sprintf("at most %d seats per order for this event", many.Max))
	case errors.As(err, &unknown):
		status, code := bookinghttp.Status(err)
		httpapi.Abort(c, status, code, "no seat "+unknown.Seat+" in this event")
	default:
		return false
	}
	return true
}

// initiatePayment: POST /api/booking/payment/initiate {"event_id"}. The
// payment id is made here and stored by the script first, so a retry gets
// the same id; the provider's create is idempotent by that id.
func (s *Server) initiatePayment(c *gin.Context) {
	var req eventRequest
	user, ok := s.bookingRequest(c, &req)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	hold, err := s.Store.InitiatePayment(ctx, req.EventID, user, "pay_"+strings.ToLower(rand.Text()))
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if hold.Created { // seats per order, for the chance of a ticket (progress.go)
		s.orderSizes.add(req.EventID, len(booking.SplitSeats(hold.SeatID)))
	}
	// the ledger knows every payment id before the provider does
	if !s.ledgerRecordPayment(c, req.EventID, user, hold) {
		return
	}
	amount, currency, ok := s.paymentMoney(c, hold) // the order's price, or the ledger's record on a repeat
	if !ok {
		return
	}
	p, err := s.Provider.Create(ctx, payment.Request{
		PaymentID: hold.PaymentID, Amount: amount, Currency: currency, UserID: user, EventID: req.EventID,
		SeatID: hold.SeatID, ReturnURL: strings.TrimRight(s.PublicURL, "/") + "/?event_id=" + url.QueryEscape(req.EventID),
	})
	if err != nil {
		httpapi.Logger(c).Warn("payment provider failed", zap.String("payment_id", hold.PaymentID), zap.Error(err))
		httpapi.Abort(c, http.StatusServiceUnavailable, "payment_provider_unavailable",
			"the payment provider is unavailable; retry (the same payment is reused)")
		return
	}
	at := hold.At // when it was initiated: a repeat republishes the same fact
	if at.IsZero() {
		at = s.Store.Now()
	}
	ev := events.PaymentInitiated(req.EventID, user, hold.SeatID, hold.PaymentID, hold.Sequence, at).WithMoney(amount, currency)
	if err := s.Kafka.Publish(ctx, ev); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"success": true, "payment_id": hold.PaymentID, "payment_url": p.URL,
		"amount": amount, "currency": currency, "seat_id": hold.SeatID, "seat_ids": hold.SeatIDs, "expire_time": unixOrZero(hold.ExpireAt), "expire_at": rfc3339OrEmpty(hold.ExpireAt)})
}

// cancel: POST /api/booking/cancel {"event_id"}. From the room it frees the
// slot: slot-released (confirmed) promotes the next user.
func (s *Server) cancel(c *gin.Context) {
	var req eventRequest
	user, ok := s.bookingRequest(c, &req)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	res, err := s.Store.Cancel(ctx, req.EventID, user)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	// booking_cancelled, and slot-released when the user left the room. The
	// cancellation is in the outbox: if this fails the client gets a 503 and
	// may retry (a repeat cancel is idempotent and announces the same entry),
	// and the slot-released consumer's safety net announces it anyway.
	if err := s.Announcer.Announce(ctx, req.EventID, res.Outbox); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if res.SeatID != "" {
		// the freed seats were offered to the waitlist in the same step
		if err := s.Announcer.AnnounceWaitlist(ctx, req.EventID); err != nil {
			bookinghttp.Fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"success": true, "from": res.From, "seat_id": res.SeatID})
}
