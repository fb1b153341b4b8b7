// Package messages holds the RabbitMQ wire schemas that boxoffice's services
// exchange: the slot-released and timeout messages, and the
// notifications fanned out to every notifier instance. (The Kafka events for
// analytics, a public contract, live in pkg/events.) Every message is JSON;
// unknown fields are ignored on decode, missing required fields are an
// error, so a malformed message can be dead-lettered at once.
package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Reasons a slot was released, the safety net's included.
const (
	ReasonTimeout        = "timeout"
	ReasonPaymentSuccess = "payment_success"
	ReasonPaymentFailure = "payment_failure"
	ReasonCancellation   = "cancellation"
	ReasonSafetyNet      = "safety_net"
	ReasonCapacity       = "capacity_changed"
	// ReasonDraw: a pre-queue's draw got its last input (the beacon
	// round's value), so the promotion that makes it need not wait for
	// the safety net.
	ReasonDraw = "draw_ready"
)

// SlotReleased asks for a promotion into an event's booking room
// (slot-released-exchange, routing key slot-released). Any number of them,
// duplicated or lost, is harmless: promotion fills free capacity only.
type SlotReleased struct {
	EventID   string `json:"event_id"`
	Reason    string `json:"reason"`
	Timestamp int64  `json:"timestamp"` // unix seconds
}

// Timeout is a hold's delayed expiry (timeout-exchange, routing key
// timeout), delivered at the hold's deadline. It names one hold (UserID,
// Sequence) or, as a batch, the holds of Users, which share the deadline:
// every user one promotion admitted (one durable message per promotion
// batch instead of one per user).
type Timeout struct {
	UserID       string        `json:"user_id"`
	EventID      string        `json:"event_id"`
	Sequence     int64         `json:"sequence"`
	ExpireTime   int64         `json:"expire_time"`    // unix seconds
	ExpireTimeMS int64         `json:"expire_time_ms"` // unix milliseconds
	ScheduledAt  int64         `json:"scheduled_at"`   // unix seconds
	Users        []TimeoutHold `json:"users,omitempty"`
}

// TimeoutHold is one hold of a batch Timeout.
type TimeoutHold struct {
	UserID   string `json:"user_id"`
	Sequence int64  `json:"sequence"`
}

// Holds returns the holds the message names: Users, or its one hold.
func (t Timeout) Holds() []TimeoutHold {
	if len(t.Users) > 0 {
		return t.Users
	}
	return []TimeoutHold{{UserID: t.UserID, Sequence: t.Sequence}}
}

// Notification types pushed to users over WebSocket by the notifier.
const (
	NotifyYourTurn         = "your_turn"
	NotifyPosition         = "position"
	NotifyExpired          = "expired"
	NotifySoldOut          = "sold_out"
	NotifyBookingCompleted = "booking_completed"
	NotifyPaymentFailed    = "payment_failed"
	NotifySeatsChanged     = "seats_changed"
	// NotifyCancelled: the user cancelled (another tab, the API); Reason
	// says from where ("queue" or "active"), Sequence which join it ended.
	NotifyCancelled = "cancelled"
	// NotifySalesEnded: the event's sales end has passed; nobody waiting
	// will be admitted (sent to the event's connections).
	NotifySalesEnded = "sales_ended"
	// NotifyOffer: returned seats (SeatID, joined by ',') are offered to
	// the waitlisted user until ExpireAtMS; Sequence names the offer.
	NotifyOffer = "offer"
)

// Notification is published to the notifications fanout exchange; every
// notifier instance receives it and delivers it to its own connections of
// UserID for EventID (every connection of the event when UserID is empty).
type Notification struct {
	Type       string `json:"type"`
	EventID    string `json:"event_id"`
	UserID     string `json:"user_id,omitempty"`
	Sequence   int64  `json:"sequence,omitempty"`
	ExpireTime int64  `json:"expire_time,omitempty"` // unix seconds, your_turn
	ExpireAtMS int64  `json:"expire_at_ms,omitempty"`
	SeatID     string `json:"seat_id,omitempty"`
	PaymentID  string `json:"payment_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Timestamp  int64  `json:"timestamp"` // unix seconds
	// Pass is the admission pass of a your_turn (pkg/pass), when the
	// services have PASS_KEYS.
	Pass string `json:"pass,omitempty"`
}

// ErrMalformed marks a message that can never be processed.
var ErrMalformed = errors.New("malformed message")

// NewSlotReleased builds a SlotReleased message.
func NewSlotReleased(eventID, reason string, at time.Time) SlotReleased {
	return SlotReleased{EventID: eventID, Reason: reason, Timestamp: at.Unix()}
}

// NewTimeout builds the timeout message of a hold ending at deadline.
func NewTimeout(eventID, userID string, seq int64, deadline, at time.Time) Timeout {
	return Timeout{UserID: userID, EventID: eventID, Sequence: seq,
		ExpireTime: deadline.Unix(), ExpireTimeMS: deadline.UnixMilli(), ScheduledAt: at.Unix()}
}

// NewTimeoutBatch builds the timeout of several holds with one deadline.
func NewTimeoutBatch(eventID string, holds []TimeoutHold, deadline, at time.Time) Timeout {
	return Timeout{EventID: eventID, Users: holds,
		ExpireTime: deadline.Unix(), ExpireTimeMS: deadline.UnixMilli(), ScheduledAt: at.Unix()}
}

// DecodeSlotReleased parses and validates a slot-released body.
func DecodeSlotReleased(body []byte) (SlotReleased, error) {
	var m SlotReleased
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.EventID == "" {
		return m, fmt.Errorf("%w: slot-released without event_id", ErrMalformed)
	}
	return m, nil
}

// DecodeTimeout parses and validates a timeout body.
func DecodeTimeout(body []byte) (Timeout, error) {
	var m Timeout
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.EventID == "" || (m.UserID == "" && len(m.Users) == 0) {
		return m, fmt.Errorf("%w: timeout without event_id or user_id", ErrMalformed)
	}
	for _, h := range m.Users {
		if h.UserID == "" {
			return m, fmt.Errorf("%w: timeout batch with a hold without user_id", ErrMalformed)
		}
	}
	return m, nil
}

// DecodeNotification parses and validates a notification body.
func DecodeNotification(body []byte) (Notification, error) {
	var m Notification
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.EventID == "" || m.Type == "" {
		return m, fmt.Errorf("%w: notification without event_id or type", ErrMalformed)
	}
	return m, nil
}

// Deadline returns the timeout's deadline, preferring millisecond precision.
func (t Timeout) Deadline() time.Time {
	if t.ExpireTimeMS > 0 {
		return time.UnixMilli(t.ExpireTimeMS)
	}
	return time.Unix(t.ExpireTime, 0)
}
