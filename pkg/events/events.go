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
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/boxoffice/boxoffice/pkg/jsonobj"
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
	// TopicOperatorAction: an operator changed something (an event's
	// settings, a refund, an account): one fact per record of the audit
	// trail (pkg/operators, docs/operators.md).
	TopicOperatorAction = "operator_action"
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
	TopicOperatorAction,
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

// Values of Event.Reason for booking_cancelled: where the user was, or
// CancelledAbandoned when the system dropped a waiting user who was absent
// (neither connected nor polling) when their turn came.
const (
	CancelledFromQueue  = "queue"
	CancelledFromActive = "active"
	CancelledAbandoned  = "abandoned"
)

// occurredAtLayout is RFC 3339 with exactly three fractional digits, in UTC.
const occurredAtLayout = "2006-01-02T15:04:05.000Z07:00"

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

// wireEvent is the JSON form of Event. Its jsonschema tags describe the
// fields in the published JSON Schemas (pkg/events/eventschema, docs/schemas).
type wireEvent struct {
	ID         string          `json:"id" jsonschema:"format=uuid" jsonschema_description:"The fact's id, a UUIDv5 of type|event_id|user_id|sequence|payment_id: the same for every copy of one fact. (source, id) is unique across deployments."`
	Type       string          `json:"type" jsonschema_description:"The event type, equal to the topic name."`
	Version    int             `json:"version" jsonschema_description:"The envelope's schema version."`
	Source     string          `json:"source,omitempty" jsonschema:"minLength=1" jsonschema_description:"The deployment that published the fact: /boxoffice/ then DEPLOYMENT_ID (CloudEvents' source). Version 2."`
	OccurredAt string          `json:"occurred_at" jsonschema:"format=date-time,pattern=^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$" jsonschema_description:"When the fact happened, RFC 3339 in UTC with milliseconds; fixed when it happened, so every copy carries the same."`
	UserID     string          `json:"user_id" jsonschema:"minLength=1" jsonschema_description:"The user; system for facts no user caused."`
	EventID    string          `json:"event_id" jsonschema:"minLength=1" jsonschema_description:"The concert (the sale's event id); also the Kafka message key."`
	SeatID     string          `json:"seat_id,omitempty" jsonschema:"minLength=1" jsonschema_description:"The seat, when one is involved; for an order of several seats, the seats joined by ',' (see seat_ids)."`
	SeatIDs    []string        `json:"seat_ids,omitempty" jsonschema:"minItems=2" jsonschema_description:"The seats of an order of several seats, in the order selected; absent for one seat. Version 3."`
	PaymentID  string          `json:"payment_id,omitempty" jsonschema:"minLength=1" jsonschema_description:"The payment id, for payment facts."`
	Sequence   int64           `json:"sequence,omitempty" jsonschema:"minimum=1" jsonschema_description:"The user's join sequence number within the concert (unique per join, never reused, also across rebuilds)."`
	Reason     string          `json:"reason,omitempty" jsonschema:"minLength=1" jsonschema_description:"See the type."`
	Amount     int64           `json:"amount,omitempty" jsonschema:"minimum=1" jsonschema_description:"The payment's amount in the currency's minor unit (cents); with currency. Version 2."`
	Currency   string          `json:"currency,omitempty" jsonschema:"pattern=^[A-Z]{3}$" jsonschema_description:"ISO 4217 code of amount's currency; with amount. Version 2."`
	Action     string          `json:"action,omitempty" jsonschema:"minLength=1" jsonschema_description:"operator_action: what the operator did, e.g. event.update (docs/operators.md lists them)."`
	Target     string          `json:"target,omitempty" jsonschema:"minLength=1" jsonschema_description:"operator_action: what the action was done to besides the concert: an order id, an account name."`
	Via        string          `json:"via,omitempty" jsonschema:"enum=session,enum=token,enum=jwt,enum=cli" jsonschema_description:"operator_action: how the operator was signed in: a browser session, an API token, a bearer JWT (development), or the gateway's operators command."`
	Role       string          `json:"role,omitempty" jsonschema:"enum=viewer,enum=operator,enum=admin" jsonschema_description:"operator_action: the operator's role when they acted."`
	RemoteAddr string          `json:"remote_addr,omitempty" jsonschema:"minLength=1" jsonschema_description:"operator_action: the client address the action came from (TRUSTED_PROXIES decide whether X-Forwarded-For is believed)."`
	Before     json.RawMessage `json:"before,omitempty" jsonschema_description:"operator_action: the values the action changed, as they were before (an object; absent when there were none, e.g. a creation)."`
	After      json.RawMessage `json:"after,omitempty" jsonschema_description:"operator_action: the values the action changed, as they are after it (an object; absent when there are none, e.g. a revocation's record has only before)."`
	Timestamp  int64           `json:"timestamp" jsonschema:"minimum=1" jsonschema_description:"occurred_at in unix seconds."`
}

