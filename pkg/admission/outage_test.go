package admission_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// A payment provider outage longer than the maximum ends at the next
// promotion: the hold clocks restart (provider_recovered, by=max_outage),
// the holds keep the time they had left, and admissions resume.
func TestPromoterEndsAnOutageLongerThanTheMaximum(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)), booking.WithClock(clock))
	t.Cleanup(store.Close)
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 10, Capacity: 1, Hold: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "b"} {
		if _, err := store.Enqueue(ctx, "e1", u); err != nil {
			t.Fatal(err)
		}
	}
	advance(20 * time.Second) // a has 40 s left
	down, err := store.SetProviderDegraded(ctx, "e1", true)
	if err != nil {
		t.Fatal(err)
	}
	rec := &events.Recorder{}
	metrics := admission.NewMetrics(nil)
	ann := admission.New(store, &recordingPublisher{}, rec, nil, admission.WithClock(clock), admission.WithMetrics(metrics))
	p := admission.NewPromoter(store, ann, nil, admission.WithMaxOutage(10*time.Minute))

	advance(10*time.Minute - time.Millisecond)
	if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 0 || len(rec.Topic(events.TopicProviderRecovered)) != 0 {
		t.Fatalf("within the maximum: admitted %d %v, facts %+v", n, err, rec.Topic(events.TopicProviderRecovered))
	}
	if g := testutil.ToFloat64(metrics.ProviderDegraded.WithLabelValues("e1")); g != 1 {
		t.Fatalf("gauge during the outage: %v", g)
	}
	advance(time.Millisecond)
	if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 0 {
		t.Fatalf("at the maximum: admitted %d %v (the room is full)", n, err)
	}
	if g := testutil.ToFloat64(metrics.ProviderDegraded.WithLabelValues("e1")); g != 0 {
		t.Fatalf("gauge after the outage: %v", g)
	}
	facts := rec.Topic(events.TopicProviderRecovered)
	if len(facts) != 1 || facts[0].Sequence != down.PausedSince.UnixMilli() || facts[0].Reason != "holds=1 paused_ms=600000 by=max_outage" {
		t.Fatalf("provider_recovered: %+v", facts)
	}
	st, err := store.Position(ctx, "e1", "a")
	if err != nil || st.ExpireAt != clock().Add(40*time.Second) {
		t.Fatalf("a after the outage: %+v %v, want its 40 s left", st, err)
	}
	advance(40 * time.Second)
	if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 1 {
		t.Fatalf("after a's hold: admitted %d %v", n, err)
	}
}
