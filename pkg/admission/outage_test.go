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
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// A payment provider outage longer than the maximum ends at the next
// promotion: the hold clocks restart (provider_recovered, by=max_outage,
// recorded in the ledger on the real PostgreSQL, and the event says so
// for the page), the holds keep the time they had left, are released by
// the normal rules when it runs out, and admissions resume.
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
	l := ledgertest.New(t)
	p := admission.NewPromoter(store, ann, nil, admission.WithMaxOutage(10*time.Minute), admission.WithOutageLedger(l))

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
	recs, err := l.ProviderOutages(ctx, "e1")
	if err != nil || len(recs) != 1 || !recs[0].PausedSince.Equal(down.PausedSince) || !recs[0].RecoveredAt.Equal(clock()) ||
		recs[0].RecoveredBy != "max_outage" || recs[0].HoldsResumed != 1 {
		t.Fatalf("ledger: %+v %v", recs, err)
	}
	if e, err := store.GetEvent(ctx, "e1"); err != nil || !e.ProviderOutageEnded.Equal(clock()) {
		t.Fatalf("the event does not say the outage was ended: %+v %v", e.ProviderOutageEnded, err)
	}
	st, err := store.Position(ctx, "e1", "a")
	if err != nil || st.ExpireAt != clock().Add(40*time.Second) {
		t.Fatalf("a after the outage: %+v %v, want its 40 s left", st, err)
	}
	advance(40 * time.Second)
	if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 1 {
		t.Fatalf("after a's hold: admitted %d %v", n, err)
	}
	if exp := rec.Topic(events.TopicBookingExpired); len(exp) != 1 || exp[0].UserID != "a" {
		t.Fatalf("a's hold released: %+v", exp)
	}
}
