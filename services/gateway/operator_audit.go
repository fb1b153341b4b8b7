package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// The audit trail's side of the admin API (docs/operators.md): every
// admin route that changes something calls audit once it has made the
// change and before it answers. That is the one hook: a new admin action
// names itself (an operators.Action… constant) and passes the values it
// changed, before and after. auditGuard catches a route that forgets.

const (
	ctxAudited = "operators.audited"
	// ctxIntent: the request's write-ahead entry (operators.Intent), 0 for none
	ctxIntent = "operators.intent"
	// ctxRecorded: the request's record is written (its intent with it)
	ctxRecorded = "operators.recorded"
	// ctxUnchanged: the request changed nothing (noChange)
	ctxUnchanged = "operators.unchanged"
)

// audit records the change a route made: who (the caller), when, from
// where, to which event and target, and the values before and after
// (maps or structs that marshal to JSON objects; nil for none). The record
// and its Kafka fact's outbox entry are written in one transaction; the
// fact is then published at once, or by the sweep if Kafka is down. false:
// the record could not be written, a 503 was answered (the change stands;
// the log has the record in full) and the client retries.
func (s *Server) audit(c *gin.Context, action, eventID, target string, before, after any) bool {
	c.Set(ctxAudited, true)
	if s.Operators == nil {
		return true // no ledger (tests of the Redis path): no trail
	}
	p := principal(c)
	a := operators.Action{Actor: p.Account, Via: p.Via, Role: p.Role, Action: action, EventID: eventID, Target: target,
		RemoteAddr: addrString(s.clientAddr(c)), RequestID: httpapi.RequestIDFrom(c),
		Before: operators.Object(before), After: operators.Object(after), Intent: c.GetInt64(ctxIntent)}
	return s.record(c, a)
}

// record writes a and publishes its fact (audit).
func (s *Server) record(c *gin.Context, a operators.Action) bool {
	// the change is made: a client that hangs up must not lose its record
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 10*time.Second)
	defer cancel()
	rec, err := s.Operators.Record(ctx, a)
	if err == nil {
		c.Set(ctxRecorded, true)
	}
	if err != nil {
		httpapi.Logger(c).Error("operator action not recorded", zap.String("actor", a.Actor), zap.String("via", a.Via),
			zap.String("action", a.Action), zap.String("event_id", a.EventID), zap.String("target", a.Target),
			zap.String("remote_addr", a.RemoteAddr), zap.ByteString("before", a.Before), zap.ByteString("after", a.After),
			zap.Error(err))
		bookinghttp.Fail(c, err)
		return false
	}
	if s.AuditPublisher != nil {
		if err := s.AuditPublisher.Publish(ctx, rec.ID); err != nil {
			httpapi.Logger(c).Warn("operator_action left to the sweep", zap.Int64("id", rec.ID), zap.Error(err))
		}
	}
	return true
}

// noChange marks a successful call that changed nothing (a refund
// repeated): no record.
func noChange(c *gin.Context) {
	c.Set(ctxAudited, true)
	c.Set(ctxUnchanged, true)
}

// auditGuard writes the audit trail's write-ahead entry of a
// state-changing admin call before the route runs (operators.Intent: 503
// unavailable, nothing done, when it cannot), and afterwards removes it
// when the call changed nothing: refused (4xx) or a repeat (noChange).
// The route's record removes it otherwise. One left, by a 5xx, a record
// that failed, a panic or a gateway killed mid-call, becomes a
// request.interrupted record (the operator_action sweep), so no change
// goes unrecorded. It also counts and logs a call that succeeded without
// a record (a route that forgot audit): the tests hold that at 0.
func (s *Server) auditGuard(c *gin.Context) {
	switch c.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return
	}
	if c.FullPath() == "/api/admin/sign-out" {
		return
	}
	if s.Operators != nil {
		p := principal(c)
		eventID := ""
		if id := c.Param("id"); strings.HasPrefix(c.FullPath(), "/api/admin/events/:id") && ids.ValidEvent(id) {
			eventID = id
		}
		// the path as sent (escaped: no NUL or invalid UTF-8 for PostgreSQL)
		id, err := s.Operators.Begin(c.Request.Context(), operators.Intent{Actor: p.Account, Via: p.Via, Role: p.Role,
			Method: c.Request.Method, Route: c.FullPath(), Path: c.Request.URL.EscapedPath(), EventID: eventID,
			RemoteAddr: addrString(s.clientAddr(c)), RequestID: httpapi.RequestIDFrom(c)})
		if err != nil {
			httpapi.Logger(c).Error("admin call refused: its audit intent could not be written", zap.Error(err))
			bookinghttp.Fail(c, err)
			c.Abort()
			return
		}
		c.Set(ctxIntent, id)
	}
	c.Next()
	status := c.Writer.Status()
	if id := c.GetInt64(ctxIntent); id != 0 && !c.GetBool(ctxRecorded) &&
		(c.GetBool(ctxUnchanged) || (status >= 400 && status < 500)) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), 10*time.Second)
		defer cancel()
		if err := s.Operators.Discard(ctx, id); err != nil {
			// the sweep records it as interrupted: one record too many, none lost
			httpapi.Logger(c).Warn("audit intent of an unchanged call not removed", zap.Int64("intent", id), zap.Error(err))
		}
	}
	if status >= 300 || c.GetBool(ctxAudited) {
		return
	}
	s.unaudited.Add(1)
	httpapi.Logger(c).Error("admin action answered without an audit record", zap.String("method", c.Request.Method),
		zap.String("route", c.FullPath()))
}

