package notifier

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// Message types the notifier sends besides messages.Notify*. "state" is the
// initial message of a user with no booking or a booking that ended without
// a notification of its own (cancelled, abandoned).
const (
	TypeState = "state"
	// StateNone is the state of a user who has not joined the event.
	StateNone = "none"
)

// PositionUpdate is the per-event broadcast of every position tick: one
// marshal per event, the same bytes to every connection. A waiting client
// with join sequence s has at most s-Served-1 users ahead of it and computes
// its own ETA from RatePerMin.
type PositionUpdate struct {
	Type       string `json:"type"` // "position"
	EventID    string `json:"event_id"`
	Served     int64  `json:"served"`
	Waiting    int64  `json:"waiting"`
	RatePerMin int64  `json:"rate_per_min"`
	Available  int64  `json:"available"`
	Held       int64  `json:"held"`
	Sold       int64  `json:"sold"`
	// Paused: the sale is paused (nobody is admitted until it resumes).
	Paused    bool  `json:"paused"`
	Timestamp int64 `json:"timestamp"`
}

func positionUpdate(eventID string, t Tick, now time.Time) PositionUpdate {
	c := t.Counts
	return PositionUpdate{Type: messages.NotifyPosition, EventID: eventID, Served: c.Served,
		Waiting: c.Waiting, RatePerMin: c.AdmittedLastMinute, Available: c.Available,
		Held: c.Held, Sold: c.Sold, Paused: t.Paused, Timestamp: now.Unix()}
}

// InitialPosition is the first message of a waiting user: the broadcast's
// queue fields (not the seat counts) plus the user's exact position (from
// the store) and ETA.
type InitialPosition struct {
	Type       string `json:"type"` // "position"
	EventID    string `json:"event_id"`
	Served     int64  `json:"served"`
	Waiting    int64  `json:"waiting"`
	RatePerMin int64  `json:"rate_per_min"`
	Timestamp  int64  `json:"timestamp"`
	State      string `json:"state"`
	Sequence   int64  `json:"sequence"`
	Position   int64  `json:"position"`
	// ETASeconds is position × 60 / rate_per_min; absent while nobody was
	// admitted in the last minute (no rate to go by).
	ETASeconds *int64 `json:"eta_seconds,omitempty"`
	// Prequeued is the sales start (RFC 3339) while the user waits in the
	// pre-queue, or a later phase's start in that phase's: no position
	// nor ETA until the draw then.
	Prequeued string `json:"prequeued,omitempty"`
}

// StateMessage is the first message of a user who is not waiting. Type is
// your_turn (in the room), booking_completed, payment_failed, expired,
// sold_out, sales_ended or state.
type StateMessage struct {
	Type       string `json:"type"`
	EventID    string `json:"event_id"`
	State      string `json:"state"`
	Sequence   int64  `json:"sequence,omitempty"`
	ExpireTime int64  `json:"expire_time,omitempty"` // unix seconds
	ExpireAtMS int64  `json:"expire_at_ms,omitempty"`
	SeatID     string `json:"seat_id,omitempty"`
	PaymentID  string `json:"payment_id,omitempty"`
	SoldOut    bool   `json:"sold_out,omitempty"`
	Timestamp  int64  `json:"timestamp"`
}

// initialMessage turns the store's view of a user (Store.Position's result
// and error) into the message sent right after the upgrade.
func initialMessage(eventID string, st booking.Status, err error, now time.Time) ([]byte, error) {
	if err != nil && !errors.Is(err, booking.ErrNotFound) {
		return nil, err
	}
	m := StateMessage{EventID: eventID, State: string(st.State), Sequence: st.Sequence,
		SeatID: st.SeatID, PaymentID: st.PaymentID, SoldOut: st.SoldOut, Timestamp: now.Unix()}
	switch {
	case err != nil: // not joined
		m.Type, m.State = TypeState, StateNone
		if st.SalesEnded {
			m.Type = messages.NotifySalesEnded
		} else if st.SoldOut {
			m.Type = messages.NotifySoldOut
		}
	case st.State == booking.StateWaiting && st.SalesEnded:
		m.Type = messages.NotifySalesEnded
	case st.State == booking.StateWaiting && st.SoldOut:
		m.Type = messages.NotifySoldOut
	case st.State == booking.StateWaiting:
		c := st.Counts
		p := InitialPosition{Type: messages.NotifyPosition, EventID: eventID, Served: c.Served,
			Waiting: c.Waiting, RatePerMin: c.AdmittedLastMinute, Timestamp: now.Unix(),
			State: string(st.State), Sequence: st.Sequence, Position: st.Position}
		at := st.At // Redis's clock, the one the read was made by
		if at.IsZero() {
			at = now
		}
		// position 0 after the start: in a later phase's pre-queue
		// (its start in SalesStart) until its draw places them
		if at.Before(st.SalesStart) || st.Position == 0 {
			p.Prequeued = st.SalesStart.UTC().Format(time.RFC3339Nano)
		} else if c.AdmittedLastMinute > 0 {
			eta := (st.Position*60 + c.AdmittedLastMinute - 1) / c.AdmittedLastMinute
			p.ETASeconds = &eta
		}
		return json.Marshal(p)
	case st.State.InRoom():
		m.Type = messages.NotifyYourTurn
		if !st.ExpireAt.IsZero() {
			m.ExpireTime, m.ExpireAtMS = st.ExpireAt.Unix(), st.ExpireAt.UnixMilli()
		}
	case st.State == booking.StateCompleted:
		m.Type = messages.NotifyBookingCompleted
	case st.State == booking.StateFailed:
		m.Type = messages.NotifyPaymentFailed
	case st.State == booking.StateExpired:
		m.Type = messages.NotifyExpired
	default: // cancelled, abandoned
		m.Type = TypeState
	}
	return json.Marshal(m)
}
