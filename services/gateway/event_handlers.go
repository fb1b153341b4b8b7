package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// eventView is an event as the API shows it: the engine's fields plus the
// windows in seconds and the price per seat.
type eventView struct {
	booking.Event
	HoldSeconds    float64 `json:"hold_seconds"`
	GraceSeconds   float64 `json:"grace_seconds"`
	AbandonSeconds float64 `json:"abandon_seconds"`
	// EarlyJoinSeconds is how long before sales_start the pre-queue opens.
	EarlyJoinSeconds float64 `json:"early_join_seconds"`
	// PriceCents is the lowest price of a seat (every seat's price when
	// the event has one section); the event's price_min_cents,
	// price_max_cents and sections give the range.
	PriceCents int64 `json:"price_cents,omitempty"`
	// ProviderDegraded: the payment provider is declared degraded
	// (provider.go): hold clocks stopped, admissions paused.
	ProviderDegraded bool `json:"provider_degraded,omitempty"`
	// ProviderOutageEnded: the hold clocks restarted because the outage
	// lasted longer than PROVIDER_OUTAGE_MAX, not because the provider
	// recovered: unpaid holds are released when their time runs out.
	ProviderOutageEnded bool `json:"provider_outage_ended,omitempty"`
	// Schedule is the public part of the event's scheduled phases (none:
	// omitted): each phase's id, name, window and audience, in order.
	Schedule []publicPhase `json:"schedule,omitempty"`
}

// publicPhase is what a fan may see of a scheduled phase: no price
// overrides or settings.
type publicPhase struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	StartsAt time.Time `json:"starts_at"`
	EndsAt   time.Time `json:"ends_at"`
	Audience string    `json:"audience"`
	// a later phase's own pre-queue: how long before its start it opens
	// and the commitment to its draw's seed (GET /api/events/{id}/draw?phase=)
	EarlyJoinSeconds int    `json:"early_join_seconds,omitempty"`
	DrawCommit       string `json:"draw_commit,omitempty"`
}

// publicSchedule is the public part of sch's phases; commits are the
// later phases' draw commitments (booking.Store.PhaseCommits).
func publicSchedule(sch booking.Schedule, commits map[string]string) []publicPhase {
	var out []publicPhase
	for _, p := range sch.Phases {
		pp := publicPhase{ID: p.ID, Name: p.Name, StartsAt: p.StartsAt.UTC(), EndsAt: p.EndsAt.UTC(), Audience: p.Audience}
		if c := commits[p.ID]; c != "" && p.EarlyJoinSeconds != nil {
			pp.EarlyJoinSeconds, pp.DrawCommit = *p.EarlyJoinSeconds, c
		}
		out = append(out, pp)
	}
	return out
}

func viewOf(e booking.Event) eventView {
	return eventView{Event: e, HoldSeconds: e.Hold.Seconds(), GraceSeconds: e.Grace.Seconds(), AbandonSeconds: e.Abandon.Seconds(),
		EarlyJoinSeconds: e.EarlyJoin.Seconds(), ProviderDegraded: !e.HoldsPausedSince.IsZero(),
		ProviderOutageEnded: !e.ProviderOutageEnded.IsZero()}
}

// priced fills in the prices of an event created before sections (no
// currency stored: every seat at TICKET_PRICE_CENTS in TICKET_CURRENCY)
// and sets PriceCents to the lowest price ("from").
func (s *Server) priced(v eventView) eventView {
	if v.Currency == "" {
		v.Currency = s.currency()
		v.Sections = append([]booking.EventSection(nil), v.Sections...)
		for i := range v.Sections {
			v.Sections[i].PriceCents = s.TicketPrice
		}
		v.PriceMinCents, v.PriceMaxCents = s.TicketPrice, s.TicketPrice
	}
	v.PriceCents = v.PriceMinCents
	return v
}

