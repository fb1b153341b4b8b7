package notifier

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/boxoffice/boxoffice/pkg/promx"
)

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
	f := promx.New(reg, "notifier")
	return &Metrics{
		Connections:     f.Gauge("connections", "Open WebSocket connections."),
		Accepted:        f.Counter("connections_accepted_total", "WebSocket upgrades accepted."),
		Refused:         f.CounterVec("connections_refused_total", "WebSocket upgrades refused by a connection cap, by cap.", "reason"),
		Sent:            f.Counter("messages_sent_total", "Messages written to WebSocket connections."),
		SlowDropped:     f.Counter("slow_clients_dropped_total", "Connections dropped because their send queue was full."),
		Received:        f.CounterVec("notifications_received_total", "Notifications received from the fanout exchange.", "type"),
		PositionTicks:   f.Counter("position_broadcasts_total", "Per-event position broadcasts."),
		PresenceTouched: f.Counter("presence_touched_total", "Users reported present to the store."),
	}
}
