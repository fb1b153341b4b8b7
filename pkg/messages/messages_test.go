package messages

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_123)
	to := NewTimeout("e1", "u1", 7, at.Add(10*time.Minute), at)
	b, _ := json.Marshal(to)
	got, err := DecodeTimeout(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(to, got); diff != "" {
		t.Fatalf("timeout round trip (-want +got):\n%s", diff)
	}
	if !got.Deadline().Equal(at.Add(10 * time.Minute)) {
		t.Fatalf("deadline %v", got.Deadline())
	}
	sr := NewSlotReleased("e1", ReasonTimeout, at)
	b, _ = json.Marshal(sr)
	gs, err := DecodeSlotReleased(b)
	if err != nil || gs != sr {
		t.Fatalf("slot released round trip: %+v %v", gs, err)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func([]byte) error
		body string
	}{
		{"slot not json", func(b []byte) error { _, err := DecodeSlotReleased(b); return err }, "{"},
		{"slot no event", func(b []byte) error { _, err := DecodeSlotReleased(b); return err }, `{"reason":"timeout"}`},
		{"timeout no user", func(b []byte) error { _, err := DecodeTimeout(b); return err }, `{"event_id":"e"}`},
		{"timeout wrong type", func(b []byte) error { _, err := DecodeTimeout(b); return err }, `{"event_id":"e","user_id":3}`},
		{"notification no type", func(b []byte) error { _, err := DecodeNotification(b); return err }, `{"event_id":"e"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn([]byte(tc.body)); !errors.Is(err, ErrMalformed) {
				t.Fatalf("want ErrMalformed, got %v", err)
			}
		})
	}
}
