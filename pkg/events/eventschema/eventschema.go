// Package eventschema generates the JSON Schema of each Kafka event type
// from the Go types of package events (the envelope, events.Envelope, and
// each type's required fields, events.RequiredFields), and validates
// messages against the published schemas. The schemas are checked in
// under docs/schemas/v<version>/<type>.json; TestSchemasAreCheckedIn fails
// when code and files differ (go test ./events/eventschema -update
// rewrites them). docs/events-kafka.md has the compatibility rules.
package eventschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/invopop/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// BaseURI starts every schema's $id: BaseURI + "v<version>/<type>.json".
const BaseURI = "https://boxoffice.example/schemas/"

// Dir is where the schemas of the current version live, relative to the
// repository root.
var Dir = filepath.Join("docs", "schemas", "v"+strconv.Itoa(events.SchemaVersion))

// moneyTypes carry amount and currency when the publisher knows them.
var moneyTypes = map[string]bool{
	events.TopicPaymentInitiated: true,
	events.TopicBookingCompleted: true,
	events.TopicPaymentFailed:    true,
	events.TopicPaymentLate:      true,
	events.TopicOrderCancelled:   true,
	events.TopicRefundIssued:     true,
}

// descriptions say what each type's fact is (docs/events-kafka.md has more).
var descriptions = map[string]string{
	events.TopicBookingRequest:   "A user joined the waiting room of a concert.",
	events.TopicUserPromoted:     "A user was admitted from the queue to the booking room.",
	events.TopicPaymentInitiated: "A user holding a seat started a payment.",
	events.TopicBookingCompleted: "A payment succeeded and the seat is sold.",
	events.TopicPaymentFailed:    "The provider reported a failed payment; the hold is released.",
	events.TopicBookingCancelled: "A user left the queue or the booking room, or was dropped from the queue for absence or at the end of the phase they joined in.",
	events.TopicBookingExpired:   "A user's booking-room hold timed out; occurred_at is the hold's deadline.",
	events.TopicPaymentLate:      "A payment succeeded after its hold had ended: no booking was made; it is to be refunded.",
	events.TopicEventRestored:    "An event's Redis state was rebuilt from the ledger.",
	events.TopicEventCreated:     "An event (a concert's sale) was created; reason lists its settings (key=value, keys sorted).",
	events.TopicEventUpdated:     "An event's settings changed; sequence numbers the change, reason says what changed with the new values (key=value, keys sorted).",
	events.TopicEventSoldOut:     "The last seat of an event was sold.",
	events.TopicOrderCancelled: "An operator cancelled seats of a sold order (seat_id, seat_ids), for reason; the seats are back on sale " +
		"and amount is to be refunded (refund_issued follows). sequence numbers the cancellation.",
	events.TopicRefundIssued: "The payment provider confirmed the refund of a cancellation: amount was given back for the cancelled seats. " +
		"sequence is the cancellation's number (its order_cancelled has the same).",
	events.TopicSeatsHeld: "An operator held seats (seat_id, seat_ids) for a purpose (reason): they are off sale until released. " +
		"user_id is the operator, sequence numbers the change.",
	events.TopicSeatsKilled: "An operator killed seats (seat_id, seat_ids): never for sale unless released. " +
		"user_id is the operator, sequence numbers the change.",
	events.TopicSeatsReleased: "An operator released held or killed seats (seat_id, seat_ids) to sale. " +
		"user_id is the operator, sequence numbers the change.",
	events.TopicSeatsAllocated: "An operator allocated seats (seat_id, seat_ids) to a sales channel: only requests through it " +
		"(a token's channel claim, or the event's phase of that id) may take them until the allocation ends. " +
		"reason channel=<channel>; user_id is the operator, sequence numbers the change.",
	events.TopicAllocationReleased: "A channel's allocation ended, at its release time or by an operator: its unsold seats " +
		"(seat_ids, possibly none) are on sale, offered to the waitlist first. reason channel=<channel>; user_id is the " +
		"operator (system at the release time), sequence numbers the change.",
	events.TopicCodeRedeemed: "A fan's join used an access code: sequence is the join's, reason code_id=<the code's number> " +
		"phase=<the phase it opens, empty for every phase> use=<which of its uses, from 1>.",
	events.TopicPhaseStarted: "A phase of the concert's sale started: reason audience=<public|code> phase=<its id>. " +
		"user_id is the operator, sequence numbers the change (its phase_ended, if any, has the same).",
	events.TopicPhaseEnded: "A phase of the concert's sale ended (another started, or none): reason phase=<its id>. " +
		"user_id is the operator, sequence numbers the change.",
	events.TopicRegistrationOpened: "The concert's registration window was set: reason closes=<RFC 3339> commit=<hex SHA-256 of the draw's seed> " +
		"opens=<RFC 3339> phase=<the phase it selects for>; sequence is opens in unix ms; user_id is the operator.",
	events.TopicQueueRandomized: "The concert's pre-queue was closed and drawn: sequence is the closed list's length, reason seed=<hex, revealed> " +
		"commit=<hex SHA-256 of the seed> digest=<hex, the closed list's>, with a randomness beacon committed followed by " +
		"beacon_round=<n> beacon=<hex, the round's value> beacon_source=<the beacon's name, query-escaped>; " +
		"a later phase's pre-queue, drawn at that phase's start, ends it with phase=<the phase's id>.",
	events.TopicRegistered: "A fan (user_id) registered for the concert's registered phase; sequence numbers the registration.",
	events.TopicSelectionDrawn: "The registration's selection was made: reason method=<draw|first_come> registered=<n> seed=<hex, the draw's, " +
		"recomputable with the registrants> selected=<n>; user_id is the operator.",
	events.TopicProviderDegraded: "The payment provider was found or declared degraded: the concert's hold clocks stopped (no hold expires) and admissions paused; " +
		"sequence is when they stopped (unix ms), reason holds=<users in the room> by=<operator|breaker|unconfirmed>.",
	events.TopicProviderRecovered: "The payment provider recovered: the concert's hold clocks restarted with the time each hold had left; " +
		"sequence is when they had stopped (unix ms), reason holds=<users in the room> paused_ms=<the pause> by=<who>.",
	events.TopicWaitlistJoined: "A fan joined the waitlist of a sold-out concert; sequence is their place's number (from the join sequence), " +
		"reason seats=<seats wanted>.",
	events.TopicOfferMade: "Returned seats (seat_id, seat_ids) were offered to the waitlisted fan of sequence, held for them until " +
		"reason's deadline_ms=<unix ms>; accepting is the normal checkout.",
	events.TopicOfferAccepted: "A fan accepted the offer of sequence (seat_id, seat_ids) and goes on to pay.",
	events.TopicOfferDeclined: "A fan declined the offer of sequence (seat_id, seat_ids): the seats go to the next waitlisted fan, or on sale.",
	events.TopicOfferExpired:  "The offer of sequence (seat_id, seat_ids) ran out unanswered; occurred_at is its deadline. The seats go to the next waitlisted fan, or on sale.",
	events.TopicOperatorAction: "An operator changed something: one fact per record of the audit trail (docs/operators.md). user_id is the operator, " +
		"sequence the record's number, event_id the concert or * for none; before and after hold the values the action changed.",
}

