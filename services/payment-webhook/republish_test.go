package main

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// TestRepeatedWebhooksRepublishByteIdenticalRecords: a success webhook and
// a failure webhook, each repeated minutes later (the clock moves), publish
// booking_completed and payment_failed twice on the real brokers; the two
// Kafka records of each fact are the same bytes (key, value and the
// headers but request_id), time included.
func TestRepeatedWebhooksRepublishByteIdenticalRecords(t *testing.T) {
	hs, brokers := newBrokerHarness(t)
	ann, bob := hs.pending("ann", "A1"), hs.pending("bob", "A2")
	for range 2 {
		if r := hs.signed(payment.PathSuccess, body("ann", "A1", ann, "")); r.code != 200 {
			t.Fatalf("success: %d %s", r.code, r.raw)
		}
		if r := hs.signed(payment.PathFailure, failBody("bob", "A2", bob, "insufficient_funds")); r.code != 200 {
			t.Fatalf("failure: %d %s", r.code, r.raw)
		}
		hs.skew.Add(int64(5 * time.Minute))
	}

	got := consumeExactly(t, brokers, map[string]int{events.TopicBookingCompleted: 2, events.TopicPaymentFailed: 2})
	for _, pair := range got {
		if a, b := record(pair[0]), record(pair[1]); a != b {
			t.Errorf("republished record differs:\n%s\n%s", a, b)
		}
	}
}

// record is a Kafka record's bytes: key, value and headers, except the
// request_id header, which traces the request that published this copy.
func record(m kafka.Message) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "key=%q value=%s", m.Key, m.Value)
	for _, h := range m.Headers {
		if h.Key != events.HeaderRequestID {
			fmt.Fprintf(&b, " %s=%q", h.Key, h.Value)
		}
	}
	return b.String()
}
