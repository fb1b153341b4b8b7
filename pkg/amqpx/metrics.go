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
	}
	if reg != nil {
		reg.MustRegister(m.PublishConfirmed, m.PublishFailed, m.Consumed, m.Acked, m.Retried, m.DeadLettered, m.Reconnects)
	}
	return m
}
