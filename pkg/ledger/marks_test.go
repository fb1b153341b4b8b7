package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// mark records and applies a mark as the admin API does: the ledger's
// transaction around the Redis change.
func (g *rig) mark(m booking.SeatMark, purpose string, seats ...string) (ledger.MarkChange, error) {
	return g.led.MarkSeats(context.Background(), g.store, g.event, m, purpose, "ops@example.com", seats,
		func(ctx context.Context) ([]string, error) {
			return g.store.MarkSeats(ctx, g.event, m, purpose, seats)
		})
}

// loseMark makes a mark Redis takes and the ledger then rolls back, as
// when the gateway dies between the two.
func (g *rig) loseMark(m booking.SeatMark, purpose string, seats ...string) {
	g.t.Helper()
	died := errors.New("connection lost before the commit")
	_, err := g.led.MarkSeats(context.Background(), g.store, g.event, m, purpose, "ops@example.com", seats,
		func(ctx context.Context) ([]string, error) {
			if _, err := g.store.MarkSeats(ctx, g.event, m, purpose, seats); err != nil {
				return nil, err
			}
			return nil, died
		})
	if !errors.Is(err, died) {
		g.t.Fatalf("lost %s: %v", m, err)
	}
}

// loseAllocation makes an allocation Redis takes and the ledger then
// rolls back, as loseMark.
func (g *rig) loseAllocation(channel string, at time.Time, seats ...string) {
	g.t.Helper()
	died := errors.New("connection lost before the commit")
	_, err := g.led.AllocateSeats(context.Background(), g.store, g.event, channel, "ops@example.com", at, seats,
		func(ctx context.Context) ([]string, error) {
			if _, err := g.store.AllocateSeats(ctx, g.event, channel, at, seats); err != nil {
				return nil, err
			}
			return nil, died
		})
	if !errors.Is(err, died) {
		g.t.Fatalf("lost allocation: %v", err)
	}
}

func (g *rig) marks() map[string]string {
	g.t.Helper()
	ms, err := g.led.SeatMarks(context.Background(), g.event)
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		if m.Actor != "ops@example.com" || m.MarkedAt.IsZero() {
			g.t.Fatalf("mark without who or when: %+v", m)
		}
		out[m.SeatID] = string(m.Mark) + ":" + m.Purpose
	}
	return out
}

func TestSeatMarksRecordedAndRestored(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "marks", Name: "Marks", Rows: 2, SeatsPerRow: 5, Capacity: 5})
	ctx := context.Background()
	g.join("u1")
	if ok, err := g.buy("u1", "B5"); !ok || err != nil {
		t.Fatalf("buy: %v %v", ok, err)
	}
	first, err := g.mark(booking.MarkHold, "artist", "A1", "A2")
	if err != nil || first.ID == 0 || len(first.Changed) != 2 || first.At.IsZero() {
		t.Fatalf("hold: %+v %v", first, err)
	}
	if again, err := g.mark(booking.MarkHold, "artist", "A2", "A1"); err != nil || again.ID != 0 || len(again.Changed) != 0 {
		t.Fatalf("a repeated hold: %+v %v", again, err)
	}
	if kill, err := g.mark(booking.MarkKill, "", "A3", "B1"); err != nil || kill.ID <= first.ID {
		t.Fatalf("kill: %+v %v", kill, err)
	}
	if _, err := g.mark(booking.MarkRelease, "", "B1"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A1": "hold:artist", "A2": "hold:artist", "A3": "kill:"}
	if got := g.marks(); len(got) != 3 || got["A1"] != want["A1"] || got["A3"] != want["A3"] {
		t.Fatalf("ledger marks %v", got)
	}
	// refused in Redis (a sold seat): nothing recorded either
	var refused *booking.SeatsRefusedError
	if _, err := g.mark(booking.MarkKill, "", "A4", "B5"); !errors.As(err, &refused) {
		t.Fatalf("kill over a sold seat: %v", err)
	}
	if got := g.marks(); len(got) != 3 {
		t.Fatalf("a refused kill was recorded: %v", got)
	}
	if _, err := g.led.MarkSeats(ctx, g.store, "nope", booking.MarkKill, "", "ops", []string{"A1"}, func(context.Context) ([]string, error) {
		t.Fatal("applied for an unknown event")
		return nil, nil
	}); !errors.Is(err, ledger.ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}

	// a rebuild from the ledger keeps them
	g.flush()
	res, err := g.r.Restore(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unmarked) != 0 {
		t.Fatalf("unmarked %v", res.Unmarked)
	}
	all, err := g.store.Seats(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]booking.SeatStatus{}
	for _, s := range all {
		st[s.ID] = s.Status
	}
	if st["A1"] != booking.SeatReserved || st["A2"] != booking.SeatReserved || st["A3"] != booking.SeatKilled ||
		st["B1"] != booking.SeatAvailable || st["B5"] != booking.SeatSold {
		t.Fatalf("after the rebuild: %v", st)
	}
	g.join("u2")
	if _, err := g.store.LockSeat(ctx, g.event, "u2", "A3"); !errors.Is(err, booking.ErrSeatNotForSale) {
		t.Fatalf("a killed seat after the rebuild: %v", err)
	}
}

