package report_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/report"
)

// TestReportMatchesAKnownJourney publishes a sale's facts to Kafka (every
// fact twice, a completion before its admission, facts of another sale
// mixed in), runs the report consumer and checks the report exactly.
func TestReportMatchesAKnownJourney(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	brokers := kafkatest.Start(t)
	p, err := events.NewKafkaProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	s := func(d float64) time.Time { return t0.Add(time.Duration(d * float64(time.Second))) }
	const ev = "sale"
	journey := []events.Event{
		events.BookingRequested(ev, "ann", 1, s(0)),
		events.BookingRequested(ev, "bob", 2, s(1)),
		events.BookingRequested(ev, "cat", 3, s(2)),
		events.BookingRequested(ev, "dan", 4, s(3)),
		// ann's completion is published before her admission
		events.BookingCompleted(ev, "ann", "A1", "pa", 1, s(70)).WithMoney(5000, "EUR"),
		events.UserPromoted(ev, "ann", 1, s(10)),
		events.UserPromoted(ev, "bob", 2, s(12)),
		events.UserPromoted(ev, "dan", 4, s(61)),
		events.PaymentInitiated(ev, "ann", "A1", "pa", 1, s(40)).WithMoney(5000, "EUR"),
		events.PaymentInitiated(ev, "bob", "A2", "pb", 2, s(50)).WithMoney(5000, "EUR"),
		events.PaymentFailed(ev, "bob", "A2", "pb", 2, "insufficient_funds", s(55)).WithMoney(5000, "EUR"),
		events.BookingCancelled(ev, "cat", "", 3, events.CancelledFromQueue, s(20)),
		events.BookingExpired(ev, "dan", "", 4, s(121)),
		events.PaymentLate(ev, "bob", "A2", "pb", 2, s(200)).WithMoney(5000, "EUR"),
		events.EventSoldOut(ev, s(70)),
		events.SeatsHeld(1, ev, "otto", "B1,B2", "sponsor", s(5)),
		events.SeatsKilled(2, ev, "otto", "B3", s(6)),
		events.SeatsReleased(3, ev, "otto", "B1", s(90)),
		events.SeatsAllocated(4, ev, "otto", "C1,C2", "channel=box_office", s(7)),
		events.AllocationReleased(5, ev, "system", "C2", "channel=box_office", s(95)),
		// another sale
		events.BookingRequested("other", "ann", 1, s(0)),
	}
	for range 2 {
		if err := p.Publish(ctx, journey...); err != nil {
			t.Fatal(err)
		}
	}
	c := report.NewConsumer(report.Config{Brokers: brokers, Prefix: prefix}, rdb, nil)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	var got report.Report
	deadline := time.Now().Add(60 * time.Second)
	for {
		if got, err = report.Read(ctx, rdb, prefix, ev); err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, v := range got.Counts {
			n += v
		}
		if n == int64(len(journey)-1) && got.TimeInQueue.Count == 3 && got.TimeToPurchase.Count == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("report after 60s: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Every topic the report counts is there, zero unless the journey
	// published it.
	counts := map[string]int64{}
	for _, topic := range report.Topics {
		counts[topic] = 0
	}
	maps.Copy(counts, map[string]int64{
		events.TopicBookingRequest: 4, events.TopicUserPromoted: 3, events.TopicPaymentInitiated: 2,
		events.TopicBookingCompleted: 1, events.TopicPaymentFailed: 1, events.TopicBookingCancelled: 1,
		events.TopicBookingExpired: 1, events.TopicPaymentLate: 1, events.TopicEventSoldOut: 1,
		events.TopicSeatsHeld: 1, events.TopicSeatsKilled: 1, events.TopicSeatsReleased: 1,
		events.TopicSeatsAllocated: 1, events.TopicAllocationReleased: 1,
	})
	want := report.Report{
		EventID: ev,
		Counts:  counts,
		Revenue: map[string]int64{"EUR": 5000},
		Refunds: map[string]int64{"EUR": 5000},
		Conversion: map[string]float64{"admitted_per_joined": 0.75, "paying_per_admitted": 0.6667,
			"completed_per_paying": 0.5, "completed_per_joined": 0.25},
		// queue: 10 s, 11 s, 58 s; purchase: 60 s (bucket upper bounds)
		TimeInQueue:         report.Distribution{Count: 3, P50MS: 11585, P90MS: 65535, P99MS: 65535},
		TimeToPurchase:      report.Distribution{Count: 1, P50MS: 65535, P90MS: 65535, P99MS: 65535},
		AdmissionsPerMinute: []report.Minute{{Minute: t0, Admissions: 2}, {Minute: t0.Add(time.Minute), Admissions: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	csv := got.CSV()
	for _, line := range []string{"metric,key,value\n", "count,booking_completed,1\n", "revenue,EUR,5000\n",
		"time_in_queue,p50_ms,11585\n", "admissions_per_minute,2026-03-14T12:01:00Z,1\n"} {
		if !strings.Contains(csv, line) {
			t.Errorf("csv lacks %q:\n%s", line, csv)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