// orderPrice is an order's amount and currency: the engine's (the sum of
// the seats' section prices), or for an event created before sections
// TICKET_PRICE_CENTS per seat in TICKET_CURRENCY.
func (s *Server) orderPrice(amount int64, currency string, seats int) (int64, string) {
	if currency == "" {
		return s.TicketPrice * int64(seats), s.currency()
	}
	return amount, currency
}

// currency is TICKET_CURRENCY, or the engine's default.
func (s *Server) currency() string {
	if s.Currency == "" {
		return booking.DefaultCurrency
	}
	return s.Currency
}

// getEvent: GET /api/events/{id} (live counts).
func (s *Server) getEvent(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	e, err := s.Store.GetEvent(c.Request.Context(), id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	v := s.priced(viewOf(e))
	v.Schedule = s.publicSchedule(c, id)
	c.JSON(http.StatusOK, v)
}

// scheduleMaxAge is how long a gateway serves an event's public schedule
// before reading the ledger again: every fan opening the page reads the
// event, so the ledger sees one read per event and interval, not one per
// fan. A schedule changes rarely, and the page marks the phase on now
// from the times.
const scheduleMaxAge = 2 * time.Second

// publicSchedule is the public part of event id's phase schedule (nil
// without a ledger or a schedule). The schedule is an addition to the
// event's live counts, which come from Redis: a ledger that does not
// answer leaves it out (and logs why) rather than failing the page.
func (s *Server) publicSchedule(c *gin.Context, id string) []publicPhase {
	if s.Ledger == nil {
		return nil
	}
	snap, err := s.schedules.get(c.Request.Context(), id, scheduleMaxAge, func(ctx context.Context, _ *snapshot[[]publicPhase]) (*snapshot[[]publicPhase], error) {
		sch, err := s.Ledger.Schedule(ctx, id)
		if err != nil {
			return nil, err
		}
		commits, err := s.Store.PhaseCommits(ctx, id)
		if err != nil {
			return nil, err
		}
		return &snapshot[[]publicPhase]{at: time.Now(), v: publicSchedule(sch, commits)}, nil
	})
	if err != nil {
		httpapi.Logger(c).Warn("event schedule left out of the event document", zap.String("event_id", id), zap.Error(err))
		return nil
	}
	return snap.v
}

// devTokenRequest is the body of POST /api/auth/dev-token.
type devTokenRequest struct {
	UserID string `json:"user_id"`
	Role   string `json:"role"`
}

func (r devTokenRequest) Validate() error {
	if !ids.Valid(r.UserID) {
		return errf("user_id must be 1-128 printable characters without spaces, braces or '|'")
	}
	if r.Role != "" && r.Role != "user" && r.Role != auth.RoleAdmin {
		return errf(`role must be "", "user" or "admin"`)
	}
	return nil
}

// devToken: POST /api/auth/dev-token — only registered when DEV_TOKENS is on.
func (s *Server) devToken(c *gin.Context) {
	var req devTokenRequest
	if !httpapi.Bind(c, &req) {
		return
	}
	ttl := s.DevTokenTTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	tok, err := s.Auth.Issue(req.UserID, req.Role, ttl)
	if err != nil {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
		return
	}
	c.JSON(http.StatusOK, gin.H{"token": tok, "user_id": req.UserID, "role": req.Role,
		"expires_at": time.Now().Add(ttl).UTC().Format(time.RFC3339)})
}

// maxWindowSeconds bounds every duration given in seconds (a day,
// booking.MaxWindow).
const maxWindowSeconds = float64(booking.MaxWindow / time.Second)

// seconds reads a duration given in seconds, from least to
// maxWindowSeconds (0 when absent).
func seconds(field string, v *float64, least float64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if math.IsNaN(*v) || *v < least || *v > maxWindowSeconds {
		return 0, fmt.Errorf("%s must be from %v to %d", field, least, int(maxWindowSeconds))
	}
	return time.Duration(*v * float64(time.Second)), nil
}

// checkCounts checks the whole-number settings of a creation against
// their bounds (0: the default, where one exists), each named, before
// anything is written.
func (r createEventRequest) checkCounts() error {
	for _, f := range []struct {
		name string
		v    int64
		max  int64
	}{
		{"rows", int64(r.Rows), booking.MaxSeats}, {"seats_per_row", int64(r.SeatsPerRow), booking.MaxSeats},
		{"capacity", int64(r.Capacity), booking.MaxCapacity}, {"batch_size", int64(r.BatchSize), booking.MaxBatchSize},
		{"max_seats_per_order", int64(r.MaxSeatsPerOrder), booking.MaxSeatsPerOrderLimit},
		{"admit_per_minute", int64(r.AdmitPerMinute), booking.MaxAdmitPerMinute},
	} {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("%s must be from 0 to %d", f.name, f.max)
		}
	}
	if r.PriceCents != nil && (*r.PriceCents < 0 || *r.PriceCents > booking.MaxPriceCents) {
		return fmt.Errorf("price_cents must be from 0 to %d", booking.MaxPriceCents)
	}
	for i, sec := range r.Sections {
		if sec.Rows < 0 || sec.Rows > booking.MaxSeats || sec.SeatsPerRow < 0 || sec.SeatsPerRow > booking.MaxSeats {
			return fmt.Errorf("sections[%d]: rows and seats_per_row must be from 0 to %d", i, booking.MaxSeats)
		}
	}
	return nil
}

