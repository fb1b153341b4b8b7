package ledger_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// Codes are recorded as digests with their batch, loaded into Redis in
// the same transaction, redeemed, and after a rebuild from the ledger
// keep their uses and users; code_redeemed facts Kafka did not take are
// published by the sweep.
func TestCodesRecordedRedeemedAndRestored(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "codes", Name: "Codes", Rows: 2, SeatsPerRow: 5, Capacity: 5})
	ctx := context.Background()
	key := []byte("ledger test code key")
	digest := func(code string) string {
		n, _ := booking.NormaliseCode(code)
		return booking.CodeDigest(key, n)
	}
	b := &ledger.CodeBatch{EventID: g.event, Uses: 1, Seats: 2, Actor: "ops@example.com"}
	load := func(ctx context.Context, recs []booking.CodeRecord) error {
		return g.store.LoadCodes(ctx, g.event, recs)
	}
	if err := g.led.AddCodes(ctx, b, []string{digest("AAAA-1111"), digest("BBBB-2222")}, load); err != nil || b.ID == 0 || b.Count != 2 {
		t.Fatalf("add codes: %+v %v", b, err)
	}
	// refused in Redis: nothing recorded
	bad := &ledger.CodeBatch{EventID: g.event, Uses: 1, Actor: "ops"}
	if err := g.led.AddCodes(ctx, bad, []string{digest("CCCC-3333")}, func(context.Context, []booking.CodeRecord) error {
		return booking.ErrEventNotFound
	}); !errors.Is(err, booking.ErrEventNotFound) {
		t.Fatalf("a refused load: %v", err)
	}
	if ev, err := g.led.CodeEvent(ctx, digest("CCCC-3333")); err != nil || ev != "" {
		t.Fatalf("a refused batch left a code of %q: %v", ev, err)
	}
	if ev, err := g.led.CodeEvent(ctx, digest("aaaa1111")); err != nil || ev != g.event {
		t.Fatalf("code event: %q %v", ev, err)
	}
	if err := g.led.AddCodes(ctx, &ledger.CodeBatch{EventID: "nope", Uses: 1, Actor: "ops"}, []string{digest("X")},
		load); !errors.Is(err, ledger.ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}

	r, err := g.store.EnqueueCode(ctx, g.event, "fan1", digest("AAAA-1111"))
	if err != nil || r.Code == nil {
		t.Fatalf("redeem: %+v %v", r, err)
	}
	red := ledger.Redemption{CodeID: r.Code.CodeID, Use: r.Code.Use, EventID: g.event, UserID: "fan1", Sequence: r.Sequence, At: r.At}
	for range 2 { // a repeat changes nothing
		if err := g.led.RecordRedemption(ctx, red); err != nil {
			t.Fatal(err)
		}
	}
	batches, err := g.led.CodeBatches(ctx, g.event)
	if err != nil || len(batches) != 1 || batches[0].Used != 1 || batches[0].Bound != 1 || batches[0].Count != 2 {
		t.Fatalf("batches: %+v %v", batches, err)
	}

	// Kafka down: the sweep publishes the fact later, once
	p := &ledger.CodePublisher{Ledger: g.led, Kafka: g.rec, Age: time.Nanosecond}
	g.rec.FailWith(errors.New("kafka down"))
	if err := p.Publish(ctx, red); err == nil {
		t.Fatal("published with Kafka down")
	}
	g.rec.FailWith(nil)
	for want := range []int{1, 0} {
		if n, err := p.Sweep(ctx); err != nil || n != 1-want {
			t.Fatalf("sweep: %d %v", n, err)
		}
	}
	if fs := g.rec.Topic(events.TopicCodeRedeemed); len(fs) != 1 || fs[0].UserID != "fan1" || fs[0].Sequence != r.Sequence ||
		fs[0].Reason != "code_id="+strconv.FormatInt(r.Code.CodeID, 10)+" phase= use=1" {
		t.Fatalf("code_redeemed facts: %+v", fs)
	}

	// a rebuild keeps the code used and bound
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if _, err := g.store.EnqueueCode(ctx, g.event, "fan2", digest("AAAA-1111")); !errors.Is(err, booking.ErrCodeTaken) {
		t.Fatalf("a bound code after the rebuild: %v", err)
	}
	if r, err := g.store.EnqueueCode(ctx, g.event, "fan2", digest("BBBB-2222")); err != nil || r.Code == nil {
		t.Fatalf("an unused code after the rebuild: %+v %v", r, err)
	}
}

// Phase changes are recorded with who and when, each with its facts (the
// phase that ended, the one that started), published by the sweep when
// Kafka did not take them; a repeat records nothing; a rebuild sets the
// last phase again.
func TestPhasesRecordedPublishedAndRestored(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "phases", Name: "Phases", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	set := func(p booking.PhaseState) (ledger.PhaseChange, error) {
		return g.led.SetPhase(ctx, g.event, p, "otto", func(ctx context.Context) (booking.PhaseState, bool, error) {
			return g.store.SetPhase(ctx, g.event, p)
		})
	}
	club, err := set(booking.PhaseState{Phase: "fanclub", Audience: booking.AudienceCode})
	if err != nil || club.ID == 0 || club.Previous != "" || len(club.Facts()) != 1 {
		t.Fatalf("first phase: %+v %v", club, err)
	}
	if again, err := set(booking.PhaseState{Phase: "fanclub", Audience: booking.AudienceCode}); err != nil || again.ID != 0 {
		t.Fatalf("a repeat: %+v %v", again, err)
	}
	if _, err := set(booking.PhaseState{Phase: "x", Audience: "nobody"}); !errors.Is(err, booking.ErrInvalidArgument) {
		t.Fatalf("a bad audience: %v", err)
	}
	p := &ledger.PhasePublisher{Ledger: g.led, Kafka: g.rec, Age: time.Nanosecond}
	g.rec.FailWith(errors.New("kafka down"))
	general, err := set(booking.PhaseState{Phase: "general", Audience: booking.AudiencePublic})
	if err != nil || general.Previous != "fanclub" {
		t.Fatalf("general sale: %+v %v", general, err)
	}
	if err := p.Publish(ctx, general); err == nil {
		t.Fatal("published with Kafka down")
	}
	g.rec.FailWith(nil)
	if n, err := p.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	started, ended := g.rec.Topic(events.TopicPhaseStarted), g.rec.Topic(events.TopicPhaseEnded)
	if len(started) != 2 || len(ended) != 1 || ended[0].Reason != "phase=fanclub" || ended[0].Sequence != general.ID ||
		started[1].Reason != "audience=public phase=general" || started[1].UserID != "otto" {
		t.Fatalf("facts: started %+v, ended %+v", started, ended)
	}
	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}
	if e, err := g.store.GetEvent(ctx, g.event); err != nil || e.Phase != "general" || e.Audience != booking.AudiencePublic {
		t.Fatalf("after the rebuild: %q %q %v", e.Phase, e.Audience, err)
	}
}
