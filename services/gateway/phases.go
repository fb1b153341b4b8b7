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
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// Scheduled phases (docs/http-api.md "Phases"): an operator saves an
// event's phases with PUT /api/admin/events/{id}/phases; every gateway
// applies them (applySchedules, each ScheduleInterval) at Redis's clock
// through the path of the manual switch: a ledger row, the facts, the
// audit trail. Of several gateways applying one boundary, one records it
// (ledger.Ledger.ApplyPhase holds the event's row; apply_schedule.lua
// changes a slot once).

// ScheduleInterval is how often a gateway applies the schedules: a phase
// starts within it of its starts_at.
const ScheduleInterval = time.Second

// phaseRequest is a phase change: the phase from now on ("" none) and
// who may join in it.
type phaseRequest struct {
	Phase    string `json:"phase"`
	Audience string `json:"audience"`
}

func (r phaseRequest) Validate() error {
	if err := booking.CheckPhase(booking.PhaseState(r)); err != nil {
		return errf(`phase must be "" or a phase id (1-128 printable ASCII characters without spaces, braces or |), audience "public", "code" or "registered"`)
	}
	return nil
}

// setPhase: PUT /api/admin/events/{id}/phase (operator) {phase,
// audience}: the sale's current phase, live. Codes of that phase (and of
// every phase) open it; with audience code a join needs one. Users
// waiting or in the room keep their place and hold. 200 {changed,
// change_id, phase, audience, previous_phase}: changed false for a
// repeat, which records nothing. Recorded in the ledger, audited
// (phase.set) and published (phase_ended, phase_started). Errors: 400
// invalid_body, 404 event_not_found.
func (s *Server) setPhase(c *gin.Context) {
	id, req, ok := adminEventRequest[phaseRequest](c)
	if !ok {
		return
	}
	p := booking.PhaseState(req)
	ctx := c.Request.Context()
	var prev booking.PhaseState
	res, err := s.Ledger.SetPhase(ctx, id, p, principal(c).Account, func(ctx context.Context) (booking.PhaseState, bool, error) {
		var changed bool
		var err error
		prev, changed, err = s.Store.SetPhase(ctx, id, p)
		return prev, changed, err
	})
	if err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return
	}
	out := gin.H{"changed": res.ID != 0, "change_id": res.ID, "phase": p.Phase, "audience": p.Audience, "previous_phase": prev.Phase}
	if res.ID == 0 {
		noChange(c)
		c.JSON(http.StatusOK, out)
		return
	}
	if !s.audit(c, operators.ActionPhaseSet, id, "", gin.H{"phase": prev.Phase, "audience": prev.Audience},
		gin.H{"phase": p.Phase, "audience": p.Audience, "change_id": res.ID}) {
		return
	}
	if s.Kafka != nil {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := s.phasePublisher().Publish(pctx, res); err != nil {
			httpapi.Logger(c).Warn("phase facts left to the sweep", zap.Int64("change_id", res.ID), zap.Error(err))
		}
	}
	c.JSON(http.StatusOK, out)
}

// phases: GET /api/admin/events/{id}/phases (viewer): the event's phase
// changes, oldest first (the last is the current phase), and its schedule
// (setSchedule). 404 event_not_found.
func (s *Server) phases(c *gin.Context) {
	id, ps, ok := ledgerList(s, c, s.Ledger.Phases)
	if !ok {
		return
	}
	sch, err := s.Ledger.Schedule(c.Request.Context(), id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"event_id": id, "changes": ps, "schedule": sch})
}

// phasePublisher publishes the facts of phase changes (and, run by main,
// sweeps what a crash or a Kafka outage left).
func (s *Server) phasePublisher() *ledger.PhasePublisher {
	return &ledger.PhasePublisher{Ledger: s.Ledger, Kafka: s.Kafka, Log: s.Log}
}

