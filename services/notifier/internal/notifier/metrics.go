package notifier

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the notifier's Prometheus collectors.
type Metrics struct {
	Connections     prometheus.Gauge
	Accepted        prometheus.Counter
	Refused         *prometheus.CounterVec // reason: total, per_user, per_ip
	Sent            prometheus.Counter
	SlowDropped     prometheus.Counter
	Received        *prometheus.CounterVec // type
	PositionTicks   prometheus.Counter
	PresenceTouched prometheus.Counter
}

// NewMetrics creates the collectors and registers them on reg when it is
// not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Connections: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "boxoffice", Subsystem: "notifier",
			Name: "connections", Help: "Open WebSocket connections."}),
		Accepted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "notifier",
			Name: "connections_accepted_total", Help: "WebSocket upgrades accepted."}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "notifier",
			Name: "connections_refused_total", Help: "WebSocket upgrades refused by a connection cap, by cap."}, []string{"reason"}),
		Sent: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "notifier",
			Name: "messages_sent_total", Help: "Messages written to WebSocket connections."}),
		SlowDropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "notifier",
			Name: "slow_clients_dropped_total", Help: "Connections dropped because their send queue was full."}),
		Received: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "notifier",
			Name: "notifications_received_total", Help: "Notifications received from the fanout exchange."}, []string{"type"}),
		PositionTicks: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "notifier",
			Name: "position_broadcasts_total", Help: "Per-event position broadcasts."}),
		PresenceTouched: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "boxoffice", Subsystem: "notifier",
			Name: "presence_touched_total", Help: "Users reported present to the store."}),
	}
	if reg != nil {
		reg.MustRegister(m.Connections, m.Accepted, m.Refused, m.Sent, m.SlowDropped, m.Received, m.PositionTicks, m.PresenceTouched)
	}
	return m
}
