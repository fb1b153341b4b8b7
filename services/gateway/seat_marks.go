package main

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// Holds and kills (docs/http-api.md "Holds and kills"): operators keep
// seats off sale, held for a purpose or killed, and release them, live.
// The change is recorded in the ledger (who, when) in the transaction
// that applies it in Redis (booking.Store.MarkSeats), so a refused change
// leaves nothing; then audited and published (seats_held, seats_killed,
// seats_released; a fact Kafka did not take is published by the sweep
// main runs, ledger.MarkPublisher).

// seatMarksRoutes registers the routes of holds and kills.
func (s *Server) seatMarksRoutes(adm *gin.RouterGroup) {
	adm.POST("/events/:id/seat-marks", s.markSeats)
	adm.POST("/events/:id/allocations/:channel/release", s.releaseAllocation) // allocations.go
	if s.Ledger != nil {
		adm.GET("/events/:id/seat-marks", s.seatMarks)
	}
}

// seatRange is an inclusive run of the seat map, in display order.
type seatRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// markSeatsRequest names the seats one of three ways: seat_ids, a row
// (every seat <row><n>), or a range of the seat map.
type markSeatsRequest struct {
	Action  booking.SeatMark `json:"action"`
	Purpose string           `json:"purpose"`
	// Channel and ReleaseAt are an allocation's (action allocate): the
	// channel that alone may take the seats and, optionally, when its
	// unsold seats go on sale (allocations.go).
	Channel   *string `json:"channel"`
	ReleaseAt *string `json:"release_at"`
	// Kind is set_kind's (required): the seats' accessibility kind,
	// wheelchair or companion, or "" for none.
	Kind    *string    `json:"kind"`
	SeatIDs []string   `json:"seat_ids"`
	Row     *string    `json:"row"`
	Range   *seatRange `json:"range"`
}