// A fact Kafka did not take is published by the sweep, once, with the
// change's own id; an acknowledged one is not published again.
func TestSeatMarkFactsSurviveAKafkaOutage(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "marksk", Name: "Marks", Rows: 1, SeatsPerRow: 4, Capacity: 2})
	ctx := context.Background()
	p := &ledger.MarkPublisher{Ledger: g.led, Kafka: g.rec, Age: time.Nanosecond}
	held, err := g.mark(booking.MarkHold, "production", "A1", "A2")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, held); err != nil {
		t.Fatal(err)
	}
	g.rec.FailWith(errors.New("kafka down"))
	killed, err := g.mark(booking.MarkKill, "", "A3")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, killed); err == nil {
		t.Fatal("published with Kafka down")
	}
	if n, err := p.Sweep(ctx); err == nil || n != 0 {
		t.Fatalf("sweep with Kafka down: %d %v", n, err)
	}
	g.rec.FailWith(nil)
	if n, err := p.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if n, err := p.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep: %d %v", n, err)
	}
	hs, ks := g.rec.Topic(events.TopicSeatsHeld), g.rec.Topic(events.TopicSeatsKilled)
	if len(hs) != 1 || len(ks) != 1 || hs[0].Reason != "production" || hs[0].SeatID != "A1,A2" || hs[0].UserID != "ops@example.com" ||
		ks[0].Sequence != killed.ID || ks[0].ID != killed.Fact().ID || !ks[0].OccurredAt.Equal(killed.At.UTC().Truncate(time.Millisecond)) {
		t.Fatalf("facts held %+v killed %+v", hs, ks)
	}
}

// A hold or release Redis took in a call whose ledger transaction then
// rolled back (the gateway died between the two) is recorded by the
// call's repeat, which Redis answers as no change: the ledger's marks
// become Redis's and the change is numbered, so its fact is published.
func TestSeatMarksRedisTookAreRecordedByTheRepeat(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "lostmarks", Name: "Marks", Rows: 1, SeatsPerRow: 5, Capacity: 5})
	lose := g.loseMark
	lose(booking.MarkHold, "artist", "A1", "A2")
	if got := g.marks(); len(got) != 0 {
		t.Fatalf("a rolled-back hold is in the ledger: %v", got)
	}
	hold, err := g.mark(booking.MarkHold, "artist", "A1", "A2", "A3")
	if err != nil || hold.ID == 0 || !slices.Equal(hold.Changed, []string{"A1", "A2", "A3"}) {
		t.Fatalf("the repeat of a lost hold: %+v %v", hold, err)
	}
	if got := g.marks(); len(got) != 3 || got["A1"] != "hold:artist" {
		t.Fatalf("ledger marks after the repeat: %v", got)
	}
	lose(booking.MarkRelease, "", "A1")
	rel, err := g.mark(booking.MarkRelease, "", "A1")
	if err != nil || rel.ID <= hold.ID || !slices.Equal(rel.Changed, []string{"A1"}) {
		t.Fatalf("the repeat of a lost release: %+v %v", rel, err)
	}
	if got := g.marks(); len(got) != 2 || got["A1"] != "" {
		t.Fatalf("ledger marks after the release's repeat: %v", got)
	}
	if again, err := g.mark(booking.MarkRelease, "", "A1"); err != nil || again.ID != 0 || len(again.Changed) != 0 {
		t.Fatalf("a repeat of a recorded release: %+v %v", again, err)
	}
}

