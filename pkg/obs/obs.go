// Package obs exports the booking engine's live per-event numbers as
// Prometheus gauges. [EventCollector] reads every event from the store
// (booking.Store.ListEvents) when it is scraped, so the gauges are never
// stale and cost nothing between scrapes; a scrape costs one Redis round
// trip per event plus one for the index. Register it on exactly one
// service's admin registry per deployment (the gateway): every instance
// would export the same numbers, so dashboards take max by event_id.
//
// A failed read does not fail the scrape: the per-event gauges are left
// out and boxoffice_event_collector_up is 0, so an alert can fire on it
// while the service's other metrics keep flowing.
package obs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/promx"
)

// EventLister is the part of booking.Store the collector reads.
type EventLister interface {
	ListEvents(ctx context.Context) ([]booking.Event, error)
}

// DefaultTimeout bounds one scrape's read of the store.
const DefaultTimeout = 3 * time.Second

// EventCollector is a prometheus.Collector of per-event gauges, each
// labelled event_id:
//
//	boxoffice_event_waiting               users in the queue
//	boxoffice_event_active                users in the booking room (all hold states)
//	boxoffice_event_held                  seats held (picked, not yet paid)
//	boxoffice_event_sold                  seats sold
//	boxoffice_event_available             seats neither held nor sold
//	boxoffice_event_admitted_last_minute  users admitted in the last 60 s
//	boxoffice_event_capacity              booking room capacity (for occupancy)
//	boxoffice_event_seats                 seats in the seat map
//	boxoffice_event_paused                1 while the on-sale is paused
//
// plus boxoffice_event_collector_up (1 when the last read succeeded) and
// boxoffice_event_collector_duration_seconds.
type EventCollector struct {
	lister  EventLister
	timeout time.Duration

	waiting, active, held, sold, available, admitted *prometheus.Desc
	capacity, seats, paused                          *prometheus.Desc
	up, duration                                     *prometheus.Desc
}

// Option configures an EventCollector.
type Option func(*EventCollector)

// WithTimeout bounds each scrape's read of the store (default
// [DefaultTimeout]). Keep it below Prometheus' scrape_timeout.
func WithTimeout(d time.Duration) Option { return func(c *EventCollector) { c.timeout = d } }

// NewEventCollector returns a collector reading l on every scrape.
func NewEventCollector(l EventLister, opts ...Option) *EventCollector {
	f := promx.New(nil, "event")
	ev := func(name, help string) *prometheus.Desc { return f.Desc(name, help, "event_id") }
	c := &EventCollector{
		lister:    l,
		timeout:   DefaultTimeout,
		waiting:   ev("waiting", "Users waiting in the event's queue."),
		active:    ev("active", "Users in the event's booking room (active, seat selected or paying)."),
		held:      ev("held", "Seats held by a user in the booking room, not yet sold."),
		sold:      ev("sold", "Seats sold."),
		available: ev("available", "Seats neither held nor sold."),
		admitted:  ev("admitted_last_minute", "Users admitted to the booking room in the last 60 seconds."),
		capacity:  ev("capacity", "Booking room capacity: users who may hold a slot at once."),
		seats:     ev("seats", "Seats in the event's seat map."),
		paused:    ev("paused", "1 while the event's on-sale is paused by an operator."),
		up:        f.Desc("collector_up", "1 when the last read of the events from Redis succeeded, 0 otherwise."),
		duration:  f.Desc("collector_duration_seconds", "Time the last read of the events from Redis took."),
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *EventCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.waiting, c.active, c.held, c.sold, c.available,
		c.admitted, c.capacity, c.seats, c.paused, c.up, c.duration} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads every event now.
func (c *EventCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	start := time.Now()
	events, err := c.lister.ListEvents(ctx)
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	gauge := func(d *prometheus.Desc, v int64, id string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), id)
	}
	for _, e := range events {
		n := e.Counts
		gauge(c.waiting, n.Waiting, e.ID)
		gauge(c.active, n.Active, e.ID)
		gauge(c.held, n.Held, e.ID)
		gauge(c.sold, n.Sold, e.ID)
		gauge(c.available, n.Available, e.ID)
		gauge(c.admitted, n.AdmittedLastMinute, e.ID)
		gauge(c.capacity, int64(e.Capacity), e.ID)
		gauge(c.seats, n.Total, e.ID)
		var paused int64
		if e.Paused {
			paused = 1
		}
		gauge(c.paused, paused, e.ID)
	}
}
