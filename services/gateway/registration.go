package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// Registration before a sale (docs/http-api.md "Registration"): the
// operator sets a window, fans register in it, the operator draws who is
// selected at its close (ledger.Ledger.Draw), and in the registered phase
// (PUT .../phase, audience registered) only the selected join.

// registrationRoutes registers the routes of registration (they need the
// ledger, its record).
func (s *Server) registrationRoutes(api, adm *gin.RouterGroup) {
	if s.Ledger == nil {
		return
	}
	adm.PUT("/events/:id/registration", s.openRegistration)
	adm.POST("/events/:id/registration/draw", s.drawSelection)
	api.GET("/events/:id/registration", s.registrationWindow)
	fan := api.Group("/events/:id/registration", httpapi.Authenticate(s.Auth))
	fan.POST("", s.register)
	fan.GET("/me", s.registrationState)
}

// registrationErr answers a ledger error of registration: its own 404 and
// 409s, or what bookinghttp makes of the rest.
func registrationErr(c *gin.Context, err error) {
	for _, m := range []struct {
		err    error
		status int
		code   string
	}{
		{ledger.ErrNoRegistration, http.StatusNotFound, "registration_not_found"},
		{ledger.ErrRegistrationClosed, http.StatusConflict, "registration_closed"},
		{ledger.ErrRegistrationOpen, http.StatusConflict, "registration_open"},
		{ledger.ErrRegistrationDrawn, http.StatusConflict, "registration_drawn"},
	} {
		if errors.Is(err, m.err) {
			httpapi.Abort(c, m.status, m.code, m.err.Error())
			return
		}
	}
	bookinghttp.Fail(c, ledgerErr(err))
}

// publishFacts publishes facts for a request; a failure answers 503 (the
// request is safe to repeat and its facts have fixed ids) and false.
func (s *Server) publishFacts(c *gin.Context, facts ...events.Event) bool {
	if s.Kafka == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 10*time.Second)
	defer cancel()
	for _, f := range facts {
		if err := s.Kafka.Publish(ctx, f); err != nil {
			httpapi.Logger(c).Warn("fact not published; the request may be repeated", zap.String("type", f.Type), zap.Error(err))
			bookinghttp.Fail(c, err)
			return false
		}
	}
	return true
}

type openRegistrationRequest struct {
	Phase    string `json:"phase"`
	OpensAt  string `json:"opens_at"`
	ClosesAt string `json:"closes_at"`
}

func (r openRegistrationRequest) Validate() error {
	if r.Phase == "" || !ids.Valid(r.Phase) {
		return errf("phase must be the registered phase's id: 1-128 printable ASCII characters without spaces, braces or |")
	}
	o, err1 := time.Parse(time.RFC3339, r.OpensAt)
	cl, err2 := time.Parse(time.RFC3339, r.ClosesAt)
	if err1 != nil || err2 != nil {
		return errf("opens_at and closes_at must be RFC 3339 (e.g. 2026-01-02T12:00:00Z)")
	}
	if !cl.After(o) {
		return errf("closes_at must be after opens_at")
	}
	return nil
}

// openRegistration: PUT /api/admin/events/{id}/registration (operator)
// {phase, opens_at, closes_at}: the window, changeable until the draw
// (the draw's commitment stays). 200 the window. Errors: 400
// invalid_body, 404 event_not_found, 409 registration_drawn.
func (s *Server) openRegistration(c *gin.Context) {
	id, req, ok := adminEventRequest[openRegistrationRequest](c)
	if !ok {
		return
	}
	o, _ := time.Parse(time.RFC3339, req.OpensAt)
	cl, _ := time.Parse(time.RFC3339, req.ClosesAt)
	w, err := s.Ledger.OpenRegistration(c.Request.Context(), id, req.Phase, o, cl, principal(c).Account)
	if err != nil {
		registrationErr(c, err)
		return
	}
	if !s.audit(c, operators.ActionRegistrationOpen, id, "", nil, gin.H{"phase": w.Phase,
		"opens_at": w.OpensAt, "closes_at": w.ClosesAt, "commit": w.Commit}) {
		return
	}
	if !s.publishFacts(c, w.OpenedFact()) {
		return
	}
	c.JSON(http.StatusOK, w)
}

type drawRequest struct {
	Method string `json:"method"`
	Count  int    `json:"count"`
}

