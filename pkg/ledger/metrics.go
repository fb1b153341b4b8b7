package ledger

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/boxoffice/boxoffice/pkg/promx"
)

// Metrics of the Restorer:
//
//	boxoffice_ledger_reconcile_difference{event_id, direction}  gauge, last pass:
//	    missing_in_redis (sold in the ledger, not in Redis; repaired),
//	    missing_in_ledger (sold in Redis, no order), conflict (sold to two buyers);
//	    an event that a pass of ReconcileAll did not reconcile (gone from
//	    Redis or the ledger) loses its series, so no alert outlives its event
//	boxoffice_ledger_draw_seed_mismatch{event_id}  gauge, last pass: the
//	    event's draws whose seed in Redis differs from the one the ledger
//	    kept (its commitment published first), which will not verify
//	boxoffice_ledger_repaired_seats_total   seats marked sold in Redis by reconciliation
//	boxoffice_ledger_undone_settings_total  settings Redis took in a change the ledger
//	    rolled back, put back in Redis by reconciliation (Ledger.SettleSettings)
//	boxoffice_ledger_recorded_changes_total{kind}  changes Redis took whose ledger
//	    record was lost, recorded later: phase (Ledger.KeepPhase, or the
//	    next phase change), seat_marks (Ledger.KeepMarks, or the next change
//	    of the same seats or channel; one per mark and purpose), seat_kinds
//	    (seats); shared with the Ledger of the same registry (WithRegisterer)
//	boxoffice_ledger_restores_total         events rebuilt from the ledger
//	boxoffice_ledger_errors_total{stage}    failed passes: restore, reconcile, publish
type Metrics struct {
	difference *prometheus.GaugeVec
	drawSeeds  *prometheus.GaugeVec
	repaired   prometheus.Counter
	undone     prometheus.Counter
	recorded   *prometheus.CounterVec
	restores   prometheus.Counter
	errors     *prometheus.CounterVec

	mu         sync.Mutex
	reconciled map[string]bool // events with difference series
}

// NewMetrics registers the metrics with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promx.New(reg, "ledger")
	return &Metrics{
		difference: f.GaugeVec("reconcile_difference",
			"Seats whose sale Redis and the ledger disagree on, at the last reconciliation.", "event_id", "direction"),
		drawSeeds: f.GaugeVec("draw_seed_mismatch",
			"Draws whose seed in Redis differs from the one the ledger kept, at the last reconciliation: they will not verify against the commitment published first.", "event_id"),
		repaired: f.Counter("repaired_seats_total", "Seats sold in the ledger that reconciliation marked sold in Redis."),
		undone: f.Counter("undone_settings_total",
			"Event settings Redis took in a change whose ledger transaction rolled back, put back by reconciliation."),
		recorded: recordedChanges(reg),
		restores: f.Counter("restores_total", "Events whose Redis state was rebuilt from the ledger."),
		errors:   f.CounterVec("errors_total", "Failed restore or reconcile passes, failed steps of a rebuild (run again on the next pass) and event_restored publishes.", "stage"),
	}
}

// recordedChanges is boxoffice_ledger_recorded_changes_total{kind} of reg,
// made or, when reg holds it already, shared: the reconciliation
// (Metrics) and the Ledger's own calls (WithRegisterer) count into one
// counter.
func recordedChanges(reg prometheus.Registerer) *prometheus.CounterVec {
	return promx.Shared(reg, "ledger").CounterVec("recorded_changes_total",
		"Admin changes Redis took whose ledger transaction rolled back, recorded in the ledger later: by reconciliation, or by the next change of the same seats, channel or phase.", "kind")
}

// keepOnly deletes the difference and draw seed series of every event not
// in ids.
func (m *Metrics) keepOnly(ids map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.reconciled {
		if !ids[id] {
			m.difference.DeletePartialMatch(prometheus.Labels{"event_id": id})
			m.drawSeeds.DeleteLabelValues(id)
		}
	}
	m.reconciled = ids
}

// Difference is the gauge of one event and direction (for tests).
func (m *Metrics) Difference(eventID, direction string) prometheus.Gauge {
	return m.difference.WithLabelValues(eventID, direction)
}

// Recorded is the counter of lost changes of kind recorded (for tests).
func (m *Metrics) Recorded(kind string) prometheus.Counter {
	return m.recorded.WithLabelValues(kind)
}

// DrawSeedMismatch is the draw seed gauge of one event (for tests).
func (m *Metrics) DrawSeedMismatch(eventID string) prometheus.Gauge {
	return m.drawSeeds.WithLabelValues(eventID)
}
