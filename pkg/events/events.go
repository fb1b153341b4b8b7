// Package events defines the booking events boxoffice publishes to Kafka and
// the code that publishes and consumes them. The events are a public contract
// for analytics consumers (docs/events-kafka.md): one topic per event type,
// one JSON envelope ({"id", "type", "version", "occurred_at"} plus the
// booking's fields), every message keyed by the concert's event_id so that one
// concert's history stays ordered within one partition.
//
// Delivery is at-least-once. Publishers retry, so the same fact may be
// written more than once; it then carries the same envelope id, derived
// deterministically from the fact (see ID). Consumers must dedupe by id.
// Writes use acks=all and a failed write is returned to the caller, never
// swallowed.
package events

import (
	"encoding/json"
	"errors"
	"time"
)

// Topics, one per event type. The envelope's type equals the topic name.
const (
	// TopicBookingRequest: a user joined the waiting room of an event.
	TopicBookingRequest = "booking_request"
	// TopicUserPromoted: a user was admitted from the queue to the booking room.
	TopicUserPromoted = "user_promoted"
	// TopicPaymentInitiated: a user with a held seat started paying.
	TopicPaymentInitiated = "payment_initiated"
	// TopicBookingCompleted: a payment succeeded and the seat is sold.
	TopicBookingCompleted = "booking_completed"
	// TopicPaymentFailed: the payment provider reported a failed payment.
	TopicPaymentFailed = "payment_failed"
	// TopicBookingCancelled: a user left the queue or the booking room.
	TopicBookingCancelled = "booking_cancelled"
	// TopicBookingExpired: a user's hold in the booking room timed out.
	TopicBookingExpired = "booking_expired"
	// TopicPaymentLate: a payment arrived after its hold was released; it
	// did not complete a booking and must be refunded.
	TopicPaymentLate = "payment_late"
	// TopicEventRestored: an event's Redis state was rebuilt from the
	// ledger (PostgreSQL) after Redis lost it.
	TopicEventRestored = "event_restored"
	// TopicEventCreated: an event (a concert's sale) was created.
	TopicEventCreated = "event_created"
	// TopicEventUpdated: an event's settings changed (capacity, pause,
	// hold, abandonment timeout); reason says what changed.
	TopicEventUpdated = "event_updated"
	// TopicEventSoldOut: the last seat of an event was sold.
	TopicEventSoldOut = "event_sold_out"
	// TopicQueueRandomized: the pre-queue of an event was drawn at its
	// sales start.
	TopicQueueRandomized = "queue_randomized"
	// TopicAdmissionLogged: an entry of an event's admission log, the
	// hash chain of its admissions (docs/fairness.md).
	TopicAdmissionLogged = "admission_logged"
	// TopicProviderDegraded: the payment provider was found or declared
	// degraded; the event's hold clocks stopped and admissions paused.
	TopicProviderDegraded = "provider_degraded"
	// TopicProviderRecovered: the payment provider recovered; the event's
	// hold clocks restarted with the time each hold had left.
	TopicProviderRecovered = "provider_recovered"
	// TopicOperatorAction: an operator changed something (an event's
	// settings, a refund, an account): one fact per record of the audit
	// trail (pkg/operators, docs/operators.md).
	TopicOperatorAction = "operator_action"
	// TopicOrderCancelled: an operator cancelled seats of a sold order;
	// they are back on sale.
	TopicOrderCancelled = "order_cancelled"
	// TopicRefundIssued: the provider confirmed the refund of a
	// cancellation.
	TopicRefundIssued = "refund_issued"
	// TopicSeatsHeld: an operator held seats for a purpose; they are off
	// sale until released.
	TopicSeatsHeld = "seats_held"
	// TopicSeatsKilled: an operator killed seats: never for sale.
	TopicSeatsKilled = "seats_killed"
	// TopicSeatsReleased: an operator released held or killed seats to
	// sale.
	TopicSeatsReleased = "seats_released"
	// TopicSeatsAllocated: an operator allocated seats to a channel;
	// only requests through it may take them until the allocation ends.
	TopicSeatsAllocated = "seats_allocated"
	// TopicAllocationReleased: a channel's allocation ended (at its
	// release time or by an operator); its unsold seats are on sale.
	TopicAllocationReleased = "allocation_released"
	// TopicCodeRedeemed: a fan's join used an access code.
	TopicCodeRedeemed = "code_redeemed"
	// TopicPhaseStarted: a phase of an event's sale started (a presale,
	// the general sale).
	TopicPhaseStarted = "phase_started"
	// TopicPhaseEnded: a phase of an event's sale ended.
	TopicPhaseEnded = "phase_ended"
	// TopicRegistrationOpened: an event's registration window was set.
	TopicRegistrationOpened = "registration_opened"
	// TopicRegistered: a fan registered for an event's registered phase.
	TopicRegistered = "registered"
	// TopicSelectionDrawn: the registration's selection was made.
	TopicSelectionDrawn = "selection_drawn"
	// TopicWaitlistJoined: a fan joined the waitlist of a sold-out event.
	TopicWaitlistJoined = "waitlist_joined"
	// TopicOfferMade: returned seats were offered (held) to a waitlisted
	// fan until a deadline.
	TopicOfferMade = "offer_made"
	// TopicOfferAccepted: a fan accepted their offer (they go on to pay).
	TopicOfferAccepted = "offer_accepted"
	// TopicOfferDeclined: a fan declined their offer; the seats go on to
	// the next fan.
	TopicOfferDeclined = "offer_declined"
	// TopicOfferExpired: an offer ran out unanswered; the seats go on to
	// the next fan.
	TopicOfferExpired = "offer_expired"
)

