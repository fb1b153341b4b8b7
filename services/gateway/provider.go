package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// An operator declares the payment provider degraded or recovered for the
// whole deployment (docs/runbook.md "Payment provider outage"): every
// event's hold clocks stop, or restart, each in one Redis step
// (booking.Store.SetProviderDegraded), recorded per event in the ledger
// (provider_outages), with a provider_degraded or provider_recovered fact
// per event and one audit record.

// providerRequest is the body of PUT /api/admin/provider.
type providerRequest struct {
	Degraded *bool `json:"degraded"`
}

// providerEvent is one event in the answer: its clocks' state after the call.
type providerEvent struct {
	EventID string `json:"event_id"`
	// Changed: this call stopped or restarted its clocks.
	Changed bool `json:"changed"`
	// Holds is the number of users in the room.
	Holds int64 `json:"holds"`
	// PausedSince is when its clocks stopped ("" while they run).
	PausedSince string `json:"paused_since,omitempty"`
	// PausedSeconds is the length of the pauses that ended, summed.
	PausedSeconds float64 `json:"paused_seconds"`
}

type providerResponse struct {
	Degraded bool            `json:"degraded"`
	Changed  int             `json:"changed"`
	Events   []providerEvent `json:"events"`
}

// setProvider: PUT /api/admin/provider. Idempotent: a repeat changes
// nothing and writes no audit record; it publishes again the
// provider_degraded fact of every paused event (the same ids), so a call
// whose publishing failed is completed by its retry.
func (s *Server) setProvider(c *gin.Context) {
	var req providerRequest
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	if req.Degraded == nil {
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, `"degraded" (true or false) is required`)
		return
	}
	degraded := *req.Degraded
	resp, err := s.declareProvider(c.Request.Context(), degraded, "operator")
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if resp.Changed == 0 {
		noChange(c)
	} else if !s.audit(c, operators.ActionProviderDeclare, "", "",
		map[string]any{"degraded": !degraded}, map[string]any{"degraded": degraded, "events_changed": resp.Changed}) {
		return
	}
	c.JSON(http.StatusOK, resp)
}

// declareProvider stops (degraded) or restarts the hold clocks of every
// event, publishes a fact per event (by: who found it) and, on recovery,
// promotes.
func (s *Server) declareProvider(ctx context.Context, degraded bool, by string) (providerResponse, error) {
	resp := providerResponse{Degraded: degraded, Events: []providerEvent{}}
	list, err := s.Store.ListEvents(ctx)
	if err != nil {
		return resp, err
	}
	var facts []events.Event
	var resumed []string
	for _, e := range list {
		st, err := s.Store.SetProviderDegraded(ctx, e.ID, degraded)
		if errors.Is(err, booking.ErrEventNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return resp, err
		}
		if err := s.recordOutage(ctx, e.ID, degraded, st, by); err != nil {
			return resp, err
		}
		resp.Events = append(resp.Events, providerEvent{EventID: e.ID, Changed: st.Changed, Holds: st.Holds,
			PausedSince: rfc3339OrEmpty(st.PausedSince), PausedSeconds: st.Paused.Seconds()})
		switch {
		case degraded:
			facts = append(facts, events.ProviderDegraded(e.ID, st.PausedSince, st.Holds, by))
		case st.Changed:
			facts = append(facts, events.ProviderRecovered(e.ID, st.Ended, st.Holds, by, st.At))
			resumed = append(resumed, e.ID)
		}
		if st.Changed {
			resp.Changed++
		}
	}
	if len(facts) > 0 {
		if err := s.Kafka.Publish(ctx, facts...); err != nil {
			return resp, err
		}
	}
	for _, id := range resumed {
		// admissions resume at once, not at the next safety-net tick
		if err := s.Announcer.ReleaseSlot(ctx, id, messages.ReasonCapacity, ""); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// recordOutage records an event's change of provider state in the ledger
// (table provider_outages) after its Redis step: a stop on every call (a
// repeat completes one whose record failed), a restart when it changed.
func (s *Server) recordOutage(ctx context.Context, eventID string, degraded bool, st booking.ProviderState, by string) error {
	switch {
	case s.Ledger == nil:
		return nil
	case degraded:
		return s.Ledger.RecordProviderDegraded(ctx, eventID, st.PausedSince, st.Holds, by)
	case st.Changed:
		return s.Ledger.RecordProviderRecovered(ctx, eventID, st.Ended, st.At, st.Holds, by)
	}
	return nil
}

// onBreaker is the payment provider breaker's change of state
// (payment.Breaker, PROVIDER_BREAKER_DECLARES): open declares the
// provider degraded (by=breaker); closed again recovers it, only when
// this process's breaker declared it, so it never ends an outage an
// operator declared. Each change is recorded in the audit trail (actor
// breaker, via system) like an operator's declaration. It runs on its own goroutine: the breaker calls it
// holding its lock.
func (s *Server) onBreaker(open bool) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !open && !s.breakerDeclared.CompareAndSwap(true, false) {
			return
		}
		resp, err := s.declareProvider(ctx, open, "breaker")
		if err != nil {
			s.Log.Error("payment provider breaker: declaration failed", zap.Bool("degraded", open), zap.Error(err))
			return
		}
		if open && resp.Changed > 0 {
			s.breakerDeclared.Store(true)
		}
		s.Log.Warn("payment provider breaker: declared", zap.Bool("degraded", open), zap.Int("events_changed", resp.Changed))
		s.recordDeclaration(ctx, "breaker", open, resp.Changed)
	}()
}

// recordDeclaration puts a declaration the system made (actor: breaker,
// unconfirmed) in the audit trail (PostgreSQL, then an operator_action
// fact) with the operators' declarations; a call that changed no event
// is not recorded.
func (s *Server) recordDeclaration(ctx context.Context, actor string, degraded bool, changed int) {
	if changed == 0 || s.Operators == nil {
		return
	}
	rec, err := s.Operators.Record(ctx, operators.Action{Actor: actor, Via: operators.ViaSystem, Role: operators.Operator,
		Action: operators.ActionProviderDeclare, Before: operators.Object(map[string]any{"degraded": !degraded}),
		After: operators.Object(map[string]any{"degraded": degraded, "events_changed": changed})})
	if err != nil {
		s.Log.Error("payment provider declaration not recorded", zap.String("actor", actor), zap.Bool("degraded", degraded), zap.Error(err))
		return
	}
	if s.AuditPublisher != nil {
		if err := s.AuditPublisher.Publish(ctx, rec.ID); err != nil {
			s.Log.Warn("operator_action left to the sweep", zap.Int64("id", rec.ID), zap.Error(err))
		}
	}
}
