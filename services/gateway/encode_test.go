package main

import (
	"encoding/json"
	"testing"
)

// TestResponsesEncodeLikeEncodingJSON: the hand-written encoders of the hot
// responses write exactly what encoding/json (gin's c.JSON) would.
func TestResponsesEncodeLikeEncodingJSON(t *testing.T) {
	strs := []string{"", "queued", "evt-1", "a\"b", `back\slash`, "<tag>&", "é", "tab\there", "\x7f", "\xff"}
	eta := int64(42)
	for i, s := range strs {
		for _, n := range []int64{0, 1, -3, 1 << 40} {
			j := joinResponse{Success: i%2 == 0, Status: s, State: strs[(i+1)%len(strs)], Position: n, Sequence: n * 2,
				ExpireTime: n, ExpireAt: s, Ticket: strs[(i+5)%len(strs)]}
			check(t, &j, j.appendJSON(nil))
			p := positionResponse{Status: s, State: strs[(i+2)%len(strs)], EventID: strs[(i+3)%len(strs)], Position: n,
				Sequence: n, Served: n, Waiting: -n, SeatID: s, PaymentID: strs[(i+4)%len(strs)], ExpireTime: n, ExpireAt: s,
				SoldOut: n > 0}
			check(t, &p, p.appendJSON(nil))
			p.ETASeconds = &eta
			check(t, &p, p.appendJSON(nil))
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
		Sequence: 1048213, Served: 1000000, Waiting: 912345, ETASeconds: &eta}
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