// operatorFields are the fields only operator_action carries.
var operatorFields = []string{"action", "target", "via", "role", "remote_addr", "before", "after"}

// Generate returns the JSON Schema of every type (events.AllTopics), keyed
// by type, as indented JSON with a trailing newline.
func Generate() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, typ := range events.AllTopics {
		s, err := schemaOf(typ)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			return nil, fmt.Errorf("eventschema: %s: %w", typ, err)
		}
		out[typ] = b.Bytes()
	}
	return out, nil
}

func schemaOf(typ string) (*jsonschema.Schema, error) {
	req, ok := events.RequiredFields(typ)
	if !ok {
		return nil, fmt.Errorf("eventschema: unknown type %q", typ)
	}
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, AllowAdditionalProperties: true}
	s := r.Reflect(&events.Envelope{})
	s.ID = jsonschema.ID(BaseURI + "v" + strconv.Itoa(events.SchemaVersion) + "/" + typ + ".json")
	s.Title = typ
	s.Description = descriptions[typ] + " Consumers ignore fields they do not know."
	s.Required = req
	set := func(field string, f func(*jsonschema.Schema)) {
		if p, ok := s.Properties.Get(field); ok {
			f(p)
		}
	}
	set("type", func(p *jsonschema.Schema) { p.Const = typ })
	set("version", func(p *jsonschema.Schema) { p.Const = events.SchemaVersion })
	if typ == events.TopicBookingCancelled {
		set("reason", func(p *jsonschema.Schema) {
			p.Enum = []any{events.CancelledFromQueue, events.CancelledFromActive, events.CancelledAbandoned, events.CancelledPhaseEnded}
		})
	}
	if typ == events.TopicEventRestored || typ == events.TopicEventCreated || typ == events.TopicEventUpdated ||
		typ == events.TopicEventSoldOut || typ == events.TopicProviderDegraded || typ == events.TopicProviderRecovered {
		set("user_id", func(p *jsonschema.Schema) { p.Const = events.RestoredBy })
	}
	if typ == events.TopicOrderCancelled || typ == events.TopicRefundIssued {
		set("user_id", func(p *jsonschema.Schema) { p.Description = "The buyer: the order's user." })
		set("sequence", func(p *jsonschema.Schema) {
			p.Description = "The cancellation's number (cancellation_id in the admin API), unique within the deployment."
		})
		set("reason", func(p *jsonschema.Schema) { p.Description = "Why the operator cancelled (their words)." })
	}
	if typ == events.TopicOperatorAction {
		set("user_id", func(p *jsonschema.Schema) {
			p.Description = "The operator: an account name, jwt:SUB for a bearer JWT, cli:USER for the gateway's operators command."
		})
		set("event_id", func(p *jsonschema.Schema) {
			p.Description = "The concert the action concerns, or * for none (an account, a token); also the Kafka message key."
		})
		set("sequence", func(p *jsonschema.Schema) {
			p.Description = "The audit record's number (GET /api/admin/audit), unique within the deployment."
		})
		for _, f := range []string{"before", "after"} {
			set(f, func(p *jsonschema.Schema) { p.Type = "object" })
		}
		for _, f := range []string{"seat_id", "seat_ids", "payment_id", "reason"} {
			s.Properties.Delete(f)
		}
	} else {
		for _, f := range operatorFields {
			s.Properties.Delete(f)
		}
	}
	if moneyTypes[typ] {
		s.DependentRequired = map[string][]string{"amount": {"currency"}, "currency": {"amount"}}
	} else {
		s.Properties.Delete("amount")
		s.Properties.Delete("currency")
	}
	return s, nil
}

