package main

import (
	"encoding/json"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// TestLateWebhookAfterRejoinIsRefunded: P1's hold
// and grace expire, the user joins again and pays P2, then P1's success
// webhook arrives: 200 refund with exactly one payment_late (a retry
// republishes the identical fact), and P2 completes normally.
func TestLateWebhookAfterRejoinIsRefunded(t *testing.T) {
	hs := newHarness(t)
	p1 := hs.pending("gus", "A1")
	hs.expire("gus")
	p2 := hs.pendingAs("gus", "A2", "pay_gus_2")
	for i := range 2 {
		r := hs.signed(payment.PathSuccess, body("gus", "A1", p1, ""))
		if r.code != 200 || r.body["outcome"] != "refund" || r.body["refund"] != true {
			t.Fatalf("P1 #%d: %d %s", i, r.code, r.raw)
		}
	}
	late := hs.rec.Topic(events.TopicPaymentLate)
	if len(late) != 2 || late[0].PaymentID != p1 || late[0].Sequence != 1 || late[0].SeatID != "A1" {
		t.Fatalf("payment_late %+v", late)
	}
	a, _ := json.Marshal(late[0])
	b, _ := json.Marshal(late[1])
	if string(a) != string(b) {
		t.Fatalf("the retry published another fact:\n%s\n%s", a, b)
	}
	if st := hs.state("gus"); st.State != booking.StatePaymentPending || st.PaymentID != p2 {
		t.Fatalf("P1 touched the new hold: %+v", st)
	}
	r := hs.signed(payment.PathSuccess, body("gus", "A2", p2, ""))
	if r.code != 200 || r.body["outcome"] != "completed" || r.body["seat_id"] != "A2" {
		t.Fatalf("P2: %d %s", r.code, r.raw)
	}
	done := hs.rec.Topic(events.TopicBookingCompleted)
	if len(done) != 1 || done[0].PaymentID != p2 || done[0].Sequence != 2 {
		t.Fatalf("booking_completed %+v", done)
	}
}

// TestStatusMustMatchPath: a validly signed failure
// posted to the success path (or the reverse, or without a status) is
// rejected with a 4xx and changes nothing.
func TestStatusMustMatchPath(t *testing.T) {
	hs := newHarness(t)
	pid := hs.pending("hal", "A3")
	noStatus, _ := json.Marshal(map[string]string{"user_id": "hal", "event_id": "e1", "payment_id": pid})
	for _, tc := range []struct {
		name, path string
		b          []byte
		code       string
	}{
		{"failure replayed as success", payment.PathSuccess, failBody("hal", "A3", pid, "card_declined"), "status_mismatch"},
		{"success replayed as failure", payment.PathFailure, body("hal", "A3", pid, ""), "status_mismatch"},
		{"no status on success", payment.PathSuccess, noStatus, "invalid_body"},
		{"no status on failure", payment.PathFailure, noStatus, "invalid_body"},
	} {
		r := hs.signed(tc.path, tc.b)
		if r.code != 400 || r.body["code"] != tc.code {
			t.Errorf("%s: %d %s", tc.name, r.code, r.raw)
		}
	}
	if st := hs.state("hal"); st.State != booking.StatePaymentPending || st.PaymentID != pid {
		t.Fatalf("state changed: %+v", st)
	}
	if len(hs.rec.Events()) != 0 || len(hs.ann.Released()) != 0 {
		t.Fatalf("published on a rejected webhook: %+v %v", hs.rec.Events(), hs.ann.Released())
	}
	if r := hs.signed(payment.PathFailure, failBody("hal", "A3", pid, "card_declined")); r.code != 200 || r.body["outcome"] != "failed" {
		t.Fatalf("the real failure: %d %s", r.code, r.raw)
	}
}