// setSchedule: PUT /api/admin/events/{id}/phases (operator)
// {on_phase_change, phases: [{id, name, starts_at, ends_at, audience,
// prices, admit_per_minute, hold_seconds, order_limit,
// early_join_seconds}]}: the event's schedule, replacing the one before
// ([] removes it). 200 the schedule as saved, applied at once when a
// phase is current; on_phase_change given publishes event_updated as
// PATCH /api/admin/events/{id} does. Errors: 400 invalid_body and each rule's code
// (booking.ScheduleError: invalid_phase, duplicate_phase,
// phases_out_of_order, phases_overlap, phase_outside_sales,
// phase_unknown_section, invalid_on_phase_change), 404 event_not_found;
// nothing changed.
func (s *Server) setSchedule(c *gin.Context) {
	id, req, ok := adminEventRequest[booking.Schedule](c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	before, err := s.Ledger.Schedule(ctx, id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	saved, err := s.Ledger.SetSchedule(ctx, id, req, principal(c).Account,
		func(ctx context.Context, def booking.EventConfig, sch booking.Schedule, rev int64) error {
			return s.Store.SetSchedule(ctx, def, sch, rev)
		})
	if se, ok := booking.IsScheduleError(err); ok {
		httpapi.Abort(c, http.StatusBadRequest, se.Code, se.Msg)
		return
	}
	if err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return
	}
	// a later phase's pre-queue has a seed now (a repeat records it if
	// this fails)
	if !s.ledgerDrawSeeds(c, id) {
		return
	}
	if saved.Phases == nil {
		saved.Phases = []booking.Phase{}
	}
	// the setting given is a settings change as PATCH's: its
	// event_updated (the last change again when it changed nothing)
	if req.OnPhaseChange != "" && !s.publishEventUpdated(c, id) {
		return
	}
	if !s.audit(c, operators.ActionPhaseSchedule, id, "", before, saved) {
		return
	}
	// the phase current now, at once rather than at the next tick
	if _, err := s.applySchedule(context.WithoutCancel(ctx), id); err != nil {
		httpapi.Logger(c).Warn("schedule saved, its current phase left to the next tick", zap.Error(err))
	}
	c.JSON(http.StatusOK, gin.H{"event_id": id, "schedule": saved})
}

// leaveQueue takes the users waiting since a phase that ended out of the
// queue (on_phase_change leave), booking.LeaveStep per call, while more
// is true; a gateway that stops halfway leaves the rest to the next
// tick's (any gateway's) check.
func (s *Server) leaveQueue(ctx context.Context, id string, more bool) error {
	for more {
		var err error
		if more, err = s.Store.LeaveQueue(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// applySchedules applies every scheduled event's schedule (main runs it
// each ScheduleInterval); it returns how many phase changes it recorded.
func (s *Server) applySchedules(ctx context.Context) (int, error) {
	if s.Ledger == nil {
		return 0, nil
	}
	evs, err := s.Ledger.ScheduledEvents(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, id := range evs {
		changed, err := s.applySchedule(ctx, id)
		if changed {
			n++
		}
		if err != nil && !errors.Is(err, booking.ErrEventNotFound) {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// applySchedule makes current the phase the event's schedule says at
// Redis's clock, when a boundary passed: recorded in the ledger (once,
// whichever gateways race), audited (phase.set by schedule) and
// published. true when this call recorded a change.
func (s *Server) applySchedule(ctx context.Context, id string) (bool, error) {
	st, err := s.Store.ApplySchedule(ctx, id, false)
	if err != nil {
		return false, err
	}
	if !st.Due {
		return false, s.leaveQueue(ctx, id, st.Leaving)
	}
	var step booking.ScheduleStep
	res, err := s.Ledger.ApplyPhase(ctx, id, ledger.ScheduleActor,
		func(ctx context.Context) (booking.PhaseState, booking.PhaseState, bool, error) {
			var err error
			step, err = s.Store.ApplySchedule(ctx, id, true)
			return step.Previous, step.Next, step.Changed, err
		})
	if err == nil {
		err = s.leaveQueue(ctx, id, step.Leaving)
	}
	if err != nil || res.ID == 0 {
		return false, err
	}
	if s.Operators != nil {
		rec, err := s.Operators.Record(ctx, operators.Action{Actor: ledger.ScheduleActor, Via: operators.ViaSystem,
			Role: operators.Operator, Action: operators.ActionPhaseSet, EventID: id,
			Before: operators.Object(step.Previous),
			After:  operators.Object(gin.H{"phase": step.Next.Phase, "audience": step.Next.Audience, "change_id": res.ID, "slot": step.Slot})})
		if err != nil {
			s.Log.Error("scheduled phase change not audited", zap.String("event_id", id), zap.Int64("change_id", res.ID), zap.Error(err))
		} else if s.AuditPublisher != nil {
			if err := s.AuditPublisher.Publish(ctx, rec.ID); err != nil {
				s.Log.Warn("operator_action left to the sweep", zap.Int64("id", rec.ID), zap.Error(err))
			}
		}
	}
	if s.Kafka != nil {
		if err := s.phasePublisher().Publish(ctx, res); err != nil {
			s.Log.Warn("phase facts left to the sweep", zap.Int64("change_id", res.ID), zap.Error(err))
		}
	}
	s.Log.Info("scheduled phase started", zap.String("event_id", id), zap.String("phase", res.Phase),
		zap.String("audience", res.Audience), zap.String("previous_phase", res.Previous))
	return true, nil
}