// createEventRequest is the body of POST /api/admin/events.
type createEventRequest struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	Rows           int      `json:"rows"`
	SeatsPerRow    int      `json:"seats_per_row"`
	Seats          []string `json:"seats"`
	Capacity       int      `json:"capacity"`
	HoldSeconds    *float64 `json:"hold_seconds"`
	GraceSeconds   *float64 `json:"grace_seconds"`
	SalesStart     string   `json:"sales_start"`
	SalesEnd       string   `json:"sales_end"`
	BatchSize      int      `json:"batch_size"`
	AbandonSeconds *float64 `json:"abandon_seconds"`
	// Priced sections instead of rows/seats_per_row or seats,
	// the price of the old forms (default TICKET_PRICE_CENTS), the
	// currency (default TICKET_CURRENCY) and the seats one order may hold.
	Sections         []booking.Section `json:"sections"`
	PriceCents       *int64            `json:"price_cents"`
	Currency         string            `json:"currency"`
	MaxSeatsPerOrder int               `json:"max_seats_per_order"`
	// AdmitPerMinute is the rate cap (0 = none).
	AdmitPerMinute int `json:"admit_per_minute"`
	// EarlyJoinSeconds opens the pre-queue before sales_start (0 = none).
	EarlyJoinSeconds *float64 `json:"early_join_seconds"`
	// Challenge "pow" asks every join for a solved proof-of-work
	// challenge (challenge.go); "none" or absent: no challenge.
	Challenge string `json:"challenge"`
	// NoOrphanRule (default true) refuses a manual selection that leaves
	// a single free seat in a row while another choice fits
	// (best_available.go).
	NoOrphanRule *bool `json:"no_orphan_rule"`
	// FinishAfterEnd (default true): users in the room at sales_end
	// finish within their hold; false: their holds end with the sale.
	FinishAfterEnd *bool `json:"finish_after_end"`
	// RefundableUntil (RFC 3339): until when a fan may cancel their own
	// order; absent: fans cannot.
	RefundableUntil string `json:"refundable_until"`
	// OnPhaseChange: what a scheduled phase's end does to the fans
	// waiting, "keep" (default) or "leave".
	OnPhaseChange *string `json:"on_phase_change"`
}

// checkPhaseChangeSetting checks a given on_phase_change: "keep" or
// "leave" (absent is keep; given empty is refused, as the document does).
func checkPhaseChangeSetting(v string) error {
	if v != booking.PhaseChangeKeep && v != booking.PhaseChangeLeave {
		return errf(`on_phase_change must be "keep" or "leave"`)
	}
	return nil
}

