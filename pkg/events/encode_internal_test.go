package events

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestEncodeMatchesWireEvent: the hand-written envelope encoder writes
// byte for byte what encoding/json writes for the wireEvent, with and
// without the optional fields and with strings that need escaping.
func TestEncodeMatchesWireEvent(t *testing.T) {
	at := time.Date(2026, 3, 14, 12, 0, 0, 123_456_789, time.FixedZone("x", 3600))
	for _, s := range []string{"u1", `q"uote`, "<&>", "é", "\x01"} {
		for _, e := range []Event{
			BookingRequested("evt", s, 1, at),
			PaymentInitiated("evt", "u", "A1", s+"p", 0, at).WithMoney(5000, "EUR").WithSource("/boxoffice/" + s),
			PaymentFailed("evt", "u", "A1", "p", 9, s, at),
			BookingCancelled("evt", "u", s, 3, CancelledFromActive, at),
			BookingCompleted("evt", "u", "A1,B2,"+s, "p", 4, at).WithMoney(13000, "USD"), // several seats (version 3)
			BookingCompleted("evt", "u", "A1", "p", 5, at).WithMoney(100, "EUR").WithPhase(s),
			BookingCompleted("evt", "box-office:"+s, "A1", "box_evt_"+s, 0, at).WithMoney(100, "EUR").WithChannel(s),
			{ID: s, Type: s, Version: -1, UserID: s, EventID: s, Timestamp: -5},
			OperatorAction(3, at, s, "session", "admin", "account."+s, "", s, "::1",
				mustJSON(t, map[string]string{"name": s}), []byte(`{ "a" : [1, "<b>"] }`)),
			OperatorAction(4, at, "u", "jwt", "admin", "event.restore", "evt", "", "", nil, []byte(`{"sold":2}`)),
		} {
			want, err := json.Marshal(wireEvent{ID: e.ID, Type: e.Type, Version: e.Version, Source: e.Source,
				Amount: e.Amount, Currency: e.Currency, Phase: e.Phase, Channel: e.Channel, OccurredAt: e.OccurredAt.UTC().Format(occurredAtLayout), UserID: e.UserID, EventID: e.EventID,
				SeatID: e.SeatID, SeatIDs: e.SeatIDs, PaymentID: e.PaymentID, Sequence: e.Sequence, Reason: e.Reason,
				Action: e.Action, Target: e.Target, Via: e.Via, Role: e.Role, RemoteAddr: e.RemoteAddr, Before: e.Before, After: e.After,
				Timestamp: e.Timestamp})
			if err != nil {
				t.Fatal(err)
			}
			if got := e.appendJSON(nil); string(got) != string(want) {
				t.Errorf("envelope differs:\n got %s\nwant %s", got, want)
			}
		}
	}
}

// appendOccurredAt writes what time.Format writes with occurredAtLayout,
// in every zone, at the edges of its years and of the fractions.
func TestOccurredAtIsTimeFormats(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	zones := []*time.Location{time.UTC, time.FixedZone("x", 3600), time.FixedZone("y", -5*3600-1800)}
	times := []time.Time{{}, time.Unix(0, 0), time.Unix(0, 999_999_999), time.Unix(-1, 0),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 1_000_000, time.UTC)}
	for range 10000 {
		times = append(times, time.Unix(r.Int64N(400_000_000_000)-100_000_000_000, r.Int64N(1_000_000_000)))
	}
	for _, at := range times {
		for _, z := range zones {
			want := at.In(z).UTC().Format(occurredAtLayout)
			if got := appendOccurredAt([]byte("x"), at.In(z)); string(got[1:]) != want {
				t.Fatalf("%v: %s, want %s", at, got[1:], want)
			}
		}
	}
}

// BenchmarkEnvelope: the booking_request envelope (the gateway's relay
// encodes one per join) by the hand-written encoder and by encoding/json
// of the equivalent wireEvent (docs/benchmarks.md, "pkg/jsonobj against
// encoding/json").
func BenchmarkEnvelope(b *testing.B) {
	e := BookingRequested("stadium-tour", "user-000123456", 123456, time.Now()).WithSource("/boxoffice/prod")
	b.Run("jsonobj", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = e.appendJSON(buf[:0])
		}
	})
	b.Run("Encode", func(b *testing.B) {
		// as the producer calls it: a new slice per event
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Message", func(b *testing.B) {
		// the whole Kafka message with its headers, as Publish builds it
		b.ReportAllocs()
		for b.Loop() {
			if _, err := message(e, "req-0123456789abcdef"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			// what MarshalJSON would do without the hand-written encoder
			if _, err := json.Marshal(wireEvent{ID: e.ID, Type: e.Type, Version: e.Version, Source: e.Source,
				OccurredAt: e.OccurredAt.UTC().Format(occurredAtLayout), UserID: e.UserID, EventID: e.EventID,
				Sequence: e.Sequence, Timestamp: e.Timestamp}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMessageHeaders: the message's key and header values, which share one
// buffer, are each exactly their value and end at their own length (an
// append to one cannot write into the next).
func TestMessageHeaders(t *testing.T) {
	at := time.Date(2026, 3, 14, 12, 0, 0, 123_000_000, time.FixedZone("x", 3600))
	e := BookingRequested("evt-9", "u1", 7, at).WithSource("/boxoffice/prod")
	for _, rid := range []string{"", "req-1"} {
		m, err := message(e, rid)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"id", e.ID, "type", "booking_request", "ce_specversion", "1.0", "ce_id", e.ID,
			"ce_source", "/boxoffice/prod", "ce_type", "boxoffice.booking_request", "ce_time", "2026-03-14T11:00:00.123Z",
			"ce_subject", "evt-9", "content-type", "application/json"}
		if rid != "" {
			want = append(want, HeaderRequestID, rid)
		}
		var got []string
		for _, h := range m.Headers {
			got = append(got, h.Key, string(h.Value))
			if cap(h.Value) != len(h.Value) {
				t.Errorf("header %s: cap %d, len %d", h.Key, cap(h.Value), len(h.Value))
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("request id %q: headers\n%q\nwant\n%q", rid, got, want)
		}
		if string(m.Key) != "evt-9" || cap(m.Key) != len(m.Key) || m.Topic != "booking_request" {
			t.Errorf("key %q (cap %d), topic %q", m.Key, cap(m.Key), m.Topic)
		}
	}
}

// TestIDIsUUIDv5: ID is uuid.NewSHA1 of the joined fields, for fields of
// every length around the stack buffer's size.
func TestIDIsUUIDv5(t *testing.T) {
	for _, n := range []int{0, 1, 30, 120, 200} {
		long := strings.Repeat("é", n)
		want := uuid.NewSHA1(idNamespace, []byte("booking_request|evt|"+long+"|-42|p")).String()
		if got := ID("booking_request", "evt", long, -42, "p"); got != want {
			t.Errorf("user of %d runes: id %s, want %s", n, got, want)
		}
	}
}

func BenchmarkID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ID("booking_request", "stadium-tour", "user-000123456", 123456, "")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ") // indented: the envelope compacts it
	if err != nil {
		t.Fatal(err)
	}
	return b
}
