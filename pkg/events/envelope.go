package events

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice/pkg/jsonobj"
)

// The JSON envelope: what a fact looks like on a topic (wireEvent, whose
// tags also describe it in docs/schemas), written without reflection and
// read back with the contract checked (Decode).

// occurredAtLayout is RFC 3339 with exactly three fractional digits, in UTC.
const occurredAtLayout = "2006-01-02T15:04:05.000Z07:00"

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
	Phase      string          `json:"phase,omitempty" jsonschema:"minLength=1" jsonschema_description:"booking_completed and payment_late: the phase of the concert's sale current when the seats were sold (the ledger's record of the order); absent when the sale had none. Version 3, additive."`
	Channel    string          `json:"channel,omitempty" jsonschema:"minLength=1" jsonschema_description:"booking_completed: the channel a box-office sale went through (box_office unless the operator named another; user_id is then box-office:<sale id>); absent for a fan's order through the queue. Version 3, additive."`
	Action     string          `json:"action,omitempty" jsonschema:"minLength=1" jsonschema_description:"operator_action: what the operator did, e.g. event.update (docs/operators.md lists them)."`
	Target     string          `json:"target,omitempty" jsonschema:"minLength=1" jsonschema_description:"operator_action: what the action was done to besides the concert: an order id, an account name."`
	Via        string          `json:"via,omitempty" jsonschema:"enum=session,enum=token,enum=jwt,enum=cli,enum=system" jsonschema_description:"operator_action: how the operator was signed in: a browser session, an API token, a bearer JWT (development), or the gateway's operators command; system when no operator acted (the payment provider's breaker, a phase schedule)."`
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
	var tb [32]byte
	ts := appendOccurredAt(tb[:0], e.OccurredAt)
	o.StrBytes("occurred_at", ts)
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
	o.StrOmitEmpty("phase", e.Phase)
	o.StrOmitEmpty("channel", e.Channel)
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

// appendOccurredAt appends t as occurred_at: t.UTC() in occurredAtLayout
// (the milliseconds truncated, as time.Format does), written digit by
// digit for years 0 to 9999, where time.Format's parsing of the layout
// was most of the envelope's cost (BenchmarkEnvelope;
// TestOccurredAtIsTimeFormats).
func appendOccurredAt(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, occurredAtLayout)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/int(time.Millisecond), 3)
	return append(b, 'Z')
}

// appendDigits appends the n lowest decimal digits of v (v >= 0),
// zero-padded.
func appendDigits(b []byte, v, n int) []byte {
	var d [4]byte
	for i := n - 1; i >= 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[:n]...)
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
		Phase:      w.Phase,
		Channel:    w.Channel,
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