// Holds, kills and releases Redis took in calls whose ledger transactions
// rolled back, and that nobody repeated, are recorded by the
// reconciliation (actor reconcile), each a numbered change whose fact the
// sweep publishes; one under way (the event's row locked) is left to its
// call.
func TestSeatMarksRedisTookAreRecordedByTheReconciliation(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "keepmarks", Name: "Marks", Rows: 1, SeatsPerRow: 6, Capacity: 5})
	ctx := context.Background()
	lose := g.loseMark
	ledgerMarks := func() map[string]string {
		t.Helper()
		ms, err := g.led.SeatMarks(ctx, g.event)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, m := range ms {
			out[m.SeatID] = string(m.Mark) + ":" + m.Purpose + ":" + m.Actor
		}
		return out
	}
	if _, err := g.mark(booking.MarkHold, "press", "A4", "A5"); err != nil {
		t.Fatal(err)
	}
	lose(booking.MarkHold, "artist", "A1", "A2")
	lose(booking.MarkKill, "", "A3")
	lose(booking.MarkRelease, "", "A4")
	lose(booking.MarkHold, "artist", "A5")

	rec, err := g.r.Reconcile(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range rec.RecordedMarks {
		if c.ID == 0 || c.Actor != ledger.ReconcileActor {
			t.Fatalf("a recorded change without its number or actor: %+v", c)
		}
		got[string(c.Mark)+":"+c.Purpose] = c.Changed
	}
	want := map[string][]string{"hold:artist": {"A1", "A2", "A5"}, "kill:": {"A3"}, "release:": {"A4"}}
	if len(got) != len(want) {
		t.Fatalf("recorded %v, want %v", got, want)
	}
	for k, seats := range want {
		if !slices.Equal(got[k], seats) {
			t.Fatalf("recorded %v, want %v", got, want)
		}
	}
	if m := ledgerMarks(); len(m) != 4 || m["A1"] != "hold:artist:reconcile" || m["A3"] != "kill::reconcile" ||
		m["A5"] != "hold:artist:reconcile" || m["A4"] != "" {
		t.Fatalf("the ledger's marks: %v", m)
	}
	facts, err := g.led.UnpublishedMarkChanges(ctx, 0, 10)
	if err != nil || len(facts) != 4 {
		t.Fatalf("unpublished changes: %+v %v", facts, err)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.RecordedMarks) != 0 {
		t.Fatalf("a second reconciliation recorded %+v (%v)", rec.RecordedMarks, err)
	}

	// a change under way: the reconciliation leaves it to its call
	inRedis, commit := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(commit) }) }
	defer release()
	done := make(chan error, 1)
	go func() {
		_, err := g.led.MarkSeats(ctx, g.store, g.event, booking.MarkKill, "", "ops@example.com", []string{"A6"},
			func(ctx context.Context) ([]string, error) {
				changed, err := g.store.MarkSeats(ctx, g.event, booking.MarkKill, "", []string{"A6"})
				close(inRedis)
				<-commit
				return changed, err
			})
		done <- err
	}()
	<-inRedis
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.RecordedMarks) != 0 {
		t.Fatalf("recorded a change under way: %+v %v", rec.RecordedMarks, err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := ledgerMarks(); m["A6"] != "kill::ops@example.com" {
		t.Fatalf("the change under way: %v", m)
	}
}

// An allocation to a channel Redis took in a call whose ledger
// transaction rolled back, not repeated, is recorded by the
// reconciliation with its release time and, for the wheelchair channel,
// the seats' kind, so the allocation sweeper ends it on time and a
// rebuild keeps it.
func TestAllocationRedisTookIsRecordedByTheReconciliation(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "keepalloc", Name: "Alloc", Rows: 1, SeatsPerRow: 6, Capacity: 5})
	ctx := context.Background()
	release := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	g.loseAllocation("partner", release, "A1", "A2")
	g.loseAllocation(booking.ChannelWheelchair, time.Time{}, "A3")
	rec, err := g.r.Reconcile(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range rec.RecordedMarks {
		got[string(c.Mark)+":"+c.Purpose] = c.Changed
	}
	if len(got) != 2 || !slices.Equal(got["allocate:partner"], []string{"A1", "A2"}) ||
		!slices.Equal(got["allocate:"+booking.ChannelWheelchair], []string{"A3"}) {
		t.Fatalf("recorded %v", got)
	}
	rs, err := g.led.AllocationReleases(ctx, g.event)
	if err != nil || len(rs) != 1 || rs[0].Channel != "partner" || !rs[0].ReleaseAt.Equal(release) || rs[0].Actor != ledger.ReconcileActor {
		t.Fatalf("release times: %+v %v", rs, err)
	}
	if kinds, err := g.led.AccessibleSeats(ctx, g.event); err != nil || kinds["A3"] != booking.ChannelWheelchair {
		t.Fatalf("accessible seats: %v %v", kinds, err)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.RecordedMarks) != 0 {
		t.Fatalf("a second reconciliation recorded %+v (%v)", rec.RecordedMarks, err)
	}
}

