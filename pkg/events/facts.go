package events

import (
	"crypto/sha1"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// The facts, one constructor per type, and their deterministic ids: a
// fact published twice carries the same id.

// WithMoney returns e with the payment's amount, in the currency's minor
// unit (cents), and ISO 4217 currency. An amount of 0 leaves both unset.
func (e Event) WithMoney(amount int64, currency string) Event {
	if amount > 0 {
		e.Amount, e.Currency = amount, currency
	}
	return e
}

// WithChannel returns e with the channel a box-office sale went through
// ("" leaves it unset).
func (e Event) WithChannel(channel string) Event {
	e.Channel = channel
	return e
}

// WithPhase returns e with the sale's phase its seats were sold in
// ("" leaves it unset).
func (e Event) WithPhase(phase string) Event {
	e.Phase = phase
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
// absence (CancelledAbandoned) or at the end of the phase they joined in
// (CancelledPhaseEnded). from is carried in the reason field.
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
// With a beacon round (b.Round > 0) the reason goes on with " beacon_round=<n>
// beacon=<hex> beacon_source=<source, query-escaped>", and
// " beacon_signature=<hex>" when the value was taken from the round's
// signature (fairness.Beacon.Signature).
func QueueRandomized(eventID string, count int64, seed, commit, digest string, b fairness.Beacon, at time.Time) Event {
	reason := "seed=" + seed + " commit=" + commit + " digest=" + digest
	if b.Round > 0 {
		reason += " beacon_round=" + strconv.FormatInt(b.Round, 10) + " beacon=" + b.Value + " beacon_source=" + url.QueryEscape(b.Source)
		if b.Signature != "" {
			reason += " beacon_signature=" + b.Signature
		}
	}
	return newEvent(TopicQueueRandomized, eventID, RestoredBy, "", "", count, reason, at)
}

// PhaseQueueRandomized is the queue_randomized fact of a later phase's
// pre-queue (phase, its id): QueueRandomized's, its reason followed by
// " phase=<id>", its id made from the phase too, so each phase's draw is
// its own record; a beacon round (b.Round > 0) as QueueRandomized's.
func PhaseQueueRandomized(eventID, phase string, count int64, seed, commit, digest string, b fairness.Beacon,
	at time.Time) Event {
	e := QueueRandomized(eventID, count, seed, commit, digest, b, at)
	e.Reason += " phase=" + phase
	e.ID = ID(TopicQueueRandomized, eventID, RestoredBy, count, "phase:"+phase)
	return e
}

// AdmissionLogged is the admission_logged fact: entry index (from 1) of
// eventID's admission log, the admission of join seq at at (Redis's
// clock), with its reason, the user's salted hash and the chain's hashes
// (docs/fairness.md), as reason "seq=<n> user_hash=<hex> reason=<word>
// prev=<hex> hash=<hex>". Its id is the entry's index: every copy of an
// entry is the same record.
func AdmissionLogged(eventID string, index, seq int64, userHash, reason, prev, hash string, at time.Time) Event {
	return newEvent(TopicAdmissionLogged, eventID, RestoredBy, "", "", index,
		"seq="+strconv.FormatInt(seq, 10)+" user_hash="+userHash+" reason="+reason+" prev="+prev+" hash="+hash, at)
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

// ProviderDegraded is the provider_degraded fact: the hold clocks of
// eventID stopped at pausedSince (also the fact's sequence, in unix ms, so
// one outage has one id) with holds users in the room; reason is
// "holds=<n> by=<who>" (by: operator, breaker or unconfirmed).
func ProviderDegraded(eventID string, pausedSince time.Time, holds int64, by string) Event {
	return newEvent(TopicProviderDegraded, eventID, RestoredBy, "", "", pausedSince.UnixMilli(),
		"holds="+strconv.FormatInt(holds, 10)+" by="+by, pausedSince)
}

// ProviderRecovered is the provider_recovered fact: the hold clocks of
// eventID, stopped at pausedSince (the sequence, as in ProviderDegraded),
// restarted at at with holds users in the room, each hold's deadline
// moved by the pause; reason is "holds=<n> paused_ms=<n> by=<who>".
func ProviderRecovered(eventID string, pausedSince time.Time, holds int64, by string, at time.Time) Event {
	return newEvent(TopicProviderRecovered, eventID, RestoredBy, "", "", pausedSince.UnixMilli(),
		"holds="+strconv.FormatInt(holds, 10)+" paused_ms="+strconv.FormatInt(at.Sub(pausedSince).Milliseconds(), 10)+" by="+by, at)
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

// OrderCancelled is the order_cancelled fact of cancellation number id:
// seatIDs (joined by ',') of userID's order paid with paymentID were
// cancelled for reason and are back on sale; amount in currency is to be
// refunded (refund_issued follows). One per cancellation: its id is
// built from the cancellation's number, so a republished copy dedupes.
func OrderCancelled(id int64, eventID, userID, seatIDs, paymentID, reason string, amount int64, currency string, at time.Time) Event {
	return newEvent(TopicOrderCancelled, eventID, userID, seatIDs, paymentID, id, reason, at).WithMoney(amount, currency)
}

// RefundIssued is the refund_issued fact of cancellation number id: the
// provider confirmed the refund of amount in currency for the cancelled
// seatIDs of userID's order paid with paymentID. One per cancellation.
func RefundIssued(id int64, eventID, userID, seatIDs, paymentID, reason string, amount int64, currency string, at time.Time) Event {
	return newEvent(TopicRefundIssued, eventID, userID, seatIDs, paymentID, id, reason, at).WithMoney(amount, currency)
}

// SeatsHeld, SeatsKilled and SeatsReleased are the facts of change number
// id of the seats operators keep off sale (pkg/ledger's seat marks):
// operator held seatIDs (joined by ',') for purpose, killed them, or
// released them to sale. One per change: its id is built from the
// change's number, so a republished copy dedupes.
func SeatsHeld(id int64, eventID, operator, seatIDs, purpose string, at time.Time) Event {
	return newEvent(TopicSeatsHeld, eventID, operator, seatIDs, "", id, purpose, at)
}

// SeatsKilled is the seats_killed fact (SeatsHeld).
func SeatsKilled(id int64, eventID, operator, seatIDs string, at time.Time) Event {
	return newEvent(TopicSeatsKilled, eventID, operator, seatIDs, "", id, "", at)
}

// SeatsReleased is the seats_released fact (SeatsHeld).
func SeatsReleased(id int64, eventID, operator, seatIDs string, at time.Time) Event {
	return newEvent(TopicSeatsReleased, eventID, operator, seatIDs, "", id, "", at)
}

// SeatsAllocated is the seats_allocated fact of change number id:
// operator allocated seatIDs (joined by ',') to a channel; reason is
// "channel=<channel>".
func SeatsAllocated(id int64, eventID, operator, seatIDs, reason string, at time.Time) Event {
	return newEvent(TopicSeatsAllocated, eventID, operator, seatIDs, "", id, reason, at)
}

// AllocationReleased is the allocation_released fact of change number
// id: channel's allocation ended, seatIDs (joined by ',', "" none) went
// on sale; reason "channel=<channel>"; operator is who ended it ("system"
// at its release time).
func AllocationReleased(id int64, eventID, operator, seatIDs, reason string, at time.Time) Event {
	return newEvent(TopicAllocationReleased, eventID, operator, seatIDs, "", id, reason, at)
}

// CodeRedeemed is the code_redeemed fact: userID's join seq of eventID
// used access code codeID (its use-th use; phase "" for a code of every
// phase). One per join: its id is built from the join's sequence.
func CodeRedeemed(eventID, userID string, seq, codeID, use int64, phase string, at time.Time) Event {
	reason := "code_id=" + strconv.FormatInt(codeID, 10) + " phase=" + phase + " use=" + strconv.FormatInt(use, 10)
	return newEvent(TopicCodeRedeemed, eventID, userID, "", "", seq, reason, at)
}

// PhaseStarted is the phase_started fact of change number id of an
// event's phase: operator made phase the current one, open to audience.
func PhaseStarted(id int64, eventID, operator, phase, audience string, at time.Time) Event {
	return newEvent(TopicPhaseStarted, eventID, operator, "", "", id, "audience="+audience+" phase="+phase, at)
}

// PhaseEnded is the phase_ended fact of the same change: phase ended.
func PhaseEnded(id int64, eventID, operator, phase string, at time.Time) Event {
	return newEvent(TopicPhaseEnded, eventID, operator, "", "", id, "phase="+phase, at)
}

// RegistrationOpened is the registration_opened fact: operator set
// eventID's registration window for phase, opens to closes, committed to
// the draw's seed by commit (hex SHA-256). Its sequence is opens in unix
// ms, so a changed window is a fact of its own.
func RegistrationOpened(eventID, operator, phase, commit string, opens, closes time.Time) Event {
	reason := "closes=" + closes.UTC().Format(time.RFC3339) + " commit=" + commit + " opens=" + opens.UTC().Format(time.RFC3339) + " phase=" + phase
	return newEvent(TopicRegistrationOpened, eventID, operator, "", "", opens.UnixMilli(), reason, opens)
}

// Registered is the registered fact: registration number id, userID
// registered for eventID's registered phase.
func Registered(id int64, eventID, userID string, at time.Time) Event {
	return newEvent(TopicRegistered, eventID, userID, "", "", id, "", at)
}

// SelectionDrawn is the selection_drawn fact: operator selected selected
// of registered fans by method (draw: with seed, revealed; first_come).
func SelectionDrawn(eventID, operator, method, seed string, selected, registered int, at time.Time) Event {
	reason := "method=" + method + " registered=" + strconv.Itoa(registered) + " seed=" + seed + " selected=" + strconv.Itoa(selected)
	return newEvent(TopicSelectionDrawn, eventID, operator, "", "", 0, reason, at)
}

// WaitlistJoined is the waitlist_joined fact: userID joined the waitlist
// of eventID with sequence seq, wanting seats seats.
func WaitlistJoined(eventID, userID string, seq int64, seats string, at time.Time) Event {
	return newEvent(TopicWaitlistJoined, eventID, userID, "", "", seq, "seats="+seats, at)
}

// OfferMade is the offer_made fact: seatIDs (joined by ',') were offered
// to userID, whose waitlist sequence is seq, held until deadline.
func OfferMade(eventID, userID, seatIDs string, seq int64, deadline, at time.Time) Event {
	return newEvent(TopicOfferMade, eventID, userID, seatIDs, "", seq, "deadline_ms="+strconv.FormatInt(deadline.UnixMilli(), 10), at)
}

// OfferEnded is the fact of how the offer seq of userID ended: outcome
// "accepted", "declined" or "expired" (offer_accepted, offer_declined,
// offer_expired); false for another outcome.
func OfferEnded(eventID, userID, seatIDs string, seq int64, outcome string, at time.Time) (Event, bool) {
	typ, ok := map[string]string{"accepted": TopicOfferAccepted, "declined": TopicOfferDeclined, "expired": TopicOfferExpired}[outcome]
	if !ok {
		return Event{}, false
	}
	return newEvent(typ, eventID, userID, seatIDs, "", seq, "", at), true
}