// Envelope is the JSON form of Event, field for field, for tools that
// describe the wire format (the JSON Schema generator, eventschema).
type Envelope = wireEvent

// MarshalJSON writes the envelope with occurred_at in RFC 3339 with
// milliseconds.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.appendJSON(nil), nil
}

// appendJSON is encoding/json's encoding of the event's wireEvent, without
// reflection: every event the gateway publishes is encoded on its hot path
// (TestEncodeMatchesWireEvent holds the two equal).
func (e Event) appendJSON(buf []byte) []byte {
	b, _ := e.appendEnvelope(buf)
	return b
}

// appendEnvelope is appendJSON that also returns occurred_at's value as
// a slice of the result (plain ASCII, no room to grow): message sends it
// as the ce_time header too, without formatting the time again.
func (e Event) appendEnvelope(buf []byte) (b, at []byte) {
	o := jsonobj.New(buf)
	o.Str("id", e.ID)
	o.Str("type", e.Type)
	o.Int("version", int64(e.Version))
	o.StrOmitEmpty("source", e.Source)
	ts := e.OccurredAt.UTC().Format(occurredAtLayout)
	o.Str("occurred_at", ts)
	end := o.Len() - 1 // before the closing quote
	o.Str("user_id", e.UserID)
	o.Str("event_id", e.EventID)
	o.StrOmitEmpty("seat_id", e.SeatID)
	o.StrsOmitEmpty("seat_ids", e.SeatIDs)
	o.StrOmitEmpty("payment_id", e.PaymentID)
	o.IntOmitZero("sequence", e.Sequence)
	o.StrOmitEmpty("reason", e.Reason)
	o.IntOmitZero("amount", e.Amount)
	o.StrOmitEmpty("currency", e.Currency)
	o.StrOmitEmpty("action", e.Action)
	o.StrOmitEmpty("target", e.Target)
	o.StrOmitEmpty("via", e.Via)
	o.StrOmitEmpty("role", e.Role)
	o.StrOmitEmpty("remote_addr", e.RemoteAddr)
	o.RawOmitEmpty("before", e.Before)
	o.RawOmitEmpty("after", e.After)
	o.Int("timestamp", e.Timestamp)
	b = o.Bytes()
	return b, b[end-len(ts) : end : end]
}

// UnmarshalJSON reads the envelope; it does not validate (see Decode).
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var at time.Time
	if w.OccurredAt != "" {
		t, err := time.Parse(time.RFC3339Nano, w.OccurredAt)
		if err != nil {
			return fmt.Errorf("occurred_at: %w", err)
		}
		at = t.UTC()
	}
	*e = Event{
		ID:         w.ID,
		Type:       w.Type,
		Version:    w.Version,
		Source:     w.Source,
		OccurredAt: at,
		UserID:     w.UserID,
		EventID:    w.EventID,
		SeatID:     w.SeatID,
		SeatIDs:    w.SeatIDs,
		PaymentID:  w.PaymentID,
		Sequence:   w.Sequence,
		Reason:     w.Reason,
		Amount:     w.Amount,
		Currency:   w.Currency,
		Action:     w.Action,
		Target:     w.Target,
		Via:        w.Via,
		Role:       w.Role,
		RemoteAddr: w.RemoteAddr,
		Before:     w.Before,
		After:      w.After,
		Timestamp:  w.Timestamp,
	}
	return nil
}

