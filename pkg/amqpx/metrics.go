package amqpx

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/boxoffice/boxoffice/pkg/promx"
)

// Metrics are the package's Prometheus collectors. Labels: exchange for
// publishes, queue for consumption.
type Metrics struct {
	PublishConfirmed *prometheus.CounterVec // exchange
	PublishFailed    *prometheus.CounterVec // exchange, reason (nack|unroutable|timeout|closed|error)
	Consumed         *prometheus.CounterVec // queue
	Acked            *prometheus.CounterVec // queue
	Retried          *prometheus.CounterVec // queue
	DeadLettered     *prometheus.CounterVec // queue, reason
	Reconnects       *prometheus.CounterVec // role (publisher|consumer)
	// DelayOverdue and DelayProbeLateness are the delay probes'
	// (WithDelayProbes), per wait queue.
	DelayOverdue       *prometheus.GaugeVec     // wait_queue
	DelayProbeLateness *prometheus.HistogramVec // wait_queue
}

// NewMetrics creates the collectors and registers them on reg when reg is
// not nil. Registering twice on one registry panics: create one Metrics per
// registry and pass it to every Publisher and Consumer with WithMetrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promx.New(reg, "amqp")
	return &Metrics{
		PublishConfirmed: f.CounterVec("publish_confirmed_total", "Messages published and confirmed (acked) by the broker.", "exchange"),
		PublishFailed:    f.CounterVec("publish_failed_total", "Publishes that returned an error to the caller.", "exchange", "reason"),
		Consumed:         f.CounterVec("consumed_total", "Deliveries handed to a handler.", "queue"),
		Acked:            f.CounterVec("acked_total", "Deliveries acked after the handler succeeded.", "queue"),
		Retried:          f.CounterVec("retried_total", "Deliveries scheduled for retry after a handler error.", "queue"),
		DeadLettered:     f.CounterVec("dead_lettered_total", "Deliveries moved to the dead-letter queue.", "queue", "reason"),
		Reconnects:       f.CounterVec("reconnects_total", "Connections re-established after a loss.", "role"),
		DelayOverdue: f.GaugeVec("delay_overdue_seconds",
			"How far past its due time the oldest delay probe through the wait queue is that has not come back from the target queue's consumer (0: none); delayed messages through it are at least this late.",
			"wait_queue"),
		DelayProbeLateness: f.HistogramVec("delay_probe_lateness_seconds",
			"Time from a delay probe's due time to its return from the target queue's consumer.",
			[]float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}, "wait_queue"),
	}
}
