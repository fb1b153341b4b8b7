package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/receipt"
)

// TestResponsesEncodeLikeEncodingJSON: the hand-written encoders of the hot
// responses write exactly what encoding/json (gin's c.JSON) would.
func TestResponsesEncodeLikeEncodingJSON(t *testing.T) {
	strs := []string{"", "queued", "evt-1", "a\"b", `back\slash`, "<tag>&", "é", "tab\there", "\x7f", "\xff"}
	eta := int64(42)
	for i, s := range strs {
		for _, n := range []int64{0, 1, -3, 1 << 40} {
			j := joinResponse{Success: i%2 == 0, Status: s, State: strs[(i+1)%len(strs)], Position: n, Sequence: n * 2,
				ExpireTime: n, ExpireAt: s}
			check(t, &j, j.appendJSON(nil))
			j.Receipt = &receipt.Receipt{Leaf: receipt.Leaf{EventID: "evt-1", Seq: n, JoinedMS: n, User: "ab12"},
				Index: n, Path: make([]receipt.Hash, i%3), Root: "eyJ.eyJ.sig"}
			check(t, &j, j.appendJSON(nil))
			p := positionResponse{Status: s, State: strs[(i+2)%len(strs)], EventID: strs[(i+3)%len(strs)], Position: n,
				Sequence: n, Served: n, Waiting: -n, SeatID: s, PaymentID: strs[(i+4)%len(strs)], ExpireTime: n, ExpireAt: s,
				SoldOut: n > 0}
			check(t, &p, p.appendJSON(nil))
			p.ETASeconds = &eta
			check(t, &p, p.appendJSON(nil))
			for _, c := range []float64{0, 0.01, 0.57, 0.99, 1} {
				p.Chance = &c
				check(t, &p, p.appendJSON(nil))
			}
		}
	}
}

func check(t *testing.T, v any, got []byte) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("encoding differs:\n got %s\nwant %s", got, want)
	}
}

// BenchmarkJoinResponse and BenchmarkPositionResponse: the two hot answers
// by their hand-written encoders (pkg/jsonobj) and by encoding/json
// (docs/benchmarks.md, "pkg/jsonobj").
func BenchmarkJoinResponse(b *testing.B) {
	r := joinResponse{Success: true, Status: "queued", State: "waiting", Position: 48213, Sequence: 1048213}
	benchEncode(b, &r, r.appendJSON)
}

func BenchmarkPositionResponse(b *testing.B) {
	eta := int64(912)
	r := positionResponse{Status: "queued", State: "waiting", EventID: "stadium-tour", Position: 48213,
		Sequence: 1048213, Served: 1000000, Waiting: 912345, ETASeconds: &eta, Chance: new(0.57)}
	benchEncode(b, &r, r.appendJSON)
}

func benchEncode(b *testing.B, v any, appendJSON func([]byte) []byte) {
	b.Run("jsonobj", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendJSON(buf[:0])
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPlainEventRequestAgreesWithBind: the join body's fast reader takes
// only bodies that Bind (httpapi.DecodeJSON) reads without error, and reads
// them to the same request; it takes the plain form clients send.
func TestPlainEventRequestAgreesWithBind(t *testing.T) {
	taken := 0
	for _, body := range []string{
		`{"event_id":"evt-1"}`, `{"event_id":"concert_2026.final"}`, `{"event_id":""}`, `{"event_id":"a b"}`,
		`{"event_id":"evt\"1"}`, `{"event_id":"evt\\1"}`, `{"event_id":"\u0065vt"}`, `{"event_id":"é"}`,
		`{"event_id":"evt-1","x":1}`, `{"event_id":"evt-1"} `, ` {"event_id":"evt-1"}`, `{"EVENT_ID":"evt-1"}`,
		`{"event_id":"evt-1"}{}`, `{"event_id":"evt-1"`, `{"event_id":"`, `{"event_id":""}"}`, `{"event_id":"x"}"}`,
		`{"event_id": "evt-1"}`, `{"event_id":"` + strings.Repeat("a", 300) + `"}`, "{\"event_id\":\"a\x01\"}",
	} {
		got, ok := plainEventRequest([]byte(body))
		var want eventRequest
		err := httpapi.DecodeJSON([]byte(body), &want)
		if ok {
			taken++
			if err != nil || got != want {
				t.Errorf("%s: fast reader took %+v, Bind gives %+v, %v", body, got, want, err)
			}
		}
	}
	if _, ok := plainEventRequest([]byte(`{"event_id":"evt-1"}`)); !ok || taken < 2 {
		t.Errorf("the plain form was not taken (%d bodies taken)", taken)
	}
}

func BenchmarkJoinBody(b *testing.B) {
	body := []byte(`{"event_id":"stadium-tour-2026"}`)
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := plainEventRequest(body); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("DecodeJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r eventRequest
			if err := httpapi.DecodeJSON(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
