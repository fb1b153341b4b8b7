package events

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The contract each type keeps: which optional fields it requires.

// requirements per type: which optional fields must be present.
type requirements struct {
	seat, payment, sequence, reason bool
	operator                        bool // action, via, role
}

var required = map[string]requirements{
	TopicBookingRequest:     {sequence: true},
	TopicUserPromoted:       {sequence: true},
	TopicPaymentInitiated:   {seat: true, payment: true},
	TopicBookingCompleted:   {seat: true, payment: true},
	TopicPaymentFailed:      {payment: true, reason: true},
	TopicBookingCancelled:   {sequence: true, reason: true},
	TopicBookingExpired:     {sequence: true},
	TopicPaymentLate:        {payment: true},
	TopicEventRestored:      {sequence: true, reason: true},
	TopicEventCreated:       {reason: true},
	TopicEventUpdated:       {sequence: true, reason: true},
	TopicEventSoldOut:       {},
	TopicQueueRandomized:    {sequence: true, reason: true},
	TopicOperatorAction:     {sequence: true, operator: true},
	TopicOrderCancelled:     {seat: true, payment: true, sequence: true, reason: true},
	TopicRefundIssued:       {seat: true, payment: true, sequence: true, reason: true},
	TopicSeatsHeld:          {seat: true, sequence: true, reason: true},
	TopicSeatsKilled:        {seat: true, sequence: true},
	TopicSeatsReleased:      {seat: true, sequence: true},
	TopicSeatsAllocated:     {seat: true, sequence: true, reason: true},
	TopicAllocationReleased: {sequence: true, reason: true},
	TopicCodeRedeemed:       {sequence: true, reason: true},
	TopicPhaseStarted:       {sequence: true, reason: true},
	TopicPhaseEnded:         {sequence: true, reason: true},
	TopicRegistrationOpened: {sequence: true, reason: true},
	TopicRegistered:         {sequence: true},
	TopicSelectionDrawn:     {reason: true},
	TopicProviderDegraded:   {sequence: true, reason: true},
	TopicProviderRecovered:  {sequence: true, reason: true},
	TopicAdmissionLogged:    {sequence: true, reason: true},
	TopicWaitlistJoined:     {sequence: true, reason: true},
	TopicOfferMade:          {seat: true, sequence: true, reason: true},
	TopicOfferAccepted:      {seat: true, sequence: true},
	TopicOfferDeclined:      {seat: true, sequence: true},
	TopicOfferExpired:       {seat: true, sequence: true},
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
		e.Reason != CancelledFromQueue && e.Reason != CancelledFromActive && e.Reason != CancelledAbandoned &&
		e.Reason != CancelledPhaseEnded {
		missing = append(missing, "reason (queue|active|abandoned|phase_ended)")
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
