package ledger

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the Restorer:
//
//	boxoffice_ledger_reconcile_difference{event_id, direction}  gauge, last pass:
//	    missing_in_redis (sold in the ledger, not in Redis; repaired),
//	    missing_in_ledger (sold in Redis, no order), conflict (sold to two buyers);
//	    an event that a pass of ReconcileAll did not reconcile (gone from
//	    Redis or the ledger) loses its series, so no alert outlives its event
//	boxoffice_ledger_repaired_seats_total   seats marked sold in Redis by reconciliation
//	boxoffice_ledger_restores_total         events rebuilt from the ledger
//	boxoffice_ledger_errors_total{stage}    failed passes: restore, reconcile, publish
type Metrics struct {
	difference *prometheus.GaugeVec
	repaired   prometheus.Counter
	restores   prometheus.Counter
	errors     *prometheus.CounterVec

	mu         sync.Mutex
	reconciled map[string]bool // events with difference series
}

// NewMetrics registers the metrics with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		difference: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "boxoffice", Subsystem: "ledger",
			Name: "reconcile_difference", Help: "Seats whose sale Redis and the ledger disagree on, at the last reconciliation."},
			[]string{"event_id", "direction"}),
		repaired: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "ledger",
			Name: "repaired_seats_total", Help: "Seats sold in the ledger that reconciliation marked sold in Redis."}),
		restores: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "ledger",
			Name: "restores_total", Help: "Events whose Redis state was rebuilt from the ledger."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "ledger",
			Name: "errors_total", Help: "Failed restore or reconcile passes and event_restored publishes."}, []string{"stage"}),
	}
	if reg != nil {
		reg.MustRegister(m.difference, m.repaired, m.restores, m.errors)
	}
	return m
}

// keepOnly deletes the difference series of every event not in ids.
func (m *Metrics) keepOnly(ids map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.reconciled {
		if !ids[id] {
			m.difference.DeletePartialMatch(prometheus.Labels{"event_id": id})
		}
	}
	m.reconciled = ids
}

// Difference is the gauge of one event and direction (for tests).
func (m *Metrics) Difference(eventID, direction string) prometheus.Gauge {
	return m.difference.WithLabelValues(eventID, direction)
}