func (r drawRequest) Validate() error {
	if r.Method != ledger.SelectDraw && r.Method != ledger.SelectFirstCome {
		return errf(`method must be "draw" or "first_come"`)
	}
	if r.Count < 1 || r.Count > 10_000_000 {
		return errf("count must be from 1 to 10000000")
	}
	return nil
}

// drawSelection: POST /api/admin/events/{id}/registration/draw
// (operator) {method, count}: selects count registrants once the window
// closed, by the draw (revealing its seed) or first come, and lets them
// join the registered phase. A repeat answers the draw as made. 200 the
// window with the seed. Errors: 400 invalid_body, 404 event_not_found,
// registration_not_found, 409 registration_open.
func (s *Server) drawSelection(c *gin.Context) {
	id, req, ok := adminEventRequest[drawRequest](c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	if _, err := s.Ledger.Event(ctx, id); err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return
	}
	w, err := s.Ledger.Draw(ctx, id, req.Method, req.Count, principal(c).Account, func(ctx context.Context, sel []string) error {
		return s.Store.MarkSelected(ctx, id, sel)
	})
	if err != nil {
		registrationErr(c, err)
		return
	}
	if !w.Fresh {
		noChange(c) // a repeat: the draw as made (its fact again, same id)
	} else if !s.audit(c, operators.ActionSelectionDraw, id, "", nil, gin.H{"method": w.Method, "selected": w.Selected,
		"registered": w.Registered, "seed": w.Seed}) {
		return
	}
	if !s.publishFacts(c, w.DrawnFact()) {
		return
	}
	c.JSON(http.StatusOK, w)
}

// registrationWindow: GET /api/events/{id}/registration (public): the
// window, the draw's commitment, and once drawn its seed and counts. 404
// registration_not_found.
func (s *Server) registrationWindow(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	w, err := s.Ledger.Registration(c.Request.Context(), id)
	if err != nil {
		registrationErr(c, err)
		return
	}
	c.JSON(http.StatusOK, w)
}

// registrationAnswer is a fan's registration as they see it.
type registrationAnswer struct {
	EventID string `json:"event_id"`
	// State: none (the event has no registration), not_registered,
	// registered (the draw is to come), selected or not_selected.
	State        string    `json:"state"`
	RegisteredAt time.Time `json:"registered_at,omitzero"`
	// Window is the event's registration (GET /me only).
	Window *ledger.RegistrationWindow `json:"window,omitempty"`
}

func answerOf(eventID string, r ledger.Registrant) registrationAnswer {
	a := registrationAnswer{EventID: eventID, State: "registered", RegisteredAt: r.At}
	if r.Selected != nil {
		a.State = "not_selected"
		if *r.Selected {
			a.State = "selected"
		}
	}
	return a
}

// register: POST /api/events/{id}/registration (fan): registers the
// caller while the window is open; a repeat answers the registration as
// it is. 201 (or 200 for a repeat) {event_id, state, registered_at}.
// Errors: 404 event_not_found, registration_not_found, 409
// registration_closed, 429 rate_limited.
func (s *Server) register(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	if !s.limitRequest(c, id) {
		return
	}
	user := httpapi.Identity(c).UserID
	r, created, err := s.Ledger.Register(c.Request.Context(), id, user)
	if err != nil {
		registrationErr(c, err)
		return
	}
	if r.Selected == nil && !s.publishFacts(c, r.Fact()) {
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, answerOf(id, r))
}

// registrationState: GET /api/events/{id}/registration/me (fan): the
// caller's registration, none when the event has no registration (the
// page asks on every event), else not_registered, registered, selected
// or not_selected, with the window.
func (s *Server) registrationState(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	ctx := c.Request.Context()
	w, err := s.Ledger.Registration(ctx, id)
	if errors.Is(err, ledger.ErrNoRegistration) {
		c.JSON(http.StatusOK, registrationAnswer{EventID: id, State: "none"})
		return
	}
	if err != nil {
		registrationErr(c, err)
		return
	}
	a := registrationAnswer{EventID: id, State: "not_registered"}
	r, err := s.Ledger.Registrant(ctx, id, httpapi.Identity(c).UserID)
	switch {
	case err == nil:
		a = answerOf(id, r)
	case !errors.Is(err, ledger.ErrNoRegistration):
		bookinghttp.Fail(c, err)
		return
	}
	a.Window = &w
	c.JSON(http.StatusOK, a)
}