// AllTopics lists every topic, in the order of a user's journey.
var AllTopics = []string{
	TopicBookingRequest,
	TopicUserPromoted,
	TopicPaymentInitiated,
	TopicBookingCompleted,
	TopicPaymentFailed,
	TopicBookingCancelled,
	TopicBookingExpired,
	TopicPaymentLate,
	TopicEventRestored,
	TopicEventCreated,
	TopicEventUpdated,
	TopicEventSoldOut,
	TopicQueueRandomized,
	TopicProviderDegraded,
	TopicProviderRecovered,
	TopicOperatorAction,
	TopicOrderCancelled,
	TopicRefundIssued,
	TopicSeatsHeld,
	TopicSeatsKilled,
	TopicSeatsReleased,
	TopicSeatsAllocated,
	TopicAllocationReleased,
	TopicAdmissionLogged,
	TopicCodeRedeemed,
	TopicPhaseStarted,
	TopicPhaseEnded,
	TopicRegistrationOpened,
	TopicRegistered,
	TopicSelectionDrawn,
	TopicWaitlistJoined,
	TopicOfferMade,
	TopicOfferAccepted,
	TopicOfferDeclined,
	TopicOfferExpired,
}

// SchemaVersion is the envelope version written by this package. A consumer
// rejects versions it does not know rather than misreading them. Version 2
// added source (every type) and amount and currency (the money facts);
// version 3 added seat_ids, the seats of an order of several
// (seat_id then holds them joined by ','). Decode still accepts versions 1
// and 2 (MinSchemaVersion), which lack them.
const SchemaVersion = 3

// MinSchemaVersion is the oldest envelope version Decode accepts: records
// written before an upgrade stay readable for the topics' retention.
const MinSchemaVersion = 1

// DefaultSource is the source of an event whose producer was given none:
// the default deployment ("bo", the default Redis prefix). Every
// deployment that shares a data lake must set its own (SourceFor).
const DefaultSource = "/boxoffice/bo"

// SourceFor is the source of the events of a deployment (DEPLOYMENT_ID):
// "/boxoffice/<deployment>", a URI reference as CloudEvents' source is.
// (source, id) is unique across deployments; id alone is unique within one.
func SourceFor(deployment string) string {
	if deployment == "" {
		return DefaultSource
	}
	return "/boxoffice/" + deployment
}

// Values of Event.Reason for booking_cancelled: where the user was,
// CancelledAbandoned when the system dropped a waiting user who was absent
// (neither connected nor polling) when their turn came, or
// CancelledPhaseEnded when the phase the waiting user joined in ended and
// the event's on_phase_change is leave.
const (
	CancelledFromQueue  = "queue"
	CancelledFromActive = "active"
	CancelledAbandoned  = "abandoned"
	CancelledPhaseEnded = "phase_ended"
)

// ErrInvalid is wrapped by Decode and Validate when a message breaks the
// contract (unknown type or version, a required field missing).
var ErrInvalid = errors.New("invalid event")

// Event is one booking event: the envelope plus the booking's fields. One
// struct serves every type; each type's constructor says which fields it
// fills. Fields that do not apply are empty and omitted from the JSON,
// except user_id, event_id and timestamp, which every event carries.
type Event struct {
	ID         string    // deterministic, see ID
	Type       string    // one of AllTopics
	Version    int       // SchemaVersion
	Source     string    // the deployment that published it (SourceFor); version 2
	OccurredAt time.Time // UTC, millisecond precision

	UserID  string
	EventID string // the concert; the Kafka message key
	SeatID  string // the seat; an order of several: the seats joined by ','
	// SeatIDs lists the seats of an order of several seats (version 3);
	// empty for one seat. The constructors set it from a ','-joined SeatID.
	SeatIDs   []string
	PaymentID string
	Sequence  int64  // the user's join sequence number within the event
	Reason    string // payment_failed: provider reason; booking_cancelled: queue|active
	Timestamp int64  // OccurredAt in unix seconds, for older consumers

	// Amount is the money of a payment fact in the currency's minor unit
	// (cents), with Currency its ISO 4217 code; both set or both empty
	// (version 2, when the publisher knows them).
	Amount   int64
	Currency string
	// Phase is the sale's phase current when the seats of a
	// booking_completed or payment_late were sold (WithPhase); "" none.
	Phase string
	// Channel is the channel a box-office sale of a booking_completed
	// went through (WithChannel); "" a fan's order through the queue.
	Channel string

	// The fields of operator_action (OperatorAction): what was done
	// (Action, "event.update"), to what (Target: an order, an account),
	// how the operator was signed in (Via: session, token, jwt, cli),
	// their role, the client address, and the values before and after
	// (JSON objects; absent for none). UserID is the operator, Sequence
	// the audit record's number, EventID the concert or NoEvent.
	Action     string
	Target     string
	Via        string
	Role       string
	RemoteAddr string
	Before     json.RawMessage
	After      json.RawMessage

	// RequestID is the id of the request that caused the event, sent in the
	// request_id header (HeaderRequestID) instead of the context's; not
	// part of the envelope.
	RequestID string
}