// Accessibility kinds Redis took in calls whose ledger transactions
// rolled back, not repeated, are recorded by the reconciliation as Redis
// has them (a kind set, changed or cleared), so a rebuild keeps what fans
// were shown; while a rebuild's steps are still to run (Redis without
// the ledger's kinds yet), the ledger's are left alone.
func TestSeatKindsRedisTookAreRecordedByTheReconciliation(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "keepkinds", Name: "Kinds", Rows: 1, SeatsPerRow: 6, Capacity: 5})
	ctx := context.Background()
	died := errors.New("connection lost before the commit")
	set := func(kind string, lost bool, seats ...string) {
		t.Helper()
		_, err := g.led.SetSeatKind(ctx, g.event, kind, "ops@example.com", seats, func(ctx context.Context) ([]string, error) {
			changed, err := g.store.SetSeatKind(ctx, g.event, kind, seats)
			if lost && err == nil {
				err = died
			}
			return changed, err
		})
		if lost != errors.Is(err, died) || (!lost && err != nil) {
			t.Fatalf("set kind %q of %v: %v", kind, seats, err)
		}
	}
	kinds := func() map[string]string {
		t.Helper()
		k, err := g.led.AccessibleSeats(ctx, g.event)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	set(booking.ChannelWheelchair, false, "A1", "A2", "A3")
	set(booking.ChannelCompanion, true, "A4")
	set(booking.ChannelCompanion, true, "A1")
	set("", true, "A2")

	// a rebuild's steps still to run: nothing is recorded
	if err := g.store.SetRestorePending(ctx, g.event, booking.RestorePendingAll); err != nil {
		t.Fatal(err)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.RecordedKinds) != 0 {
		t.Fatalf("recorded kinds during a rebuild: %v (%v)", rec.RecordedKinds, err)
	}
	if err := g.store.SetRestorePending(ctx, g.event, ""); err != nil {
		t.Fatal(err)
	}

	rec, err := g.r.Reconcile(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A1", "A2", "A4"}; !slices.Equal(rec.RecordedKinds, want) {
		t.Fatalf("recorded kinds of %v, want %v", rec.RecordedKinds, want)
	}
	if k := kinds(); len(k) != 3 || k["A1"] != booking.ChannelCompanion || k["A3"] != booking.ChannelWheelchair ||
		k["A4"] != booking.ChannelCompanion {
		t.Fatalf("the ledger's kinds: %v", k)
	}
	if rec, err := g.r.Reconcile(ctx, g.event); err != nil || len(rec.RecordedKinds) != 0 {
		t.Fatalf("a second reconciliation recorded %v (%v)", rec.RecordedKinds, err)
	}

	// a change under way (the event's row held): left to its call
	inRedis, commit := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := g.led.SetSeatKind(ctx, g.event, booking.ChannelWheelchair, "ops@example.com", []string{"A6"},
			func(ctx context.Context) ([]string, error) {
				changed, err := g.store.SetSeatKind(ctx, g.event, booking.ChannelWheelchair, []string{"A6"})
				close(inRedis)
				<-commit
				return changed, err
			})
		done <- err
	}()
	<-inRedis
	rec, err = g.r.Reconcile(ctx, g.event)
	close(commit)
	if err != nil || len(rec.RecordedKinds) != 0 {
		t.Fatalf("recorded a change under way: %v (%v)", rec.RecordedKinds, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if k := kinds(); k["A6"] != booking.ChannelWheelchair {
		t.Fatalf("the change under way: %v", k)
	}

	// a lost change repeated: the repeat reports the seat it recorded
	set(booking.ChannelWheelchair, true, "A5")
	changed, err := g.led.SetSeatKind(ctx, g.event, booking.ChannelWheelchair, "ops@example.com", []string{"A5", "A6"},
		func(ctx context.Context) ([]string, error) {
			return g.store.SetSeatKind(ctx, g.event, booking.ChannelWheelchair, []string{"A5", "A6"})
		})
	if err != nil || !slices.Equal(changed, []string{"A5"}) {
		t.Fatalf("the repeat changed %v (%v), want [A5]", changed, err)
	}
	if k := kinds(); k["A5"] != booking.ChannelWheelchair {
		t.Fatalf("the repeat's kinds: %v", k)
	}
}

// A hold Redis took whose ledger transaction rolled back, followed by a
// kill of some of its seats and a release of another before the
// reconciliation: each later change records the lost hold of its seats
// first (actor reconcile), so every seats_released or seats_killed fact
// follows the mark it changes; a repeat of the lost change itself is
// still the operator's.
func TestSeatMarkLostBeforeTheNextChange(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "lostmark", Name: "Marks", Rows: 1, SeatsPerRow: 6, Capacity: 5})
	g.loseMark(booking.MarkHold, "artist", "A1", "A2", "A3", "A4")
	kill, err := g.mark(booking.MarkKill, "", "A1")
	if err != nil || kill.ID == 0 || !slices.Equal(kill.Changed, []string{"A1"}) {
		t.Fatalf("the kill: %+v %v", kill, err)
	}
	rel, err := g.mark(booking.MarkRelease, "", "A2")
	if err != nil || rel.ID == 0 || !slices.Equal(rel.Changed, []string{"A2"}) {
		t.Fatalf("the release: %+v %v", rel, err)
	}
	again, err := g.mark(booking.MarkHold, "artist", "A3")
	if err != nil || again.ID == 0 || again.Actor != "ops@example.com" || !slices.Equal(again.Changed, []string{"A3"}) {
		t.Fatalf("the repeat of the lost hold: %+v %v", again, err)
	}
	facts, err := g.led.UnpublishedMarkChanges(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range facts {
		got = append(got, fmt.Sprintf("%s:%s:%s:%v", f.Actor, f.Mark, f.Purpose, f.Changed))
	}
	want := []string{
		"reconcile:hold:artist:[A1]", "ops@example.com:kill::[A1]",
		"reconcile:hold:artist:[A2]", "ops@example.com:release::[A2]",
		"ops@example.com:hold:artist:[A3]",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("recorded changes, in order:\n%v\nwant\n%v", got, want)
	}
	rec, err := g.r.Reconcile(context.Background(), g.event)
	if err != nil || len(rec.RecordedMarks) != 1 || rec.RecordedMarks[0].Mark != booking.MarkHold ||
		!slices.Equal(rec.RecordedMarks[0].Changed, []string{"A4"}) {
		t.Fatalf("the reconciliation recorded %+v (%v), want the hold of A4 alone", rec.RecordedMarks, err)
	}
	// the holds of A1 and A2 by the calls after them, A4's by the reconciliation
	if n := testutil.ToFloat64(g.r.Metrics.Recorded("seat_marks")); n != 3 {
		t.Fatalf("lost changes counted: %v, want 3", n)
	}
}
