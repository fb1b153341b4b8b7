package main

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// publishEventCreated publishes the event_created fact of a created event
// after the ledger and Redis writes: its time is the ledger's
// created_at, so a retried create republishes the same record (one id per
// event). A failure answers 5xx. false: the response was written.
// drawCommit is the pre-queue draw's commitment (booking.Event.DrawCommit;
// "" without a pre-queue): the fact puts it on record before the sale.
func (s *Server) publishEventCreated(c *gin.Context, cfg booking.EventConfig, drawCommit string) bool {
	ctx := c.Request.Context()
	at := s.Store.Now()
	if s.Ledger != nil {
		def, err := s.Ledger.Event(ctx, cfg.ID)
		if err != nil {
			bookinghttp.Fail(c, ledgerErr(err))
			return false
		}
		cfg, at = def.Config, def.CreatedAt
	} else if n, err := booking.NormalizeEvent(cfg); err == nil {
		cfg = n
	}
	settings := eventSettings(cfg)
	if drawCommit != "" {
		settings += " draw_commit=" + drawCommit
	}
	if err := s.Kafka.Publish(ctx, events.EventCreated(cfg.ID, settings, at)); err != nil {
		bookinghttp.Fail(c, err)
		return false
	}
	return true
}

// publishEventUpdated publishes the event_updated fact of the ledger's
// last settings change of the event (revision, what changed, when), after
// the ledger and Redis writes. A PATCH that changed nothing republishes the
// last change as it was (the retry of a call whose publish failed). Needs
// the ledger: without one (development) nothing is published.
func (s *Server) publishEventUpdated(c *gin.Context, id string) bool {
	if s.Ledger == nil {
		return true
	}
	ctx := c.Request.Context()
	def, err := s.Ledger.Event(ctx, id)
	if err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return false
	}
	if def.Revision == 0 {
		return true
	}
	if err := s.Kafka.Publish(ctx, events.EventUpdated(id, def.Revision, def.LastChange, def.ChangedAt)); err != nil {
		bookinghttp.Fail(c, err)
		return false
	}
	return true
}

// eventSettings is an event_created fact's reason: the sale's settings as
// key=value, keys sorted.
func eventSettings(cfg booking.EventConfig) string {
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
	kv := map[string]string{
		"seats":           strconv.Itoa(len(cfg.Seats)),
		"capacity":        strconv.Itoa(cfg.Capacity),
		"hold_seconds":    secs(cfg.Hold),
		"grace_seconds":   secs(cfg.Grace),
		"abandon_seconds": secs(cfg.Abandon),
		"batch_size":      strconv.Itoa(cfg.BatchSize),
	}
	if !cfg.SalesStart.IsZero() {
		kv["sales_start"] = cfg.SalesStart.UTC().Format(time.RFC3339)
	}
	if !cfg.SalesEnd.IsZero() {
		kv["sales_end"] = cfg.SalesEnd.UTC().Format(time.RFC3339)
	}
	// the front door's settings, when set
	if cfg.AdmitPerMinute != 0 {
		kv["admit_per_minute"] = strconv.Itoa(cfg.AdmitPerMinute)
	}
	if cfg.EarlyJoin != 0 {
		kv["early_join_seconds"] = secs(cfg.EarlyJoin)
	}
	if cfg.Challenge == booking.ChallengePoW {
		kv["challenge"] = cfg.Challenge
	}
	if cfg.NoOrphanRule {
		kv["no_orphan_rule"] = "true"
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + kv[k]
	}
	return strings.Join(parts, " ")
}