func (r createEventRequest) config() (booking.EventConfig, error) {
	cfg := booking.EventConfig{ID: r.ID, Name: r.Name, Seats: r.Seats, Capacity: r.Capacity, BatchSize: r.BatchSize,
		Sections: r.Sections, Currency: r.Currency, MaxSeatsPerOrder: r.MaxSeatsPerOrder,
		AdmitPerMinute: r.AdmitPerMinute, Challenge: r.Challenge, NoOrphanRule: r.NoOrphanRule == nil || *r.NoOrphanRule}
	if r.OnPhaseChange != nil {
		if err := checkPhaseChangeSetting(*r.OnPhaseChange); err != nil {
			return cfg, err
		}
		cfg.OnPhaseChange = *r.OnPhaseChange
	}
	if r.PriceCents != nil {
		cfg.PriceCents = *r.PriceCents
	}
	if r.ID == "" {
		return cfg, errf("id is required")
	}
	if err := checkChallengeSetting(r.Challenge); err != nil {
		return cfg, err
	}
	if len(r.Name) > booking.MaxNameLen {
		return cfg, fmt.Errorf("name must be at most %d bytes", booking.MaxNameLen)
	}
	if err := r.checkCounts(); err != nil {
		return cfg, err
	}
	if len(r.Sections) > 0 {
		if len(r.Seats) > 0 || r.Rows > 0 || r.SeatsPerRow > 0 || r.PriceCents != nil {
			return cfg, errf(`give either "sections" or "rows"/"seats_per_row" or "seats" (with "price_cents"), not both`)
		}
	} else if len(r.Seats) == 0 && (r.Rows == 0 || r.SeatsPerRow == 0) {
		return cfg, errf(`give a seat map: "sections", "rows" and "seats_per_row", or "seats"`)
	}
	if len(r.Seats) > 0 && (r.Rows > 0 || r.SeatsPerRow > 0) {
		return cfg, errf(`give either "rows"/"seats_per_row" or "seats", not both`)
	}
	if r.Rows*r.SeatsPerRow > booking.MaxSeats {
		return cfg, fmt.Errorf("rows × seats_per_row must be at most %d seats", booking.MaxSeats)
	}
	cfg.Rows, cfg.SeatsPerRow = r.Rows, r.SeatsPerRow
	var err error
	// a hold of 0 s is refused, not read as the default (leave it out);
	// grace 0 is the default, as documented
	if cfg.Hold, err = seconds("hold_seconds", r.HoldSeconds, 1); err != nil {
		return cfg, err
	}
	if cfg.Grace, err = seconds("grace_seconds", r.GraceSeconds, 0); err != nil {
		return cfg, err
	}
	if cfg.Abandon, err = seconds("abandon_seconds", r.AbandonSeconds, 0); err != nil {
		return cfg, err
	}
	if cfg.EarlyJoin, err = seconds("early_join_seconds", r.EarlyJoinSeconds, 0); err != nil {
		return cfg, err
	}
	if r.SalesStart != "" {
		if cfg.SalesStart, err = time.Parse(time.RFC3339, r.SalesStart); err != nil {
			return cfg, errf("sales_start must be RFC 3339, e.g. 2026-01-02T12:00:00Z")
		}
	}
	if r.SalesEnd != "" {
		if cfg.SalesEnd, err = time.Parse(time.RFC3339, r.SalesEnd); err != nil {
			return cfg, errf("sales_end must be RFC 3339, e.g. 2026-01-02T18:00:00Z")
		}
	}
	cfg.HoldsEndWithSale = r.FinishAfterEnd != nil && !*r.FinishAfterEnd
	if r.RefundableUntil != "" {
		if cfg.RefundableUntil, err = time.Parse(time.RFC3339, r.RefundableUntil); err != nil {
			return cfg, errf("refundable_until must be RFC 3339, e.g. 2026-01-09T18:00:00Z")
		}
		if err := (booking.EventUpdate{RefundableUntil: &cfg.RefundableUntil}).Validate(); err != nil {
			return cfg, errf("refundable_until must be after 1970-01-01T00:00:00Z")
		}
	}
	return cfg, nil
}