// Validator validates message values against the schemas in a directory.
type Validator struct {
	schemas map[string]*sjs.Schema
}

// Load compiles the schema of every type from dir (docs/schemas/v<N>).
func Load(dir string) (*Validator, error) {
	c := sjs.NewCompiler()
	c.AssertFormat()
	v := &Validator{schemas: map[string]*sjs.Schema{}}
	for _, typ := range events.AllTopics {
		b, err := os.ReadFile(filepath.Join(dir, typ+".json"))
		if err != nil {
			return nil, fmt.Errorf("eventschema: %w", err)
		}
		doc, err := sjs.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("eventschema: %s: %w", typ, err)
		}
		url := BaseURI + "v" + strconv.Itoa(events.SchemaVersion) + "/" + typ + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("eventschema: %s: %w", typ, err)
		}
		if v.schemas[typ], err = c.Compile(url); err != nil {
			return nil, fmt.Errorf("eventschema: %s: %w", typ, err)
		}
	}
	return v, nil
}

// Validate checks one message value of topic typ against its schema.
func (v *Validator) Validate(typ string, value []byte) error {
	s, ok := v.schemas[typ]
	if !ok {
		return fmt.Errorf("eventschema: no schema for %q", typ)
	}
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("eventschema: %s: %w", typ, err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("eventschema: %s: %w", typ, err)
	}
	return nil
}