func (r markSeatsRequest) Validate() error {
	switch r.Action {
	case booking.MarkHold:
		if err := booking.CheckPurpose(r.Purpose); err != nil {
			return errf("purpose must be 1-64 characters without control characters")
		}
	case booking.MarkKill, booking.MarkRelease:
		if r.Purpose != "" {
			return errf("purpose is only for action hold")
		}
	case booking.MarkAllocate:
		if r.Purpose != "" {
			return errf("purpose is only for action hold")
		}
		if r.Channel == nil || *r.Channel == "" || booking.CheckChannel(*r.Channel) != nil {
			return errf("channel must be an id of 1-64 characters without spaces or commas")
		}
		if r.ReleaseAt != nil {
			if _, err := time.Parse(time.RFC3339Nano, *r.ReleaseAt); err != nil {
				return errf("release_at must be an RFC 3339 time")
			}
		}
	case booking.MarkKind:
		if r.Purpose != "" {
			return errf("purpose is only for action hold")
		}
		if r.Kind == nil || (*r.Kind != "" && *r.Kind != booking.ChannelWheelchair && *r.Kind != booking.ChannelCompanion) {
			return errf(`kind must be wheelchair, companion or "" (none)`)
		}
	default:
		return errf("action must be hold, kill, allocate, release or set_kind")
	}
	if r.Action != booking.MarkKind && r.Kind != nil {
		return errf("kind is only for action set_kind")
	}
	if r.Action != booking.MarkAllocate && r.Channel != nil {
		return errf("channel is only for action allocate")
	}
	if r.Action != booking.MarkAllocate && r.ReleaseAt != nil {
		return errf("release_at is only for action allocate")
	}
	n := 0
	for _, set := range []bool{r.SeatIDs != nil, r.Row != nil, r.Range != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errf("name the seats one way: seat_ids, row or range")
	}
	if r.SeatIDs != nil {
		if len(r.SeatIDs) == 0 || len(r.SeatIDs) > booking.MaxMarkSeats {
			return errf("seat_ids must list 1-5000 seats")
		}
		seen := make(map[string]bool, len(r.SeatIDs))
		for _, id := range r.SeatIDs {
			if !ids.Valid(id) || strings.IndexByte(id, ',') >= 0 {
				return errf("seat_ids must be seat ids: 1-128 printable ASCII characters without spaces, commas, braces or |")
			}
			if seen[id] {
				return errf("seat_ids must not repeat a seat")
			}
			seen[id] = true
		}
	}
	if r.Row != nil && (*r.Row == "" || len(*r.Row) > 9 || strings.Trim(*r.Row, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "") {
		return errf("row must be a row's capital letters (A, B, …, AA)")
	}
	if r.Range != nil && (!ids.Valid(r.Range.From) || !ids.Valid(r.Range.To)) {
		return errf("range must name two seat ids, from and to")
	}
	return nil
}

// errNoSuchSeats is a row or range bound that names no seat of the map.
var errNoSuchSeats = errors.New("no such seats")

// seats resolves the request's seats against the event's map (ids in
// display order): a row's seats, or the range's, inclusive.
func (r markSeatsRequest) seats(ids []string) ([]string, error) {
	if r.SeatIDs != nil {
		return r.SeatIDs, nil
	}
	if r.Row != nil {
		var out []string
		for _, sec := range booking.SeatSections(ids) {
			if sec.IDs == nil && sec.Row == *r.Row {
				out = append(out, ids[sec.Start:sec.Start+sec.Len]...)
			}
		}
		if len(out) == 0 {
			return nil, errNoSuchSeats
		}
		return out, nil
	}
	from, to := slices.Index(ids, r.Range.From), slices.Index(ids, r.Range.To)
	if from < 0 || to < 0 {
		return nil, errNoSuchSeats
	}
	if from > to {
		from, to = to, from
	}
	return ids[from : to+1], nil
}

// markSeats: POST /api/admin/events/{id}/seat-marks (operator)
// {action: hold|kill|allocate|release, purpose (hold), channel and
// release_at (allocate), and seat_ids, row or range {from, to}}: all the
// seats or none. 200 {changed, action,
// purpose, seat_ids (those that changed), change_id}: changed false for
// a repeat, which changes nothing and records nothing. Errors: 400
// invalid_body (a bad body), invalid_argument (a row or range of more
// than 5000 seats), 404
// event_not_found, 404 seat_not_found (seat_ids: the unknown ones; or a
// row or range not in the map), 409 seat_unavailable (refused: each seat
// a fan holds or bought, with its status; nothing changed).
func (s *Server) markSeats(c *gin.Context) {
	id, req, ok := adminEventRequest[markSeatsRequest](c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	seats := req.SeatIDs
	if seats == nil {
		all, err := s.Store.SeatMapIDs(ctx, id)
		if err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		if seats, err = req.seats(all); err != nil {
			httpapi.Abort(c, http.StatusNotFound, "seat_not_found", "the row or range names no seat of this event")
			return
		}
		if len(seats) > booking.MaxMarkSeats {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "at most 5000 seats per call")
			return
		}
	}
	if req.Action == booking.MarkKind {
		s.setSeatKind(c, id, *req.Kind, seats)
		return
	}
	purpose, releaseAt := req.Purpose, time.Time{}
	if req.Action == booking.MarkAllocate {
		purpose = *req.Channel
		if req.ReleaseAt != nil {
			releaseAt, _ = time.Parse(time.RFC3339Nano, *req.ReleaseAt) // Validate parsed it
		}
	}
	apply := func(ctx context.Context) ([]string, error) {
		if req.Action == booking.MarkAllocate {
			return s.Store.AllocateSeats(ctx, id, purpose, releaseAt, seats)
		}
		return s.Store.MarkSeats(ctx, id, req.Action, purpose, seats)
	}
	p := principal(c)
	var res ledger.MarkChange
	var err error
	switch {
	case s.Ledger != nil && req.Action == booking.MarkAllocate:
		res, err = s.Ledger.AllocateSeats(ctx, s.Store, id, purpose, p.Account, releaseAt, seats, apply)
	case s.Ledger != nil:
		res, err = s.Ledger.MarkSeats(ctx, s.Store, id, req.Action, purpose, p.Account, seats, apply)
	default:
		res = ledger.MarkChange{EventID: id, Mark: req.Action, Purpose: purpose, Actor: p.Account, At: time.Now()}
		res.Changed, err = apply(ctx)
	}
	if failMarks(c, err, "seats a fan holds or bought cannot be "+pastTense(req.Action)+"; nothing changed") {
		return
	}
	if req.Action == booking.MarkRelease && len(res.Changed) > 0 {
		// released seats were offered to the waitlist in the same step
		if err := s.Announcer.AnnounceWaitlist(ctx, id); err != nil {
			httpapi.Logger(c).Warn("waitlist offers left to the sweep", zap.Error(err))
		}
	}
	out := gin.H{"changed": len(res.Changed) > 0, "action": req.Action, "purpose": req.Purpose,
		"seat_ids": nonNil(res.Changed), "change_id": res.ID}
	if req.Action == booking.MarkAllocate {
		out["channel"] = purpose
	}
	if len(res.Changed) == 0 {
		noChange(c)
		c.JSON(http.StatusOK, out)
		return
	}
	after := gin.H{"seat_ids": res.Changed, "purpose": req.Purpose, "change_id": res.ID}
	if req.Action == booking.MarkAllocate {
		after = gin.H{"seat_ids": res.Changed, "channel": purpose, "release_at": req.ReleaseAt, "change_id": res.ID}
	}
	if !s.audit(c, seatMarkAction[req.Action], id, "", nil, after) {
		return
	}
	s.publishMarks(c, res)
	c.JSON(http.StatusOK, out)
}

// failMarks answers a seat mark's error, if any, and reports whether it
// did: 404 seat_not_found naming the unknown seats, 409 seat_unavailable
// with each refused seat and its status (refusal says why), else the
// ledger's or the engine's error.
func failMarks(c *gin.Context, err error, refusal string) bool {
	var unknown *booking.SeatsUnknownError
	var refused *booking.SeatsRefusedError
	switch {
	case errors.As(err, &unknown):
		c.AbortWithStatusJSON(http.StatusNotFound, seatsTakenBody{Error: httpapi.Error{StatusCode: http.StatusNotFound,
			Error: http.StatusText(http.StatusNotFound), Code: "seat_not_found",
			Message:   "no such seats in this event: " + strings.Join(unknown.Seats, ", "),
			Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Path: c.Request.URL.Path}, SeatIDs: unknown.Seats})
	case errors.As(err, &refused):
		c.AbortWithStatusJSON(http.StatusConflict, seatsRefusedBody{Error: httpapi.Error{StatusCode: http.StatusConflict,
			Error: http.StatusText(http.StatusConflict), Code: "seat_unavailable", Message: refusal,
			Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Path: c.Request.URL.Path}, Refused: refused.Seats})
	case err != nil:
		bookinghttp.Fail(c, ledgerErr(err))
	default:
		return false
	}
	return true
}

// setSeatKind is markSeats' action set_kind: the seats' accessibility
// kind set, or cleared (kind ""), in the ledger (accessible_seats, read by
// a rebuild) in the transaction that applies it in Redis
// (booking.Store.SetSeatKind), then audited (seats.kind). 200 {changed,
// action, purpose "", kind, seat_ids (those whose kind changed),
// change_id 0}; 409 seat_unavailable for a seat allocated to the channel
// of another kind (status allocated).
func (s *Server) setSeatKind(c *gin.Context, eventID, kind string, seats []string) {
	ctx := c.Request.Context()
	apply := func(ctx context.Context) ([]string, error) { return s.Store.SetSeatKind(ctx, eventID, kind, seats) }
	var changed []string
	var err error
	if s.Ledger != nil {
		changed, err = s.Ledger.SetSeatKind(ctx, eventID, kind, principal(c).Account, seats, apply)
	} else {
		changed, err = apply(ctx)
	}
	if failMarks(c, err, "seats allocated to the wheelchair or companion channel keep its kind while allocated: release them first; nothing changed") {
		return
	}
	out := gin.H{"changed": len(changed) > 0, "action": booking.MarkKind, "purpose": "", "kind": kind,
		"seat_ids": nonNil(changed), "change_id": 0}
	if len(changed) == 0 {
		noChange(c)
		c.JSON(http.StatusOK, out)
		return
	}
	if !s.audit(c, operators.ActionSeatsKind, eventID, "", nil, gin.H{"seat_ids": changed, "kind": kind}) {
		return
	}
	c.JSON(http.StatusOK, out)
}

// seatMarkAction is each mark's audit action.
var seatMarkAction = map[booking.SeatMark]string{
	booking.MarkHold: operators.ActionSeatsHold, booking.MarkKill: operators.ActionSeatsKill,
	booking.MarkRelease: operators.ActionSeatsRelease, booking.MarkAllocate: operators.ActionSeatsAllocate,
}

// markPublisher publishes the facts of seat mark changes (and, run by
// main, sweeps what a crash or a Kafka outage left).
func (s *Server) markPublisher() *ledger.MarkPublisher {
	return &ledger.MarkPublisher{Ledger: s.Ledger, Kafka: s.Kafka, Log: s.Log}
}

// publishMarks publishes the change's fact; a failure is logged and the
// sweep publishes it later (without a ledger, of the Redis path's tests,
// it is published once).
func (s *Server) publishMarks(c *gin.Context, res ledger.MarkChange) {
	if s.Kafka == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 10*time.Second)
	defer cancel()
	var err error
	if s.Ledger != nil {
		err = s.markPublisher().Publish(ctx, res)
	} else {
		err = s.Kafka.Publish(ctx, res.Fact())
	}
	if err != nil {
		httpapi.Logger(c).Warn("seat mark fact left to the sweep", zap.Int64("change_id", res.ID), zap.Error(err))
	}
}

// seatsRefusedBody is the 409 of a mark refused: the project's error with
// each refused seat and its status.
type seatsRefusedBody struct {
	httpapi.Error
	Refused []booking.SeatRefusal `json:"refused"`
}

func pastTense(m booking.SeatMark) string {
	switch m {
	case booking.MarkHold:
		return "held"
	case booking.MarkKill:
		return "killed"
	case booking.MarkAllocate:
		return "allocated"
	}
	return "released"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// seatMarks: GET /api/admin/events/{id}/seat-marks (viewer): the seats
// operators hold or killed, with who and when (the ledger's). 404
// event_not_found.
func (s *Server) seatMarks(c *gin.Context) {
	id, marks, ok := ledgerList(s, c, s.Ledger.SeatMarks)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, gin.H{"event_id": id, "seat_marks": marks})
}
