package main

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/chance"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// The progress document (GET /api/events/{id}/progress) is what every
// waiting user needs to place itself, the same for all of them: the
// notifier's per-tick broadcast as an HTTP resource. A client holding its
// join receipt (pkg/receipt, from the join) has at most seq-served-1 users
// ahead and an ETA of that × 60 / rate_per_min, so polling it costs no
// per-user Redis read: each gateway instance serves a per-event snapshot
// (snapshot.go) read with one Store.GetEvent (the notifier's Counts) at
// most once per ProgressMaxAge, and a CDN in front absorbs the rest.
//
// The same snapshot carries the event's chance of a ticket (pkg/chance):
// parameters from which a fan with n users ahead computes its chance, and
// from which the exact position's "chance" is computed without a Redis
// read of its own.

// defaultProgressMaxAge is how old a served progress document may be.
const defaultProgressMaxAge = time.Second

// progressResponse is the body of GET /api/events/{id}/progress
// (docs/http-api.md). It carries no clock of its own, so that an
// unchanged queue keeps its ETag and a revalidation is a 304.
type progressResponse struct {
	EventID string `json:"event_id"`
	// Served is the highest join sequence admitted so far.
	Served  int64 `json:"served"`
	Waiting int64 `json:"waiting"`
	// RatePerMin is the admissions per minute an ETA assumes: the last
	// minute's, capped at the event's admit_per_minute (as the exact
	// position's eta_seconds).
	RatePerMin int64 `json:"rate_per_min"`
	Paused     bool  `json:"paused"`
	// SoldOut: every seat is sold; a waiting user will not get one.
	SoldOut bool `json:"sold_out"`
	// SalesEnded: the sales end has passed (Redis's clock when the
	// snapshot was read); a waiting user will not be admitted.
	SalesEnded bool `json:"sales_ended,omitempty"`
	// Chance: the parameters of every waiting fan's chance of a ticket
	// (pkg/chance: Params.Chance of the users ahead).
	Chance chance.Params `json:"chance"`
	// SalesStart is when the sale opens (the pre-queue's draw).
	SalesStart string `json:"sales_start,omitempty"`
	// ProviderDegraded: the payment provider has a problem; admissions
	// are paused (provider.go).
	ProviderDegraded bool `json:"provider_degraded,omitempty"`
}

func progressOf(e booking.Event, o orderStat) progressResponse {
	c := e.Counts
	return progressResponse{EventID: e.ID, Served: c.Served, Waiting: c.Waiting,
		RatePerMin: etaRate(c.AdmittedLastMinute, int64(e.AdmitPerMinute)),
		Paused:     e.Paused, SoldOut: c.Total > 0 && c.Sold >= c.Total, Chance: chanceOf(e, o),
		SalesStart: rfc3339OrEmpty(e.SalesStart), ProviderDegraded: !e.HoldsPausedSince.IsZero(), SalesEnded: e.SalesEnded}
}

// chanceOf is the event's estimate of a waiting fan's chance of a ticket,
// with the orders this instance saw (seats per order).
func chanceOf(e booking.Event, o orderStat) chance.Params {
	c := e.Counts
	return chance.Estimate(chance.Counts{Total: c.Total, Sold: c.Sold, Held: c.Held, Active: c.Active,
		Served: c.Served, MaxPerOrder: e.MaxSeatsPerOrder,
		Orders: o.orders, OrderSeats: o.seats, OrderSeatsSquared: o.squares})
}

// orderStat is what one gateway instance saw of an event's orders: the
// payments it started, their seats, and the sum of each one's seats
// squared. Every instance sees a share of the same crowd, which is all
// seats per order needs; nothing is kept in Redis.
type orderStat struct{ orders, seats, squares int64 }

// orderSizes holds orderStat by event, for at most maxSnapshotEvents
// events (events are created by admins: a backstop).
type orderSizes struct {
	mu sync.Mutex
	m  map[string]*orderStat
}

// add counts a started payment of seats seats for eventID.
func (o *orderSizes) add(eventID string, seats int) {
	if seats <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.m[eventID]
	if st == nil {
		if len(o.m) >= maxSnapshotEvents {
			return
		}
		if o.m == nil {
			o.m = map[string]*orderStat{}
		}
		st = &orderStat{}
		o.m[eventID] = st
	}
	n := int64(seats)
	st.orders, st.seats, st.squares = st.orders+1, st.seats+n, st.squares+n*n
}

// of is eventID's orderStat (zero when none were seen).
func (o *orderSizes) of(eventID string) orderStat {
	o.mu.Lock()
	defer o.mu.Unlock()
	if st := o.m[eventID]; st != nil {
		return *st
	}
	return orderStat{}
}

// progress: GET /api/events/{id}/progress, anonymous.
func (s *Server) progress(c *fastserver.Ctx) {
	eventID := c.Param()
	if !ids.ValidEvent(eventID) {
		c.Fail(booking.ErrEventNotFound)
		return
	}
	snap, maxAge, err := s.progressSnapshot(c.Context(), eventID)
	if err != nil {
		c.Fail(err)
		return
	}
	serveSnapshot(c, snap, maxAge)
}

// progressSnapshot is eventID's progress document, no older than the
// ProgressMaxAge it returns, with the event's chance parameters.
func (s *Server) progressSnapshot(ctx context.Context, eventID string) (*snapshot[chance.Params], time.Duration, error) {
	maxAge := s.ProgressMaxAge
	if maxAge <= 0 {
		maxAge = defaultProgressMaxAge
	}
	snap, err := s.progressDocs.get(ctx, eventID, maxAge, func(ctx context.Context, _ *snapshot[chance.Params]) (*snapshot[chance.Params], error) {
		start := time.Now()
		e, err := s.Store.GetEvent(ctx, eventID)
		if err != nil {
			return nil, err
		}
		doc := progressOf(e, s.orderSizes.of(eventID))
		body, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		return newSnapshot(start, body, doc.Chance), nil
	})
	return snap, maxAge, err
}