// listAudit: GET /api/admin/audit — the audit trail, newest first, with
// filters (actor, event_id, action, after, before: RFC 3339) and pages
// (limit, cursor: next_cursor of the previous page).
func (s *Server) listAudit(c *gin.Context) {
	f := operators.AuditFilter{Actor: c.Query("actor"), EventID: c.Query("event_id"), Action: c.Query("action")}
	bad := func(msg string) { httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, msg) }
	if f.EventID != "" && f.EventID != "*" && !ids.ValidEvent(f.EventID) {
		bad("event_id must be " + ids.EventRule + ", or * for actions on no event")
		return
	}
	if f.EventID == "*" {
		f.EventID = "" // stored as none
		f.NoEvent = true
	}
	if len(f.Actor) > 200 || strings.ContainsFunc(f.Actor, unicode.IsControl) || !utf8.ValidString(f.Actor) {
		bad("actor must be at most 200 characters, no control characters")
		return
	}
	if len(f.Action) > 64 || strings.ContainsFunc(f.Action, unicode.IsControl) || !utf8.ValidString(f.Action) {
		bad("action must be at most 64 characters, no control characters")
		return
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"after", &f.After}, {"before", &f.Before}} {
		if v := c.Query(t.name); v != "" {
			at, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				bad(t.name + " must be RFC 3339, e.g. 2026-01-02T12:00:00Z")
				return
			}
			*t.dst = at
		}
	}
	if v := c.Query("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			bad("cursor must be the next_cursor of a previous page")
			return
		}
		f.Cursor = n
	}
	n, ok := limitParam(c, 100, operators.MaxAuditPage)
	if !ok {
		return
	}
	f.Limit = n
	acts, next, err := s.Operators.Audit(c.Request.Context(), f)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if acts == nil {
		acts = []operators.Action{}
	}
	body := gin.H{"actions": acts}
	if next > 0 {
		body["next_cursor"] = strconv.FormatInt(next, 10)
	}
	c.JSON(http.StatusOK, body)
}

// eventAudit is an event's settings as an audit record shows them, named
// as the admin API's create and PATCH bodies name them (the seat map as
// its count and sections).
func eventAudit(cfg booking.EventConfig, paused bool) map[string]any {
	secs := func(d time.Duration) float64 { return d.Seconds() }
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	challenge := cfg.Challenge
	if challenge == "" {
		challenge = booking.ChallengeNone
	}
	m := map[string]any{
		"name": cfg.Name, "seats": len(cfg.Seats), "capacity": cfg.Capacity, "paused": paused,
		"hold_seconds": secs(cfg.Hold), "grace_seconds": secs(cfg.Grace), "abandon_seconds": secs(cfg.Abandon),
		"batch_size": cfg.BatchSize, "sales_start": ts(cfg.SalesStart), "sales_end": ts(cfg.SalesEnd),
		"max_seats_per_order": cfg.MaxSeatsPerOrder, "admit_per_minute": cfg.AdmitPerMinute,
		"early_join_seconds": secs(cfg.EarlyJoin), "challenge": challenge, "currency": cfg.Currency,
		"finish_after_end": !cfg.HoldsEndWithSale, "refundable_until": ts(cfg.RefundableUntil),
		"on_phase_change": cfg.OnPhaseChange,
	}
	if len(cfg.Sections) > 0 {
		type section struct {
			Name       string `json:"name"`
			Seats      int    `json:"seats"`
			PriceCents int64  `json:"price_cents"`
		}
		var ss []section
		for _, sec := range cfg.Sections {
			n := len(sec.Seats)
			if n == 0 {
				n = sec.Rows * sec.SeatsPerRow
			}
			ss = append(ss, section{sec.Name, n, sec.PriceCents})
		}
		m["sections"] = ss
	} else if cfg.PriceCents != 0 {
		m["price_cents"] = cfg.PriceCents
	}
	return m
}

// only keeps the keys of m that are in keys.
func only(m map[string]any, keys []string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// ledgerSettings is event id's settings as the ledger has them (the
// system of record), for an audit record; false without a ledger, or when
// the ledger has no such event (the change then fails on its own).
func (s *Server) ledgerSettings(c *gin.Context, id string) (map[string]any, bool) {
	if s.Ledger == nil || s.Operators == nil {
		return nil, false
	}
	d, err := s.Ledger.Event(c.Request.Context(), id)
	if err != nil {
		return nil, false
	}
	return eventAudit(d.Config, d.Paused), true
}

// fields are the settings a PATCH names, as eventAudit names them.
func (r updateEventRequest) fields() []string {
	var out []string
	for _, f := range []struct {
		set  bool
		name string
	}{
		{r.Paused != nil, "paused"}, {r.Capacity != nil, "capacity"}, {r.HoldSeconds != nil, "hold_seconds"},
		{r.AbandonSeconds != nil, "abandon_seconds"}, {r.Name != nil, "name"}, {r.GraceSeconds != nil, "grace_seconds"},
		{r.BatchSize != nil, "batch_size"}, {r.SalesStart != nil, "sales_start"}, {r.SalesEnd != nil, "sales_end"},
		{r.MaxSeatsPerOrder != nil, "max_seats_per_order"}, {r.AdmitPerMinute != nil, "admit_per_minute"},
		{r.EarlyJoinSeconds != nil, "early_join_seconds"}, {r.Challenge != nil, "challenge"},
		{r.FinishAfterEnd != nil, "finish_after_end"}, {r.RefundableUntil != nil, "refundable_until"},
		{r.OnPhaseChange != nil, "on_phase_change"},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}
