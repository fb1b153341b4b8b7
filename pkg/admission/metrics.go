package admission

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/boxoffice/boxoffice/pkg/promx"
)

// Metrics are the package's Prometheus collectors, shared by the Announcer,
// Promoter and TimeoutHandler of one process.
type Metrics struct {
	Promotions         prometheus.Counter     // users admitted to the booking room
	ExpiredReclaimed   prometheus.Counter     // expired holds reclaimed by promotions
	AnnounceFailures   prometheus.Counter     // Announce/AnnounceExpiry calls that failed
	OutboxSwept        prometheus.Counter     // stale outbox entries re-announced
	SafetyNetRuns      prometheus.Counter     // safety-net ticks completed
	SafetyNetPromoted  prometheus.Counter     // users admitted by the safety net (a message was lost or late)
	SoldOutBroadcasts  prometheus.Counter     // sold_out notifications published
	TimeoutOutcomes    *prometheus.CounterVec // outcome (released|extended|not_due|no_hold|stale)
	SlotReleasedEvents *prometheus.CounterVec // reason of consumed slot-released messages
	RelayEntries       *prometheus.CounterVec // Relay entries by result (announced|failed|left_to_sweep)
	// ProviderDegraded: per event, 1 while its hold clocks are stopped for
	// a payment provider outage, as the last promotion found them
	ProviderDegraded *prometheus.GaugeVec
}

// NewMetrics creates the collectors and registers them on reg when reg is
// not nil (registering twice on one registry panics).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promx.New(reg, "admission")
	return &Metrics{
		Promotions:         f.Counter("promotions_total", "Users admitted from the queue to the booking room."),
		ExpiredReclaimed:   f.Counter("expirations_reclaimed_total", "Expired holds reclaimed by promotions."),
		AnnounceFailures:   f.Counter("announce_failures_total", "Announcements that failed and were left for a retry."),
		OutboxSwept:        f.Counter("outbox_swept_total", "Stale outbox entries re-announced by the safety net or a retry."),
		SafetyNetRuns:      f.Counter("safety_net_runs_total", "Safety-net ticks completed."),
		SafetyNetPromoted:  f.Counter("safety_net_promotions_total", "Users admitted by the safety net rather than by a message."),
		SoldOutBroadcasts:  f.Counter("sold_out_broadcasts_total", "sold_out notifications published."),
		TimeoutOutcomes:    f.CounterVec("timeouts_total", "Timeout messages handled, by outcome.", "outcome"),
		SlotReleasedEvents: f.CounterVec("slot_released_total", "slot-released messages handled, by reason.", "reason"),
		RelayEntries: f.CounterVec("relay_entries_total",
			"Outbox entries handed to the background relay, by result: announced, failed or left_to_sweep (queue full or closed); failed and left_to_sweep entries are announced by the safety net's outbox sweep.",
			"result"),
		ProviderDegraded: f.GaugeVec("provider_degraded",
			"1 while an event's hold clocks are stopped for a payment provider outage (admissions paused), as the last promotion found them; 0 otherwise.",
			"event_id"),
	}
}