// adminMaxBody lets explicit seat maps through (200k ids).
const adminMaxBody = 8 << 20

// createEvent: POST /api/admin/events.
func (s *Server) createEvent(c *gin.Context) {
	var req createEventRequest
	if !httpapi.BindStrict(c, &req, adminMaxBody) {
		return
	}
	cfg, err := req.config()
	if err != nil {
		httpapi.Abort(c, http.StatusBadRequest, "invalid_event", err.Error())
		return
	}
	if len(cfg.Sections) == 0 && req.PriceCents == nil {
		cfg.PriceCents = s.TicketPrice
	}
	if cfg.Currency == "" {
		cfg.Currency = s.currency()
	}
	ctx := c.Request.Context()
	// PostgreSQL first: once the definition is there, the safety net
	// creates the Redis state even if the next step fails.
	created, ok := s.ledgerCreateEvent(c, cfg)
	if !ok {
		return
	}
	e, err := s.Store.CreateEvent(ctx, cfg)
	if errors.Is(err, booking.ErrEventExists) && created {
		// the safety net restored it from the ledger between the two writes
		e, err = s.Store.GetEvent(ctx, cfg.ID)
	}
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if !s.ledgerDrawSeeds(c, cfg.ID) {
		return
	}
	if !s.publishEventCreated(c, cfg, e.DrawCommit) {
		return
	}
	after, ok := s.ledgerSettings(c, cfg.ID)
	if !ok {
		after = eventAudit(cfg, false)
	}
	if !s.audit(c, operators.ActionEventCreate, cfg.ID, "", nil, after) {
		return
	}
	c.JSON(http.StatusCreated, s.priced(viewOf(e)))
}

// updateEventRequest is the body of PATCH /api/admin/events/{id}: any
// setting but the seat map (booking.EventUpdate).
type updateEventRequest struct {
	Paused         *bool    `json:"paused"`
	Capacity       *int     `json:"capacity"`
	HoldSeconds    *float64 `json:"hold_seconds"`
	AbandonSeconds *float64 `json:"abandon_seconds"`
	Name           *string  `json:"name"`
	GraceSeconds   *float64 `json:"grace_seconds"`
	BatchSize      *int     `json:"batch_size"`
	// SalesStart and SalesEnd: RFC 3339, or "" to clear.
	SalesStart *string `json:"sales_start"`
	SalesEnd   *string `json:"sales_end"`
	// MaxSeatsPerOrder (1-10) applies to selections made after the change.
	MaxSeatsPerOrder *int `json:"max_seats_per_order"`
	// AdmitPerMinute changes the rate cap (0 = off) at once.
	AdmitPerMinute *int `json:"admit_per_minute"`
	// EarlyJoinSeconds changes the pre-queue's opening for joins from now
	// on (booking.EventUpdate.EarlyJoin).
	EarlyJoinSeconds *float64 `json:"early_join_seconds"`
	// Challenge switches the join challenge: "pow" or "none".
	Challenge *string `json:"challenge"`
	// NoOrphanRule switches the no-orphan rule for manual selections.
	NoOrphanRule *bool `json:"no_orphan_rule"`
	// FinishAfterEnd: whether users in the room at sales_end finish
	// within their hold. RefundableUntil: RFC 3339, or "" for none.
	FinishAfterEnd  *bool   `json:"finish_after_end"`
	RefundableUntil *string `json:"refundable_until"`
	// OnPhaseChange: what a scheduled phase's end does to the fans
	// waiting from the next end on, "keep" or "leave".
	OnPhaseChange *string `json:"on_phase_change"`
}

