package booking

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// A draw committed to a round of a beacon boxoffice cannot time: the
// round is fixed before the pre-queue opens and refused after, the draw waits for the round's value,
// and the ranks are those of the seed, the digest and the value, which
// another value would change.
func TestDrawBeacon(t *testing.T) {
	f := newFixture(t)
	start := f.clock.Now().Add(time.Hour).Truncate(time.Second)
	f.event(EventConfig{ID: "bc", Rows: 1, SeatsPerRow: 50, Capacity: 50, BatchSize: 50,
		SalesStart: start, EarlyJoin: 30 * time.Minute})
	f.event(EventConfig{ID: "plain", Rows: 1, SeatsPerRow: 5, Capacity: 5})
	if _, err := f.s.SetBeaconRound(f.ctx, "plain", "", 7, ""); !errors.Is(err, ErrNoPrequeue) {
		t.Fatalf("round for an event without a pre-queue: %v", err)
	}
	if _, err := f.s.SetBeaconRound(f.ctx, "nope", "", 7, ""); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("round for an unknown event: %v", err)
	}
	if _, err := f.s.SetBeaconValue(f.ctx, "bc", "", strings.Repeat("ab", 32), ""); !errors.Is(err, ErrBeaconNotCommitted) {
		t.Fatalf("value before a round: %v", err)
	}
	if _, err := f.s.SetBeaconRound(f.ctx, "bc", "", 1000, "NIST beacon v2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.SetBeaconRound(f.ctx, "bc", "", 1001, "NIST beacon v2"); err != nil {
		t.Fatalf("changing the round before the pre-queue opens: %v", err)
	}
	f.clock.Advance(31 * time.Minute)
	if _, err := f.s.SetBeaconRound(f.ctx, "bc", "", 1002, "NIST beacon v2"); !errors.Is(err, ErrBeaconLocked) {
		t.Fatalf("changing the round once the pre-queue opened: %v", err)
	}
	if _, err := f.s.SetBeaconRound(f.ctx, "bc", "", 1001, "NIST beacon v2"); err != nil {
		t.Fatalf("the same round again: %v", err)
	}
	users := make([]string, 40)
	for i := range users {
		users[i] = "u" + strconv.Itoa(i)
		f.join("bc", users[i])
	}
	f.clock.Advance(start.Sub(f.clock.Now()))
	if _, err := f.s.CloseDraw(f.ctx, "bc"); !errors.Is(err, ErrBeaconPending) {
		t.Fatalf("draw without the beacon's value: %v", err)
	}
	// no place is shown before the draw is made: the draw decides it
	for _, u := range users[:5] {
		if st, err := f.s.Position(f.ctx, "bc", u); err != nil || st.State != StateWaiting || st.Position != 0 {
			t.Fatalf("%s's place before the draw: %+v %v", u, st, err)
		}
		if r := f.join("bc", u); r.Position != 0 || !r.PrequeuedUntil.Equal(start) {
			t.Fatalf("%s joining again before the draw: %+v", u, r)
		}
	}
	in, err := f.s.DrawInputs(f.ctx, "bc", "")
	if err != nil || in.Beacon != (fairness.Beacon{Round: 1001, Source: "NIST beacon v2"}) || in.Digest != "" {
		t.Fatalf("pending draw's inputs: %+v %v", in, err)
	}
	for _, bad := range []string{"xyz", strings.Repeat("AB", 32), strings.Repeat("a", 63)} {
		if _, err := f.s.SetBeaconValue(f.ctx, "bc", "", bad, ""); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("value %q: %v", bad, err)
		}
	}
	value := strings.Repeat("5a", 32)
	if changed, err := f.s.SetBeaconValue(f.ctx, "bc", "", value, ""); err != nil || !changed {
		t.Fatalf("value: %v %v", changed, err)
	}
	if changed, err := f.s.SetBeaconValue(f.ctx, "bc", "", value, ""); err != nil || changed {
		t.Fatalf("the same value again: %v %v", changed, err)
	}
	// the signature a call that stopped after the value did not keep
	sig := strings.Repeat("7e", 48)
	if changed, err := f.s.SetBeaconValue(f.ctx, "bc", "", value, sig); err != nil || !changed {
		t.Fatalf("the same value with its signature: %v %v", changed, err)
	}
	if changed, err := f.s.SetBeaconValue(f.ctx, "bc", "", value, sig); err != nil || changed {
		t.Fatalf("the same value and signature again: %v %v", changed, err)
	}
	if _, err := f.s.SetBeaconValue(f.ctx, "bc", "", strings.Repeat("00", 32), ""); !errors.Is(err, ErrBeaconValueSet) {
		t.Fatalf("another value: %v", err)
	}
	d, err := f.s.CloseDraw(f.ctx, "bc")
	if err != nil || d.Beacon.Value != value || d.Beacon.Signature != sig || d.Beacon.Round != 1001 || d.Count != int64(len(users)) {
		t.Fatalf("draw: %+v %v", d, err)
	}
	list, err := f.s.DrawList(f.ctx, "bc", "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := fairness.DrawOrder(d.Seed, fairness.DrawInput(d.Digest, value), list); !slices.Equal(list, want) {
		t.Fatalf("the list is not in the order of the seed, digest and beacon")
	}
	salt, err := f.s.FairSalt(f.ctx, "bc")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		rank := slices.Index(list, fairness.UserHash(salt, u)) + 1
		if st, err := f.s.Position(f.ctx, "bc", u); err != nil || st.Position != int64(rank) {
			t.Fatalf("%s's place once drawn: %+v %v, the draw's rank %d", u, st, err, rank)
		}
	}
	if slices.Equal(list, fairness.DrawOrder(d.Seed, d.Digest, list)) ||
		slices.Equal(list, fairness.DrawOrder(d.Seed, fairness.DrawInput(d.Digest, strings.Repeat("00", 32)), list)) {
		t.Fatalf("the ranks do not depend on the beacon's value")
	}
}

