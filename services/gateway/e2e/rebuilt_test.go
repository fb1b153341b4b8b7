package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
	"github.com/boxoffice/boxoffice/pkg/testseed"
)

// TestSaleOnARebuiltEvent runs a whole sale on an event that Redis lost
// and the safety net rebuilt from PostgreSQL, whose join sequences start
// near 1.8 × 10^15 (now_ms × 1000), where Lua writes a number joined with
// .. in exponent form. Before the sale one buyer pays after its hold ran
// out (a late payment, refunded). The sale's invariants hold
// (stacktest.CheckSale: every final status's fact on Kafka once, seats =
// facts = PostgreSQL orders, RabbitMQ drained), and every fact of every
// topic carries its user's exact join sequence, the outbox drains, the
// payment registry holds whole sequences and the progress document's
// served is the last admitted one.
func TestSaleOnARebuiltEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	s := stacktest.Start(t, stacktest.Options{Services: services})
	tap := stacktest.NewTap(t, s.AMQPURL)
	const ev = "rebuilt"
	s.CreateEvent(t, stacktest.Event{ID: ev, Rows: 2, SeatsPerRow: 10, Capacity: 8, HoldSeconds: 3, GraceSeconds: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	loseAndRebuild(ctx, t, s, ev)
	keys := booking.EventKeys(s.Prefix, ev)
	base, err := s.Redis.Get(ctx, keys[5]).Int64() // the sequence counter
	if err != nil || base < 1e15 {
		t.Fatalf("sequence base after the rebuild %d (%v): want one past 10^15", base, err)
	}
	t.Logf("rebuilt with join sequences after %d", base)

	// a payment that lands after its hold ran out (3 s, 1 s of grace)
	late := s.Client(t, "late-payer", "")
	if err := joinAndHold(ctx, late, ev, "B10"); err != nil {
		t.Fatal(err)
	}
	var ini struct {
		PaymentURL string `json:"payment_url"`
	}
	if code, err := retry(ctx, func() (int, error) {
		return late.Do("POST", "/api/booking/payment/initiate", map[string]string{"event_id": ev}, &ini)
	}); err != nil || code != http.StatusOK {
		t.Fatalf("initiate: %d %v", code, err)
	}
	var lp position
	waitUntil(t, 30*time.Second, func() bool {
		_, _ = late.Do("GET", "/api/booking/position?event_id="+ev, nil, &lp)
		return lp.Status == "expired"
	}, func() string { return fmt.Sprintf("the late payer's hold did not expire: %+v", lp) })
	if code, err := late.Do("POST", ini.PaymentURL+"/pay", url.Values{}, nil); err != nil || code != http.StatusSeeOther {
		t.Fatalf("pay: %d %v", code, err)
	}

	seed := testseed.Seed(t)
	t.Log(testseed.Replay(t, seed), "(the buyers' plans and choices)")
	sale := s.StartSale(t, stacktest.SaleOptions{Event: ev, Users: 40, Seed: seed})
	sale.Wait(150 * time.Second)
	rep := s.CheckSale(t, sale, stacktest.SaleCheck{Tap: tap})
	t.Logf("%d buyers, %d admitted, %d seats sold", rep.Users, rep.Admitted, rep.Sold)
	if t.Failed() {
		return
	}

	// each user's join sequence, as the user was told it
	seqOf := map[string]int64{"late-payer": lp.Sequence}
	for _, b := range sale.Buyers {
		if b.Sequence != 0 {
			seqOf[b.ID] = b.Sequence
		}
	}
	for u, seq := range seqOf {
		if seq <= base || seq > base+int64(len(seqOf)) {
			t.Errorf("%s: join sequence %d, want one of the %d after %d", u, seq, len(seqOf), base)
		}
	}

	// every fact naming a user carries the user's sequence, whole; every
	// join has its booking_request, the late payment its payment_late
	topics := []string{events.TopicBookingRequest, events.TopicUserPromoted, events.TopicBookingExpired,
		events.TopicBookingCancelled, events.TopicPaymentInitiated, events.TopicBookingCompleted,
		events.TopicPaymentFailed, events.TopicPaymentLate}
	var bad []string
	waitUntil(t, 30*time.Second, func() bool {
		bad = bad[:0]
		requested := map[string]bool{}
		lateFacts := 0
		for _, topic := range topics {
			for _, f := range readTopic(t, s.Brokers[0], topic) {
				if f.EventID != ev {
					continue
				}
				if want, ok := seqOf[f.UserID]; !ok || f.Sequence != want {
					bad = append(bad, fmt.Sprintf("%s of %s: sequence %d, the user's is %d", topic, f.UserID, f.Sequence, want))
				}
				switch topic {
				case events.TopicBookingRequest:
					requested[f.UserID] = true
				case events.TopicPaymentLate:
					lateFacts++
				}
			}
		}
		for u := range seqOf {
			if !requested[u] {
				bad = append(bad, u+" has no booking_request")
			}
		}
		if lateFacts == 0 {
			bad = append(bad, "no payment_late for the late payer")
		}
		return len(bad) == 0
	}, func() string { return "facts: " + strings.Join(bad, "; ") })
	restored := readTopic(t, s.Brokers[0], events.TopicEventRestored)
	if len(restored) != 1 || restored[0].EventID != ev || restored[0].Sequence != base {
		t.Errorf("event_restored %+v, want one with the sequence base %d", restored, base)
	}

	// the outbox drains (an entry the sweep cannot read would stay or be
	// dropped); the payment registry names each payment's sequence whole
	waitUntil(t, 30*time.Second, func() bool {
		n, _ := s.Redis.HLen(ctx, keys[7]).Result()
		return n == 0
	}, func() string {
		left, _ := s.Redis.HGetAll(ctx, keys[7]).Result()
		return fmt.Sprintf("outbox not drained: %v", left)
	})
	pays, err := s.Redis.HGetAll(ctx, keys[14]).Result()
	if err != nil || len(pays) == 0 {
		t.Fatalf("payment registry %v %v", pays, err)
	}
	for pid, rec := range pays {
		parts := strings.Split(rec, "|")
		if len(parts) != 5 || parts[1] != strconv.FormatInt(seqOf[parts[0]], 10) {
			t.Errorf("payment %s: %q, want %s's sequence %d", pid, rec, parts[0], seqOf[parts[0]])
		}
	}

	// the progress document's served is the last admitted sequence
	var maxAdmitted int64
	for _, f := range readTopic(t, s.Brokers[0], events.TopicUserPromoted) {
		if f.EventID == ev {
			maxAdmitted = max(maxAdmitted, f.Sequence)
		}
	}
	var prog struct {
		Served int64 `json:"served"`
	}
	waitUntil(t, 10*time.Second, func() bool {
		_, _ = s.Client(t, "anyone", "").Do("GET", "/api/events/"+ev+"/progress", nil, &prog)
		return prog.Served == maxAdmitted
	}, func() string { return fmt.Sprintf("progress served %d, last admitted %d", prog.Served, maxAdmitted) })
}
