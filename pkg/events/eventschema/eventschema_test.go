package eventschema_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/eventschema"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

var update = flag.Bool("update", false, "rewrite docs/schemas from the Go types")

// dir is the checked-in schemas' directory, from this package's directory.
var dir = filepath.Join("..", "..", "..", eventschema.Dir)

// TestSchemasAreCheckedIn fails when the schemas generated from the Go
// types differ from the files under docs/schemas (run with -update after a
// deliberate change, and follow the compatibility rules of
// docs/events-kafka.md).
func TestSchemasAreCheckedIn(t *testing.T) {
	gen, err := eventschema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for typ, b := range gen {
			if err := os.WriteFile(filepath.Join(dir, typ+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for typ, b := range gen {
		got, err := os.ReadFile(filepath.Join(dir, typ+".json"))
		if err != nil {
			t.Errorf("%s: %v (go test ./events/eventschema -update writes it)", typ, err)
			continue
		}
		if string(got) != string(b) {
			t.Errorf("%s: the checked-in schema differs from the code (go test ./events/eventschema -update):\n%s", typ, b)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != len(gen) {
		t.Errorf("%d schema files for %d types", len(files), len(gen))
	}
}

var at = time.Date(2026, 3, 14, 12, 0, 0, 123_000_000, time.UTC)

func oneOfEach() []events.Event {
	return []events.Event{
		events.BookingRequested("event_456", "user_123", 1234, at),
		events.UserPromoted("event_456", "user_123", 1234, at),
		events.PaymentInitiated("event_456", "user_123", "A12", "pay_789", 1234, at).WithMoney(5000, "EUR"),
		events.BookingCompleted("event_456", "user_123", "A12", "pay_789", 1234, at).WithMoney(5000, "EUR"),
		events.PaymentFailed("event_456", "user_123", "A12", "pay_789", 1234, "insufficient_funds", at),
		events.BookingCancelled("event_456", "user_123", "A12", 1234, events.CancelledFromActive, at),
		events.BookingExpired("event_456", "user_123", "", 1234, at),
		events.PaymentLate("event_456", "user_123", "A12", "pay_789", 1234, at).WithMoney(5000, "EUR"),
		events.EventRestored("event_456", 1773489600123000, "seats=100 sold=3 completed_users=3", at),
		events.EventCreated("event_456", "capacity=100 hold_seconds=600 seats=500", at),
		events.EventUpdated("event_456", 2, "capacity=150 paused=false", at),
		events.EventSoldOut("event_456", at),
		events.QueueRandomized("event_456", 1000, "5eed", "c0ffee", "d19e57", fairness.Beacon{}, at),
		events.AdmissionLogged("event_456", 1, 1234, "9a3c", "promoted", "0b1d", "77e2", at),
		events.ProviderDegraded("event_456", at, 12, "operator"),
		events.ProviderRecovered("event_456", at, 12, "breaker", at.Add(time.Minute)),
		events.OperatorAction(42, at, "alice", "session", "operator", "event.update", "event_456", "", "203.0.113.7",
			[]byte(`{"capacity":100,"paused":false}`), []byte(`{"capacity":150,"paused":true}`)),
		events.OrderCancelled(7, "event_456", "user_123", "A12,A13", "pay_789", "double charge", 10000, "EUR", at),
		events.RefundIssued(7, "event_456", "user_123", "A12,A13", "pay_789", "double charge", 10000, "EUR", at),
		events.SeatsHeld(8, "event_456", "alice", "A1,A2", "sponsor", at),
		events.SeatsKilled(9, "event_456", "alice", "K1", at),
		events.SeatsReleased(10, "event_456", "alice", "A1,A2", at),
		events.SeatsAllocated(12, "event_456", "alice", "A1,A2", "channel=partner release_at=2026-03-14T12:00:00Z", at),
		events.AllocationReleased(13, "event_456", "system", "A2", "channel=partner", at),
		events.CodeRedeemed("event_456", "user_123", 12, 7, 1, "fanclub", at),
		events.PhaseStarted(3, "event_456", "otto", "general", "public", at),
		events.PhaseEnded(3, "event_456", "otto", "fanclub", at),
		events.RegistrationOpened("event_456", "otto", "verified", "ab12", at, at.Add(time.Hour)),
		events.Registered(5, "event_456", "user_123", at),
		events.SelectionDrawn("event_456", "otto", "draw", "cd34", 100, 2500, at),
		events.WaitlistJoined("event_456", "user_123", 11, "2", at),
		events.OfferMade("event_456", "user_123", "A1,A2", 11, at.Add(time.Minute), at),
		offerEnded("accepted", at), offerEnded("declined", at), offerEnded("expired", at),
	}
}

func offerEnded(outcome string, at time.Time) events.Event {
	e, _ := events.OfferEnded("event_456", "user_123", "A1", 11, outcome, at)
	return e
}

// TestEveryConstructorValidates: what the Go code writes validates against
// the checked-in schema of its type.
func TestEveryConstructorValidates(t *testing.T) {
	v, err := eventschema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range oneOfEach() {
		b, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Validate(e.Type, b); err != nil {
			t.Errorf("%s: %v\n%s", e.Type, err, b)
		}
		seen[e.Type] = true
	}
	for _, typ := range events.AllTopics {
		if !seen[typ] {
			t.Errorf("no example of %s", typ)
		}
	}
}

// TestSchemasReject: the schemas are not vacuous.
func TestSchemasReject(t *testing.T) {
	v, err := eventschema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := events.Encode(events.BookingCompleted("e", "u", "A1", "p", 1, at).WithMoney(5000, "EUR"))
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	for name, in := range map[string]string{
		"other type":          strings.Replace(good, `"type":"booking_completed"`, `"type":"booking_request"`, 1),
		"version 1":           strings.Replace(good, `"version":3`, `"version":1`, 1),
		"no source":           strings.Replace(good, `"source":"/boxoffice/bo",`, ``, 1),
		"no payment":          strings.Replace(good, `"payment_id":"p",`, ``, 1),
		"amount without code": strings.Replace(good, `,"currency":"EUR"`, ``, 1),
		"bad time":            strings.Replace(good, `.123Z"`, `Z"`, 1),
		"string sequence":     strings.Replace(good, `"sequence":1`, `"sequence":"1"`, 1),
	} {
		if in == good {
			t.Fatalf("%s: input unchanged", name)
		}
		if err := v.Validate(events.TopicBookingCompleted, []byte(in)); err == nil {
			t.Errorf("%s: validated: %s", name, in)
		}
	}
}

// TestOperatorActionSchemaRejects: an operator_action needs its action,
// how the operator signed in and their role, and before/after are objects.
func TestOperatorActionSchemaRejects(t *testing.T) {
	v, err := eventschema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := events.Encode(events.OperatorAction(7, at, "alice", "token", "admin", "account.update", "", "bob", "198.51.100.2",
		[]byte(`{"role":"viewer"}`), []byte(`{"role":"operator"}`)))
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	if err := v.Validate(events.TopicOperatorAction, b); err != nil {
		t.Fatalf("the example does not validate: %v\n%s", err, good)
	}
	for name, in := range map[string]string{
		"no action":      strings.Replace(good, `"action":"account.update",`, ``, 1),
		"unknown via":    strings.Replace(good, `"via":"token"`, `"via":"carrier-pigeon"`, 1),
		"unknown role":   strings.Replace(good, `"role":"admin"`, `"role":"root"`, 1),
		"before a list":  strings.Replace(good, `"before":{"role":"viewer"}`, `"before":["viewer"]`, 1),
		"no sequence":    strings.Replace(good, `"sequence":7,`, ``, 1),
		"other type tag": strings.Replace(good, `"type":"operator_action"`, `"type":"event_updated"`, 1),
	} {
		if in == good {
			t.Fatalf("%s: input unchanged", name)
		}
		if err := v.Validate(events.TopicOperatorAction, []byte(in)); err == nil {
			t.Errorf("%s: validated: %s", name, in)
		}
	}
	if _, err := events.Decode([]byte(strings.Replace(good, `"before":{"role":"viewer"}`, `"before":"viewer"`, 1))); err == nil {
		t.Error("Decode accepted a before that is not an object")
	}
}
