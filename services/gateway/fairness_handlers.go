package main

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// The public record of a sale's fairness (docs/fairness.md): the
// pre-queue's draw and the admission log. Anonymous, cacheable reads: a
// closed draw and a full page of the log never change and are cached for
// a year; what can still grow is cached for a second.

const (
	cacheForever = "public, max-age=31536000, immutable"
	cacheOpen    = "public, max-age=1"
)

// queryInt reads a non-negative integer query parameter (absent: 0);
// false when it answered 400.
func queryInt(c *gin.Context, name string) (int64, bool) {
	v := c.Query(name)
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, name+" must be a non-negative integer")
		return 0, false
	}
	return n, true
}

// CodePhaseDrawNotFound answers /draw?phase= and a beacon for a phase
// without a pre-queue of its own.
const CodePhaseDrawNotFound = "phase_draw_not_found"

// failDraw answers err of phase's draw: 404 phase_draw_not_found for a
// phase without a pre-queue, anything else as bookinghttp.Fail.
func failDraw(c *gin.Context, phase string, err error) {
	if errors.Is(err, booking.ErrNoPhaseDraw) {
		httpapi.Abort(c, http.StatusNotFound, CodePhaseDrawNotFound, "the event has no phase "+strconv.Quote(phase)+" with a pre-queue")
		return
	}
	bookinghttp.Fail(c, err)
}

// getDraw: GET /api/events/{id}/draw?page=N[&phase=ID], the pre-queue's
// draw: its inputs and the closed list in draw order
// (fairness.BuildDraw); without phase the first phase's (listing the
// later phases with their own in phases), with it that later phase's.
// Errors: 400 invalid_argument, 404 event_not_found, 404
// phase_draw_not_found.
func (s *Server) getDraw(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	page, ok := queryInt(c, "page")
	if !ok {
		return
	}
	phase := c.Query("phase")
	if _, given := c.GetQuery("phase"); given && !ids.Valid(phase) {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, "phase must be a phase's id")
		return
	}
	d, err := fairness.BuildDraw(c.Request.Context(), s.Store, id, phase, page)
	if err != nil {
		failDraw(c, phase, err)
		return
	}
	// (the first page of the first phase's draw lists the later phases'
	// draws, which a schedule saved later may add to: never cached long)
	if d.Status == fairness.DrawDrawn && (phase != "" || page > 0) {
		c.Header("Cache-Control", cacheForever)
	} else {
		c.Header("Cache-Control", cacheOpen)
	}
	c.JSON(http.StatusOK, d)
}

// getAdmissions: GET /api/events/{id}/admissions?after=N, the admission
// log's entries after index N (0: from the first), PageSize at most
// (fairness.Log.Doc).
func (s *Server) getAdmissions(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	after, ok := queryInt(c, "after")
	if !ok {
		return
	}
	var signer fairness.HeadSigner
	if s.Pass != nil {
		signer = s.Pass
	}
	d, err := s.fair().Doc(c.Request.Context(), id, after, signer, s.Store.Clock)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if d.Full {
		c.Header("Cache-Control", cacheForever)
	} else {
		c.Header("Cache-Control", cacheOpen)
	}
	c.JSON(http.StatusOK, d)
}

// CodeInvalidBeacon is the refusal of a beacon value that is not 64
// lowercase hex characters.
const CodeInvalidBeacon = "invalid_beacon"

// maxBeaconSource bounds the beacon's name or address.
const maxBeaconSource = 256

// beaconRequest is PUT /api/admin/events/{id}/beacon: the round the draw
// is committed to, the beacon's name or address for fans, and the round's
// value once the beacon published it; Phase names a later phase's draw
// (absent: the event's own pre-queue's).
type beaconRequest struct {
	Round  int64   `json:"round"`
	Source *string `json:"source"`
	Value  string  `json:"value"`
	// Signature is the round's signature, for a beacon whose signatures
	// boxoffice checks (drand quicknet): the value is derived from it.
	Signature string `json:"signature"`
	Phase     string `json:"phase"`
}

func (r beaconRequest) Validate() error {
	if r.Round <= 0 {
		return errf("round must be a positive integer")
	}
	if r.Phase != "" && !ids.Valid(r.Phase) {
		return errf("phase must be a phase's id")
	}
	if r.Source != nil && (len(*r.Source) > maxBeaconSource || !printable(*r.Source)) {
		return errf("source must be at most 256 printable characters")
	}
	return nil
}

