package amqpx

import "github.com/prometheus/client_golang/prometheus"

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
	m := &Metrics{
		PublishConfirmed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "publish_confirmed_total",
			Help: "Messages published and confirmed (acked) by the broker.",
		}, []string{"exchange"}),
		PublishFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "publish_failed_total",
			Help: "Publishes that returned an error to the caller.",
		}, []string{"exchange", "reason"}),
		Consumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "consumed_total",
			Help: "Deliveries handed to a handler.",
		}, []string{"queue"}),
		Acked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "acked_total",
			Help: "Deliveries acked after the handler succeeded.",
		}, []string{"queue"}),
		Retried: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "retried_total",
			Help: "Deliveries scheduled for retry after a handler error.",
		}, []string{"queue"}),
		DeadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "dead_lettered_total",
			Help: "Deliveries moved to the dead-letter queue.",
		}, []string{"queue", "reason"}),
		Reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "reconnects_total",
			Help: "Connections re-established after a loss.",
		}, []string{"role"}),
		DelayOverdue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "delay_overdue_seconds",
			Help: "How far past its due time the oldest delay probe through the wait queue is that has not come back from the target queue's consumer (0: none); delayed messages through it are at least this late.",
		}, []string{"wait_queue"}),
		DelayProbeLateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "boxoffice", Subsystem: "amqp", Name: "delay_probe_lateness_seconds",
			Help:    "Time from a delay probe's due time to its return from the target queue's consumer.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"wait_queue"}),
	}
	if reg != nil {
		reg.MustRegister(m.PublishConfirmed, m.PublishFailed, m.Consumed, m.Acked, m.Retried, m.DeadLettered, m.Reconnects,
			m.DelayOverdue, m.DelayProbeLateness)
	}
	return m
}
