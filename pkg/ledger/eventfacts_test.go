package ledger_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

// The facts of an event's definition outlive a request that stopped
// before publishing them: the sweep publishes the event_created (the
// record the request publishes; an event with a pre-queue's once the
// ledger keeps its draw's seed, with the commitment) and every
// event_updated not acknowledged, each once and in order, and nothing the
// request published itself.
func TestEventFactsSwept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	led := ledgertest.New(t)
	rec := &events.Recorder{}
	p := &ledger.EventFactPublisher{Ledger: led, Kafka: rec, Age: time.Nanosecond}
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	for _, c := range []booking.EventConfig{
		{ID: "plain", Rows: 1, SeatsPerRow: 4},
		{ID: "pq", Rows: 1, SeatsPerRow: 4, SalesStart: start, EarlyJoin: 10 * time.Minute},
		{ID: "done", Rows: 1, SeatsPerRow: 4},
	} {
		if _, _, err := led.CreateEvent(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	sweep := func(want int) {
		t.Helper()
		if n, err := p.Sweep(ctx); err != nil || n != want {
			t.Fatalf("sweep: %d %v, want %d", n, err, want)
		}
	}
	// the requests of plain and pq stopped before their publish; done's
	// published
	if err := p.PublishCreated(ctx, "done", ""); err != nil {
		t.Fatal(err)
	}
	rec.FailWith(errors.New("kafka down"))
	if err := p.PublishCreated(ctx, "plain", ""); err == nil {
		t.Fatal("published with Kafka down")
	}
	if _, err := p.Sweep(ctx); err == nil {
		t.Fatal("a sweep with Kafka down")
	}
	rec.FailWith(nil)
	rec.Reset()
	sweep(1) // plain; pq waits for its seed
	def, err := led.Event(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	got := rec.Topic(events.TopicEventCreated)
	if want := ledger.EventCreatedFact(def.Config, "", def.CreatedAt); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("swept %+v, the request's record %+v", got, want)
	}
	seed := drawSeed("", "ab")
	if _, err := led.RecordDrawSeeds(ctx, "pq", []booking.DrawSeed{seed}); err != nil {
		t.Fatal(err)
	}
	sweep(1)
	if got := rec.Topic(events.TopicEventCreated); len(got) != 2 || got[1].EventID != "pq" ||
		!strings.HasSuffix(got[1].Reason, " draw_commit="+seed.Commit) {
		t.Fatalf("the pre-queue's event_created: %+v", got)
	}
	sweep(0)

	// a settings change whose publish failed, then another one's: the
	// sweep publishes it; then two whose publishes both failed: the sweep
	// publishes each, in order, once
	three, four, five := 3, 4, 5
	if _, err := led.UpdateEvent(ctx, "plain", booking.EventUpdate{Capacity: &three}, nil); err != nil {
		t.Fatal(err)
	}
	sweep(1)
	for _, c := range []*int{&four, &five} {
		if _, err := led.UpdateEvent(ctx, "plain", booking.EventUpdate{Capacity: c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	sweep(1)
	up := rec.Topic(events.TopicEventUpdated)
	if len(up) != 3 || up[0].Sequence != 1 || up[0].Reason != "capacity=3" || up[1].Sequence != 2 || up[1].Reason != "capacity=4" ||
		up[2].Sequence != 3 || up[2].Reason != "capacity=5" {
		t.Fatalf("event_updated: %+v", up)
	}
	sweep(0)
	// published by its request: nothing for the sweep
	if _, err := led.UpdateEvent(ctx, "done", booking.EventUpdate{Capacity: &three}, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.PublishUpdated(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	sweep(0)
	if err := p.PublishCreated(ctx, "nope", ""); !errors.Is(err, ledger.ErrEventNotFound) {
		t.Fatalf("an unknown event: %v", err)
	}
}
