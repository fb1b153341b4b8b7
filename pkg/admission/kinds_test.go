package admission

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
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
		{booking.KindCancelled, events.CancelledFromQueue, true, events.TopicBookingCancelled, "r1"},
		{booking.KindCancelled, booking.FromAbandoned, false, events.TopicBookingCancelled, "r1"},
		{booking.KindCancelled, booking.FromPhaseEnded, true, events.TopicBookingCancelled, "r1"},
		{booking.KindRestored, "", false, events.TopicEventRestored, events.NoRequestID},
		{booking.KindWaitlisted, "2", false, events.TopicWaitlistJoined, "r1"},
		{booking.KindOffered, "", true, events.TopicOfferMade, events.NoRequestID},
		{booking.KindOfferEnded, booking.OfferAccepted, false, events.TopicOfferAccepted, events.NoRequestID},
		{booking.KindOfferEnded, booking.OfferDeclined, false, events.TopicOfferDeclined, events.NoRequestID},
		{booking.KindOfferEnded, booking.OfferExpired, false, events.TopicOfferExpired, events.NoRequestID},
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

// TestCancellationTellsTheUser: a cancellation the user made (in the
// queue or in the room) sends them a cancelled notification, so that their
// other tabs leave the queue at once; one from the room also releases its
// slot. A user taken out of the queue at their phase's end is told the
// same way, reason phase_ended, and booking_cancelled says so. An
// abandonment (the user is gone) sends nothing to RabbitMQ.
func TestCancellationTellsTheUser(t *testing.T) {
	now := time.UnixMilli(1_900_000_000_000)
	for _, tc := range []struct {
		from      string
		exchanges []string
	}{
		{events.CancelledFromQueue, []string{amqpx.NotificationsExchange}},
		{events.CancelledFromActive, []string{amqpx.SlotReleasedExchange, amqpx.NotificationsExchange}},
		{booking.FromPhaseEnded, []string{amqpx.NotificationsExchange}},
	} {
		e := booking.OutboxEntry{Kind: booking.KindCancelled, UserID: "u7", Sequence: 42, SeatID: "A1", From: tc.from, At: now}
		if ev := kinds[booking.KindCancelled].event("evt", e, now); ev.Reason != tc.from || ev.Validate() != nil {
			t.Errorf("from %s: booking_cancelled %+v: %v", tc.from, ev, ev.Validate())
		}
		out, err := kinds[booking.KindCancelled].rabbit(nil, "evt", e, now)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range out {
			got = append(got, o.Exchange)
			if o.Exchange != amqpx.NotificationsExchange {
				continue
			}
			var n messages.Notification
			if err := json.Unmarshal(o.Msg.Body, &n); err != nil {
				t.Fatal(err)
			}
			if n.Type != messages.NotifyCancelled || n.UserID != "u7" || n.EventID != "evt" || n.Sequence != 42 || n.Reason != tc.from || o.Msg.ID == "" {
				t.Errorf("from %s: notification %+v id %q", tc.from, n, o.Msg.ID)
			}
		}
		if !slices.Equal(got, tc.exchanges) {
			t.Errorf("from %s: published to %v, want %v", tc.from, got, tc.exchanges)
		}
	}
}

// TestOfferHook: an offer's RabbitMQ side tells the notifier (offer)
// and hands the same notification to the offer hook (WithOfferHook); a
// hook that fails fails the side (it is announced again), and no hook is
// no error.
func TestOfferHook(t *testing.T) {
	now := time.UnixMilli(1_900_000_000_000)
	var got []messages.Notification
	var fail error
	hook := func(n messages.Notification) error {
		got = append(got, n)
		return fail
	}
	e := booking.OutboxEntry{Kind: booking.KindOffered, UserID: "u7", Sequence: 42, SeatID: "A1,A2", ExpireAt: now.Add(time.Minute), At: now}
	a := New(nil, nil, nil, nil, WithOfferHook(hook))
	out, err := kinds[booking.KindOffered].rabbit(a, "evt", e, now)
	if err != nil || len(out) != 1 || out[0].Exchange != amqpx.NotificationsExchange {
		t.Fatalf("offer's RabbitMQ side: %+v %v", out, err)
	}
	if len(got) != 1 || got[0].Type != messages.NotifyOffer || got[0].UserID != "u7" || got[0].SeatID != "A1,A2" ||
		got[0].Sequence != 42 || got[0].ExpireAtMS != now.Add(time.Minute).UnixMilli() {
		t.Fatalf("hook got %+v", got)
	}
	fail = errors.New("down")
	if _, err := kinds[booking.KindOffered].rabbit(a, "evt", e, now); !errors.Is(err, fail) {
		t.Fatalf("a failing hook: %v", err)
	}
	if _, err := kinds[booking.KindOffered].rabbit(New(nil, nil, nil, nil), "evt", e, now); err != nil || len(got) != 2 {
		t.Fatalf("no hook: %v, %d calls", err, len(got))
	}
}