// A draw committed to a round of a drand chain, whose rounds boxoffice
// can time: a round out before the pre-queue closes is refused with the
// first one after; the round may change while the list is open, since
// nobody knows its value; a later start that the round would precede is
// refused until a later round is committed, for the event's own
// pre-queue and for a later phase's; from the close on the round stands.
func TestDrawBeaconOfAKnownChain(t *testing.T) {
	quick, _ := fairness.BeaconChainOf("drand quicknet")
	f := newFixture(t)
	start := f.clock.Now().Add(time.Hour).Truncate(time.Second)
	f.event(EventConfig{ID: "kc", Rows: 1, SeatsPerRow: 50, Capacity: 50, SalesStart: start, EarlyJoin: 30 * time.Minute})
	first := quick.FirstRoundAfter(start)
	_, err := f.s.SetBeaconRound(f.ctx, "kc", "", first-1, "drand quicknet")
	if !errors.Is(err, ErrBeaconRoundEarly) || !strings.Contains(err.Error(), "commit round "+strconv.FormatInt(first, 10)+" or later") {
		t.Fatalf("a round out before the close: %v", err)
	}
	if _, err := f.s.SetBeaconRound(f.ctx, "kc", "", first, "drand quicknet"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(31 * time.Minute) // the pre-queue is open
	if _, err := f.s.SetBeaconRound(f.ctx, "kc", "", first+10, "drand quicknet"); err != nil {
		t.Fatalf("a later round while the list is open: %v", err)
	}
	later := start.Add(time.Hour)
	if _, err := f.s.UpdateEvent(f.ctx, "kc", EventUpdate{SalesStart: &later}); !errors.Is(err, ErrBeaconRoundEarly) {
		t.Fatalf("a start after the round: %v", err)
	}
	if e, err := f.s.GetEvent(f.ctx, "kc"); err != nil || !e.SalesStart.Equal(start) {
		t.Fatalf("the refused start was kept: %v %v", e.SalesStart, err)
	}
	if _, err := f.s.SetBeaconRound(f.ctx, "kc", "", quick.FirstRoundAfter(later), "drand quicknet"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.UpdateEvent(f.ctx, "kc", EventUpdate{SalesStart: &later}); err != nil {
		t.Fatalf("the start before the new round: %v", err)
	}
	f.clock.Advance(later.Sub(f.clock.Now()))
	if _, err := f.s.SetBeaconRound(f.ctx, "kc", "", quick.FirstRoundAfter(later)+5, "drand quicknet"); !errors.Is(err, ErrBeaconLocked) {
		t.Fatalf("a round once the list closed: %v", err)
	}

	// a later phase's pre-queue
	pf, cfg, general := phasePrequeueFixture(t, "kp", false)
	round := quick.FirstRoundAfter(general)
	if _, err := pf.s.SetBeaconRound(pf.ctx, "kp", "general", round, "drand quicknet"); err != nil {
		t.Fatal(err)
	}
	now := general.Add(-time.Hour)
	moved := func(start time.Time) Schedule {
		sch := Schedule{Phases: []Phase{
			{ID: "presale", StartsAt: now.Add(-time.Hour), EndsAt: start, Audience: AudienceRegistered},
			{ID: "general", StartsAt: start, EndsAt: now.Add(3 * time.Hour), Audience: AudiencePublic, EarlyJoinSeconds: intp(1800)}}}
		if err := CheckSchedule(cfg, &sch); err != nil {
			t.Fatal(err)
		}
		return sch
	}
	if err := pf.s.SetSchedule(pf.ctx, cfg, moved(general.Add(time.Minute)), 0); !errors.Is(err, ErrBeaconRoundEarly) {
		t.Fatalf("a later phase's start after its round: %v", err)
	}
	if err := pf.s.SetSchedule(pf.ctx, cfg, moved(general.Add(-time.Minute)), 0); err != nil {
		t.Fatalf("a later phase's earlier start: %v", err)
	}
	if _, err := pf.s.SetBeaconRound(pf.ctx, "kp", "general", quick.FirstRoundAfter(general.Add(time.Minute)), "drand quicknet"); err != nil {
		t.Fatal(err)
	}
	if err := pf.s.SetSchedule(pf.ctx, cfg, moved(general.Add(time.Minute)), 0); err != nil {
		t.Fatalf("the phase's start before its new round: %v", err)
	}
}
