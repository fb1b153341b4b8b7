package main

import (
	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// publishEventCreated publishes the event_created fact of a created event
// after the ledger and Redis writes: its time is the ledger's
// created_at, so a retried create republishes the same record (one id per
// event), and what a create that stopped before it left the sweep
// publishes (eventFacts). A failure answers 5xx. false: the response was
// written. drawCommit is the pre-queue draw's commitment
// (booking.Event.DrawCommit; "" without a pre-queue): the fact puts it on
// record before the sale.
func (s *Server) publishEventCreated(c *gin.Context, cfg booking.EventConfig, drawCommit string) bool {
	ctx := c.Request.Context()
	var err error
	if s.Ledger != nil {
		err = ledgerErr(s.eventFacts().PublishCreated(ctx, cfg.ID, drawCommit))
	} else { // development: the gateway's clock
		if n, nerr := booking.NormalizeEvent(cfg); nerr == nil {
			cfg = n
		}
		err = s.Kafka.Publish(ctx, ledger.EventCreatedFact(cfg, drawCommit, s.Store.Now()))
	}
	if err != nil {
		bookinghttp.Fail(c, err)
		return false
	}
	return true
}

// publishEventUpdated publishes the event_updated fact of the ledger's
// last settings change of the event (revision, what changed, when), after
// the ledger and Redis writes. A PATCH that changed nothing republishes the
// last change as it was (the retry of a call whose publish failed), and
// what a change that stopped before it left the sweep publishes. Needs the
// ledger: without one (development) nothing is published.
func (s *Server) publishEventUpdated(c *gin.Context, id string) bool {
	if s.Ledger == nil {
		return true
	}
	if err := s.eventFacts().PublishUpdated(c.Request.Context(), id); err != nil {
		bookinghttp.Fail(c, ledgerErr(err))
		return false
	}
	return true
}

// eventFacts publishes the event_created and event_updated facts, and
// sweeps those a request left.
func (s *Server) eventFacts() *ledger.EventFactPublisher {
	return &ledger.EventFactPublisher{Ledger: s.Ledger, Kafka: s.Kafka, Log: s.Log}
}