// Decode parses a message value and validates it against the contract.
// Errors wrap ErrInvalid.
func Decode(b []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// Encode returns the JSON envelope of a valid event.
func Encode(e Event) ([]byte, error) {
	b, _, err := encode(e)
	return b, err
}

// encode is Encode that also returns occurred_at's value as a slice of
// the envelope (appendEnvelope).
func encode(e Event) (b, at []byte, err error) {
	if err := e.Validate(); err != nil {
		return nil, nil, err
	}
	// room for the usual envelope (a booking_request's is about 250
	// bytes): one allocation where growing from nil made six
	// (BenchmarkEnvelope/Encode)
	b, at = e.appendEnvelope(make([]byte, 0, envelopeCap))
	return b, at, nil
}

// envelopeCap is the buffer Encode starts with.
const envelopeCap = 384

// requirements per type: which optional fields must be present.
type requirements struct {
	seat, payment, sequence, reason bool
	operator                        bool // action, via, role
}

var required = map[string]requirements{
	TopicBookingRequest:   {sequence: true},
	TopicUserPromoted:     {sequence: true},
	TopicPaymentInitiated: {seat: true, payment: true},
	TopicBookingCompleted: {seat: true, payment: true},
	TopicPaymentFailed:    {payment: true, reason: true},
	TopicBookingCancelled: {sequence: true, reason: true},
	TopicBookingExpired:   {sequence: true},
	TopicPaymentLate:      {payment: true},
	TopicEventRestored:    {sequence: true, reason: true},
	TopicEventCreated:     {reason: true},
	TopicEventUpdated:     {sequence: true, reason: true},
	TopicEventSoldOut:     {},
	TopicQueueRandomized:  {sequence: true, reason: true},
	TopicOperatorAction:   {sequence: true, operator: true},
}

// RequiredFields returns the JSON fields a type requires in the current
// version (every type's own and the envelope's), in wire order; false for
// an unknown type.
func RequiredFields(typ string) ([]string, bool) {
	req, ok := required[typ]
	if !ok {
		return nil, false
	}
	out := []string{"id", "type", "version", "source", "occurred_at", "user_id", "event_id"}
	for _, f := range []struct {
		on   bool
		name string
	}{{req.seat, "seat_id"}, {req.payment, "payment_id"}, {req.sequence, "sequence"}, {req.reason, "reason"},
		{req.operator, "action"}, {req.operator, "via"}, {req.operator, "role"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return append(out, "timestamp"), true
}

// Validate reports whether e honours the contract: a known type and
// version, an id, a time, user_id and event_id, and the fields its type
// requires. Errors wrap ErrInvalid.
func (e Event) Validate() error {
	req, ok := required[e.Type]
	if !ok {
		return fmt.Errorf("%w: unknown type %q", ErrInvalid, e.Type)
	}
	var missing []string
	check := func(cond bool, field string) {
		if !cond {
			missing = append(missing, field)
		}
	}
	check(e.Version >= MinSchemaVersion && e.Version <= SchemaVersion, "version")
	check(e.Version < 2 || e.Source != "", "source")
	check(e.Amount >= 0 && (e.Amount > 0) == (e.Currency != "") && (e.Currency == "" || isCurrency(e.Currency)),
		"amount and currency")
	check(e.ID != "", "id")
	check(!e.OccurredAt.IsZero(), "occurred_at")
	check(e.Timestamp > 0, "timestamp")
	check(e.UserID != "", "user_id")
	check(e.EventID != "", "event_id")
	check(!req.seat || e.SeatID != "", "seat_id")
	check(!req.payment || e.PaymentID != "", "payment_id")
	check(!req.sequence || e.Sequence > 0, "sequence")
	check(!req.reason || e.Reason != "", "reason")
	check(!req.operator || e.Action != "", "action")
	check(!req.operator || e.Via != "", "via")
	check(!req.operator || e.Role != "", "role")
	check(isObjectOrEmpty(e.Before), "before")
	check(isObjectOrEmpty(e.After), "after")
	if e.Type == TopicBookingCancelled && e.Reason != "" &&
		e.Reason != CancelledFromQueue && e.Reason != CancelledFromActive && e.Reason != CancelledAbandoned {
		missing = append(missing, "reason (queue|active|abandoned)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s: bad or missing %s", ErrInvalid, e.Type, strings.Join(missing, ", "))
	}
	return nil
}

// isObjectOrEmpty: absent, or a JSON object.
func isObjectOrEmpty(b json.RawMessage) bool {
	if len(b) == 0 {
		return true
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// isCurrency: three upper-case letters (an ISO 4217 code's form).
func isCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := range 3 {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

// WithMoney returns e with the payment's amount, in the currency's minor
// unit (cents), and ISO 4217 currency. An amount of 0 leaves both unset.
func (e Event) WithMoney(amount int64, currency string) Event {
	if amount > 0 {
		e.Amount, e.Currency = amount, currency
	}
	return e
}

// WithSource returns e published by deployment source (SourceFor).
func (e Event) WithSource(source string) Event {
	e.Source = source
	return e
}

// idNamespace is the UUIDv5 namespace of envelope ids. Changing it changes
// every id and breaks consumers' dedupe: never change it.
var idNamespace = uuid.MustParse("6f1e8a4c-3b2d-5e7f-9a0b-1c2d3e4f5a6b")

// ID returns the envelope id of a fact: a UUIDv5 of
// "type|event_id|user_id|sequence|payment_id". Publishing the same fact again
// (a retry, a redelivered message that is handled twice) gives the same id,
// which is what consumers dedupe on. Time is deliberately not part of it.
func ID(typ, eventID, userID string, seq int64, paymentID string) string {
	// uuid.NewSHA1(idNamespace, name) without its allocations (a fact
	// goes to Kafka on every join): SHA-1 of the namespace and the name,
	// then the version (5) and variant bits; TestIDIsStable pins the result
	var stack [160]byte
	b := append(stack[:0], idNamespace[:]...)
	b = append(append(b, typ...), '|')
	b = append(append(b, eventID...), '|')
	b = append(append(b, userID...), '|')
	b = append(strconv.AppendInt(b, seq, 10), '|')
	b = append(b, paymentID...)
	sum := sha1.Sum(b)
	var u uuid.UUID
	copy(u[:], sum[:])
	u[6] = u[6]&0x0f | 5<<4
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}

func newEvent(typ, eventID, userID, seatID, paymentID string, seq int64, reason string, at time.Time) Event {
	at = at.UTC().Truncate(time.Millisecond)
	var seats []string
	if strings.Contains(seatID, ",") { // an order of several seats
		seats = strings.Split(seatID, ",")
	}
	return Event{
		ID:         ID(typ, eventID, userID, seq, paymentID),
		Type:       typ,
		Version:    SchemaVersion,
		Source:     DefaultSource,
		OccurredAt: at,
		UserID:     userID,
		EventID:    eventID,
		SeatID:     seatID,
		SeatIDs:    seats,
		PaymentID:  paymentID,
		Sequence:   seq,
		Reason:     reason,
		Timestamp:  at.Unix(),
	}
}

// BookingRequested is the booking_request fact: userID joined the queue of
// eventID with join sequence number seq.
func BookingRequested(eventID, userID string, seq int64, at time.Time) Event {
	return newEvent(TopicBookingRequest, eventID, userID, "", "", seq, "", at)
}

// UserPromoted is the user_promoted fact: the join seq of userID was
// admitted to the booking room.
func UserPromoted(eventID, userID string, seq int64, at time.Time) Event {
	return newEvent(TopicUserPromoted, eventID, userID, "", "", seq, "", at)
}

// PaymentInitiated is the payment_initiated fact: paymentID was created for
// the seat userID holds.
func PaymentInitiated(eventID, userID, seatID, paymentID string, seq int64, at time.Time) Event {
	return newEvent(TopicPaymentInitiated, eventID, userID, seatID, paymentID, seq, "", at)
}

// BookingCompleted is the booking_completed fact: paymentID succeeded and
// seatID is sold to userID.
func BookingCompleted(eventID, userID, seatID, paymentID string, seq int64, at time.Time) Event {
	return newEvent(TopicBookingCompleted, eventID, userID, seatID, paymentID, seq, "", at)
}

// PaymentFailed is the payment_failed fact: the provider reported paymentID
// failed for reason (insufficient_funds, timeout, cancelled, ...). seatID may
// be empty.
func PaymentFailed(eventID, userID, seatID, paymentID string, seq int64, reason string, at time.Time) Event {
	return newEvent(TopicPaymentFailed, eventID, userID, seatID, paymentID, seq, reason, at)
}

// BookingCancelled is the booking_cancelled fact: userID left, from the
// queue (CancelledFromQueue) or the booking room (CancelledFromActive),
// releasing seatID if one was held, or was dropped from the queue for
// absence (CancelledAbandoned). from is carried in the reason field.
func BookingCancelled(eventID, userID, seatID string, seq int64, from string, at time.Time) Event {
	return newEvent(TopicBookingCancelled, eventID, userID, seatID, "", seq, from, at)
}

// BookingExpired is the booking_expired fact: the booking-room hold of join
// seq timed out, releasing seatID if one was held.
func BookingExpired(eventID, userID, seatID string, seq int64, at time.Time) Event {
	return newEvent(TopicBookingExpired, eventID, userID, seatID, "", seq, "", at)
}

// PaymentLate is the payment_late fact: paymentID succeeded after the hold
// was released; no booking was made and the payment is to be refunded.
func PaymentLate(eventID, userID, seatID, paymentID string, seq int64, at time.Time) Event {
	return newEvent(TopicPaymentLate, eventID, userID, seatID, paymentID, seq, "", at)
}

// QueueRandomized is the queue_randomized fact: the pre-queue of eventID,
// count users, was drawn; reason is "seed=<hex> commit=<hex>
// digest=<hex>", digest the hex SHA-256 of the drawn order (each user id
// followed by "\n"). user_id is RestoredBy (the system).
func QueueRandomized(eventID string, count int64, seed, commit, digest string, at time.Time) Event {
	return newEvent(TopicQueueRandomized, eventID, RestoredBy, "", "", count, "seed="+seed+" commit="+commit+" digest="+digest, at)
}

// RestoredBy is the user_id of an event_restored fact, and of every fact
// about an event rather than a user (event_created, event_updated,
// event_sold_out): the system did it.
const RestoredBy = "system"

// EventRestored is the event_restored fact: eventID's Redis state was
// rebuilt from the ledger; new joins continue after join sequence seqBase
// (unique per rebuild, so the fact's id is too). reason says what was
// rebuilt: "seats=<n> sold=<n> completed_users=<n>".
func EventRestored(eventID string, seqBase int64, reason string, at time.Time) Event {
	return newEvent(TopicEventRestored, eventID, RestoredBy, "", "", seqBase, reason, at)
}

// EventCreated is the event_created fact: eventID was created with the
// settings in reason ("seats=<n> capacity=<n> hold_seconds=<n> ...", keys
// sorted). One per event: its id has no sequence.
func EventCreated(eventID, settings string, at time.Time) Event {
	return newEvent(TopicEventCreated, eventID, RestoredBy, "", "", 0, settings, at)
}

// EventUpdated is the event_updated fact: the settings change number
// revision (1, 2, ...) of eventID, reason saying what changed with the new
// values ("capacity=3 paused=true", keys sorted). One per change.
func EventUpdated(eventID string, revision int64, change string, at time.Time) Event {
	return newEvent(TopicEventUpdated, eventID, RestoredBy, "", "", revision, change, at)
}

// EventSoldOut is the event_sold_out fact: the last seat of eventID was
// sold at at. One per event (sold seats are never freed).
func EventSoldOut(eventID string, at time.Time) Event {
	return newEvent(TopicEventSoldOut, eventID, RestoredBy, "", "", 0, "", at)
}

// NoEvent is the event_id (and Kafka key) of an operator_action that
// concerns no concert (an account, a token): not a valid event id, so it
// never names one.
const NoEvent = "*"

// OperatorAction is the operator_action fact of audit record number id:
// operator (the account, or "jwt:SUB" for a development bearer JWT) did
// action at at, via a session, token, jwt or cli, with role, from
// remoteAddr; eventID is the concert (NoEvent for none), target what else
// the action was done to, before and after the values it changed (JSON
// objects, nil for none). One per record: its id is built from id, and
// occurred_at is the record's time, so a republished copy is
// byte-identical.
func OperatorAction(id int64, at time.Time, operator, via, role, action, eventID, target, remoteAddr string, before, after json.RawMessage) Event {
	if eventID == "" {
		eventID = NoEvent
	}
	e := newEvent(TopicOperatorAction, eventID, operator, "", "", id, "", at)
	e.Action, e.Target, e.Via, e.Role, e.RemoteAddr, e.Before, e.After = action, target, via, role, remoteAddr, before, after
	return e
}
