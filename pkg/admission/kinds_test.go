package admission

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// TestEveryOutboxKindHasItsEffects: each kind the engine writes has its
// Kafka event in the kinds table, with the request id the right one, and a
// RabbitMQ side exactly where the Announcer's contract says.
func TestEveryOutboxKindHasItsEffects(t *testing.T) {
	now := time.UnixMilli(1_900_000_000_000)
	for _, tc := range []struct {
		kind   booking.OutboxKind
		from   string
		rabbit bool
		typ    string
		reqID  string
	}{
		{booking.KindJoined, "", false, events.TopicBookingRequest, "r1"},
		{booking.KindPromoted, "", true, events.TopicUserPromoted, "r1"},
		{booking.KindExpired, "", true, events.TopicBookingExpired, events.NoRequestID},
		{booking.KindCancelled, events.CancelledFromActive, true, events.TopicBookingCancelled, "r1"},
		{booking.KindCancelled, "queue", false, events.TopicBookingCancelled, "r1"},
	} {
		k, ok := kinds[tc.kind]
		if !ok || k.event == nil {
			t.Fatalf("%s: no effects", tc.kind)
		}
		e := booking.OutboxEntry{Kind: tc.kind, UserID: "u", Sequence: 1, From: tc.from, At: now, RequestID: "r1"}
		ev := k.event("evt", e, now)
		if ev.Type != tc.typ || ev.RequestID != tc.reqID {
			t.Errorf("%s from %q: event %s request %q, want %s %q", tc.kind, tc.from, ev.Type, ev.RequestID, tc.typ, tc.reqID)
		}
		if hasRabbitSide(e) != tc.rabbit {
			t.Errorf("%s from %q: RabbitMQ side %v, want %v", tc.kind, tc.from, !tc.rabbit, tc.rabbit)
		}
	}
}