// checkedBeaconValue is the value to supply for round of the beacon
// source names, from the request's value and signature: for a chain
// whose signatures boxoffice checks (fairness.BeaconChain.Checks) the
// signature is required and the value derived from it (a value given too
// must be the same); for any other beacon the value as given, without a
// signature. The error says what to send instead.
func checkedBeaconValue(round int64, source, value, signature string) (string, error) {
	chain, known := fairness.BeaconChainOf(source)
	checks := known && chain.Checks()
	switch {
	case signature == "" && value != "" && checks:
		return "", fmt.Errorf("give the round's signature (the signature field of %s's /public/%d): boxoffice checks it and derives the value", chain.Name, round)
	case signature == "":
		return value, nil
	case !checks:
		return "", errors.New("a signature is checked for drand quicknet rounds only: give the round's value")
	}
	v, err := chain.RoundValue(round, signature)
	if err != nil {
		return "", err
	}
	if value != "" && value != v {
		return "", fmt.Errorf("value is not the randomness of the signature given (%s)", v)
	}
	return v, nil
}

// printable reports whether s has no control characters.
func printable(s string) bool {
	for _, c := range s {
		if c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// setBeacon: PUT /api/admin/events/{id}/beacon (operator) {round[,
// source][, value][, phase]}: commits a pre-queue's draw (the event's own,
// or phase's) to a public randomness beacon's round, before that
// pre-queue opens (409 beacon_locked after, 409 no_prequeue for an event
// without one, 404 phase_draw_not_found for a phase without one), and
// supplies the round's value (64 hex characters, 400 invalid_beacon
// otherwise) once the beacon published it; the draw waits for it
// (docs/fairness.md "The beacon"). A round of a drand chain must come
// out after the pre-queue closes (409 beacon_round_too_early, naming the
// first round that does) and may change until then; a drand quicknet
// round's value comes from its signature, which is checked against the
// chain's public key (400 invalid_beacon without it, or for another
// round's); the draw publishes the signature too. 200 {changed, phase,
// beacon_round, beacon_source, beacon[, beacon_signature][,
// beacon_round_at]}: changed false
// for a repeat, which records nothing. Kept in the ledger for a rebuild
// and audited (draw.beacon, target the phase). Errors: 400 invalid_body,
// 404 event_not_found, 409 beacon_value_set (a different value was
// supplied before).
func (s *Server) setBeacon(c *gin.Context) {
	id, req, ok := adminEventRequest[beaconRequest](c)
	if !ok {
		return
	}
	if req.Value != "" && !fairness.ValidBeacon(req.Value) {
		httpapi.Abort(c, http.StatusBadRequest, CodeInvalidBeacon, "value must be the beacon round's value: 64 lowercase hex characters")
		return
	}
	fail := func(err error) { failDraw(c, req.Phase, err) }
	ctx := c.Request.Context()
	prev, err := s.Store.Beacon(ctx, id, req.Phase)
	if err != nil {
		fail(err)
		return
	}
	source := prev.Source
	if req.Source != nil {
		source = *req.Source
	}
	req.Signature = strings.ToLower(req.Signature) // published as drand does
	if req.Value, err = checkedBeaconValue(req.Round, source, req.Value, req.Signature); err != nil {
		httpapi.Abort(c, http.StatusBadRequest, CodeInvalidBeacon, err.Error())
		return
	}
	if req.Round != prev.Round || source != prev.Source {
		if _, err := s.Store.SetBeaconRound(ctx, id, req.Phase, req.Round, source); err != nil {
			fail(err)
			return
		}
	}
	if req.Value != "" {
		if _, err := s.Store.SetBeaconValue(ctx, id, req.Phase, req.Value, req.Signature); err != nil {
			fail(err)
			return
		}
	}
	now, err := s.Store.Beacon(ctx, id, req.Phase)
	if err != nil {
		fail(err)
		return
	}
	// kept on a repeat too: a retry after the ledger failed records it
	if s.Ledger != nil {
		if err := s.Ledger.SaveBeacon(ctx, id, req.Phase, now); err != nil {
			fail(err)
			return
		}
	}
	out := gin.H{"changed": now != prev, "phase": req.Phase, "beacon_round": now.Round, "beacon_source": now.Source, "beacon": now.Value}
	if now.Signature != "" {
		out["beacon_signature"] = now.Signature
	}
	if at, ok := now.RoundTime(); ok {
		out["beacon_round_at"] = at
	}
	if now == prev {
		noChange(c)
		c.JSON(http.StatusOK, out)
		return
	}
	var before any // none before the first commitment
	if prev.Round > 0 {
		before = prev
	}
	if !s.audit(c, operators.ActionDrawBeacon, id, req.Phase, before, now) {
		return
	}
	if prev.Value == "" && now.Value != "" {
		// the draw has every input: the promotion that makes it, now
		// rather than at the safety net's next tick
		if err := s.Announcer.ReleaseSlot(ctx, id, messages.ReasonDraw, ""); err != nil {
			httpapi.Logger(c).Warn("beacon value kept; the draw is left to the safety net", zap.Error(err))
		}
	}
	c.JSON(http.StatusOK, out)
}
