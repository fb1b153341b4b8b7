package admission

import (
	"fmt"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// What announcing each kind of outbox entry publishes, in one table
// (kinds); Announce and publishEntries read it.

// kindEffects is what announcing one kind of outbox entry does, all in one
// place: its Kafka event and, for the kinds that have one, its RabbitMQ
// side.
type kindEffects struct {
	// event is the entry's Kafka event, with the request id it carries.
	event func(eventID string, e booking.OutboxEntry, now time.Time) events.Event
	// rabbit, when set, is the entry's RabbitMQ messages; rabbitFor (nil:
	// every entry of the kind) says which entries have a RabbitMQ side.
	rabbit    func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error)
	rabbitFor func(e booking.OutboxEntry) bool
	// holdTimeout: the entry starts a hold whose delayed timeout message
	// is part of its RabbitMQ side; publishEntries sends one per deadline,
	// naming every hold of the batch that shares it.
	holdTimeout bool
}

// kinds gives each outbox kind its effects. An entry of a kind not listed
// here (booking.KindUnreadable) is acknowledged without effects.
var kinds = map[booking.OutboxKind]kindEffects{
	// a join: the Kafka booking_request only (and a code's use, Announce
	// adds its code_redeemed)
	booking.KindJoined: {event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
		return withRequest(events.BookingRequested(eventID, e.UserID, e.Sequence, orNow(e.At, now)), e.RequestID)
	}},
	// an admission: the hold's timeout, your_turn and user_promoted
	booking.KindPromoted: {
		event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
			return withRequest(events.UserPromoted(eventID, e.UserID, e.Sequence, orNow(e.At, now)), e.RequestID)
		},
		rabbit: func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error) {
			p, err := a.pass.Sign(eventID, e.UserID, e.Sequence, now, e.ExpireAt)
			if err != nil {
				return nil, err
			}
			return one(notificationMessage(messages.Notification{Type: messages.NotifyYourTurn, EventID: eventID, UserID: e.UserID,
				Sequence: e.Sequence, ExpireTime: e.ExpireAt.Unix(), ExpireAtMS: e.ExpireAt.UnixMilli(),
				Timestamp: now.Unix(), Pass: p}))
		},
		holdTimeout: true,
	},
	// a hold that ran out: the expired notification and booking_expired
	booking.KindExpired: {
		event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
			// the hold's deadline, as AnnounceExpiry publishes it; time ended
			// the hold, not a request
			return withRequest(events.BookingExpired(eventID, e.UserID, e.SeatID, e.Sequence, orNow(e.ExpireAt, orNow(e.At, now))),
				events.NoRequestID)
		},
		rabbit: func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error) {
			return one(notificationMessage(messages.Notification{Type: messages.NotifyExpired, EventID: eventID, UserID: e.UserID,
				Sequence: e.Sequence, SeatID: e.SeatID, Reason: messages.ReasonTimeout, Timestamp: now.Unix()}))
		},
	},
	// a cancellation: booking_cancelled; the cancelled notification to the
	// user (their other tabs leave the queue at once) unless the engine
	// dropped an absent user (abandoned: nobody to tell); and, when the
	// user left the room, a slot-released message
	booking.KindCancelled: {
		event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
			return withRequest(events.BookingCancelled(eventID, e.UserID, e.SeatID, e.Sequence, e.From, orNow(e.At, now)), e.RequestID)
		},
		rabbit: func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error) {
			n, err := notificationMessage(messages.Notification{Type: messages.NotifyCancelled, EventID: eventID, UserID: e.UserID,
				Sequence: e.Sequence, SeatID: e.SeatID, Reason: e.From, Timestamp: now.Unix()})
			if err != nil {
				return nil, err
			}
			if e.From != events.CancelledFromActive {
				return []amqpx.Outgoing{n}, nil
			}
			released, err := slotReleasedMessage(eventID, messages.ReasonCancellation, e.UserID+"|"+strconv.FormatInt(e.Sequence, 10), now)
			if err != nil {
				return nil, err
			}
			return []amqpx.Outgoing{released, n}, nil
		},
		rabbitFor: func(e booking.OutboxEntry) bool { return e.From != booking.FromAbandoned },
	},
	// a waitlist join: waitlist_joined only
	booking.KindWaitlisted: {event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
		return withRequest(events.WaitlistJoined(eventID, e.UserID, e.Sequence, e.From, orNow(e.At, now)), e.RequestID)
	}},
	// an offer to a waitlisted fan, a hold: its timeout, the offer
	// notification (the notifier's and the webhook's) and offer_made
	booking.KindOffered: {
		event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
			return withRequest(events.OfferMade(eventID, e.UserID, e.SeatID, e.Sequence, e.ExpireAt, orNow(e.At, now)), events.NoRequestID)
		},
		rabbit: func(a *Announcer, eventID string, e booking.OutboxEntry, now time.Time) ([]amqpx.Outgoing, error) {
			n := messages.Notification{Type: messages.NotifyOffer, EventID: eventID, UserID: e.UserID,
				Sequence: e.Sequence, SeatID: e.SeatID, ExpireTime: e.ExpireAt.Unix(), ExpireAtMS: e.ExpireAt.UnixMilli(),
				Timestamp: e.At.Unix()}
			if a != nil && a.offerHook != nil {
				if err := a.offerHook(n); err != nil {
					return nil, fmt.Errorf("offer hook: %w", err)
				}
			}
			return one(notificationMessage(n))
		},
		holdTimeout: true,
	},
	// an offer's end: offer_accepted, offer_declined or offer_expired, at
	// the time the script ended it
	booking.KindOfferEnded: {event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
		ev, ok := events.OfferEnded(eventID, e.UserID, e.SeatID, e.Sequence, e.From, orNow(e.At, now))
		if !ok {
			// an outcome this version does not know: announced as declined
			ev, _ = events.OfferEnded(eventID, e.UserID, e.SeatID, e.Sequence, booking.OfferDeclined, orNow(e.At, now))
		}
		return withRequest(ev, events.NoRequestID)
	}},
	// a rebuild from the ledger (pkg/ledger's Restorer publishes it at
	// once; this is the sweep's way when Kafka was down): event_restored
	booking.KindRestored: {event: func(eventID string, e booking.OutboxEntry, now time.Time) events.Event {
		return withRequest(events.EventRestored(eventID, e.Sequence, e.Reason, orNow(e.At, now)), events.NoRequestID)
	}},
}

func one(o amqpx.Outgoing, err error) ([]amqpx.Outgoing, error) {
	if err != nil {
		return nil, err
	}
	return []amqpx.Outgoing{o}, nil
}

func withRequest(ev events.Event, requestID string) events.Event {
	ev.RequestID = requestID
	return ev
}

// hasRabbitSide reports whether an entry publishes anything to RabbitMQ
// (publishEntries): joins and abandonments are Kafka only.
func hasRabbitSide(e booking.OutboxEntry) bool {
	k := kinds[e.Kind]
	return k.rabbit != nil && (k.rabbitFor == nil || k.rabbitFor(e))
}

func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}