// updateEvent: PATCH /api/admin/events/{id}. After a resume or a capacity
// change a slot-released message (confirmed) promotes at once.
func (s *Server) updateEvent(c *gin.Context) {
	id := c.Param("id")
	var req updateEventRequest
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	u := booking.EventUpdate{Paused: req.Paused, Capacity: req.Capacity, Name: req.Name, BatchSize: req.BatchSize,
		MaxSeatsPerOrder: req.MaxSeatsPerOrder, AdmitPerMinute: req.AdmitPerMinute, Challenge: req.Challenge,
		NoOrphanRule: req.NoOrphanRule, FinishAfterEnd: req.FinishAfterEnd, OnPhaseChange: req.OnPhaseChange}
	if !req.more(&u, c) {
		return
	}
	if req.Paused == nil && req.Capacity == nil && req.HoldSeconds == nil && req.AbandonSeconds == nil &&
		req.Name == nil && req.GraceSeconds == nil && req.BatchSize == nil && req.SalesStart == nil && req.SalesEnd == nil &&
		req.MaxSeatsPerOrder == nil && req.AdmitPerMinute == nil && req.EarlyJoinSeconds == nil && req.Challenge == nil &&
		req.NoOrphanRule == nil && req.FinishAfterEnd == nil && req.RefundableUntil == nil && req.OnPhaseChange == nil {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument,
			`nothing to change: give any of "paused", "capacity", "hold_seconds", "abandon_seconds", "name", "grace_seconds", "batch_size", "sales_start", "sales_end", "max_seats_per_order", "admit_per_minute", "early_join_seconds", "challenge", "no_orphan_rule", "finish_after_end", "refundable_until", "on_phase_change"`)
		return
	}
	if req.Challenge != nil {
		if err := checkChallengeSetting(*req.Challenge); err != nil {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
			return
		}
	}
	if req.OnPhaseChange != nil {
		if err := checkPhaseChangeSetting(*req.OnPhaseChange); err != nil {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
			return
		}
	}
	for _, f := range []struct {
		name  string
		v     *float64
		least float64
		dst   **time.Duration
	}{{"hold_seconds", req.HoldSeconds, 1, &u.Hold}, {"abandon_seconds", req.AbandonSeconds, 0, &u.Abandon},
		{"grace_seconds", req.GraceSeconds, 1, &u.Grace}, {"early_join_seconds", req.EarlyJoinSeconds, 0, &u.EarlyJoin}} {
		if f.v == nil {
			continue
		}
		d, err := seconds(f.name, f.v, f.least)
		if err != nil {
			httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, err.Error())
			return
		}
		*f.dst = &d
	}
	// every bound before the ledger's statement (int4 columns, text
	// without NUL) and Redis: a 400 here, never a failed write
	if err := u.Validate(); err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	ctx := c.Request.Context()
	before, _ := s.ledgerSettings(c, id) // for the audit record
	var e booking.Event
	if !s.ledgerUpdateEvent(c, id, u, func(ctx context.Context, rev int64) (err error) {
		u.Revision = rev
		e, err = s.Store.UpdateEvent(ctx, id, u)
		return err
	}) {
		return
	}
	if req.EarlyJoinSeconds != nil && !s.ledgerDrawSeeds(c, id) {
		return
	}
	if req.Challenge != nil {
		s.forgetChallenge(id)
	}
	if (req.Paused != nil && !*req.Paused) || req.Capacity != nil || req.AdmitPerMinute != nil {
		if err := s.Announcer.ReleaseSlot(ctx, id, messages.ReasonCapacity, ""); err != nil {
			bookinghttp.Fail(c, err)
			return
		}
	}
	if !s.publishEventUpdated(c, id) {
		return
	}
	after, _ := s.ledgerSettings(c, id)
	if !s.audit(c, operators.ActionEventUpdate, id, "", only(before, req.fields()), only(after, req.fields())) {
		return
	}
	c.JSON(http.StatusOK, viewOf(e))
}
