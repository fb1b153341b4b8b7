package booking

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// mark is MarkSeats that must succeed; it returns the seats changed.
func (f *fixture) mark(event string, m SeatMark, purpose string, seats ...string) []string {
	f.t.Helper()
	changed, err := f.s.MarkSeats(f.ctx, event, m, purpose, seats)
	if err != nil {
		f.t.Fatalf("%s %v: %v", m, seats, err)
	}
	return changed
}

func TestMarkSeatsHoldKillRelease(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{}) // A1…B5
	if got := f.mark("evt", MarkHold, "sponsor", "A1", "A2"); !slices.Equal(got, []string{"A1", "A2"}) {
		t.Fatalf("hold changed %v", got)
	}
	if got := f.mark("evt", MarkHold, "sponsor", "A2", "A1", "A1"); len(got) != 0 {
		t.Fatalf("a repeated hold changed %v", got)
	}
	// a kill takes a held seat as well as a free one
	if got := f.mark("evt", MarkKill, "", "A2", "A3"); !slices.Equal(got, []string{"A2", "A3"}) {
		t.Fatalf("kill changed %v", got)
	}
	c := f.counts("evt")
	if c.Reserved != 1 || c.Killed != 2 || c.Available != 7 {
		t.Fatalf("counts %+v", c)
	}
	st := f.seats("evt")
	if st["A1"] != SeatReserved || st["A2"] != SeatKilled || st["A3"] != SeatKilled || st["A4"] != SeatAvailable {
		t.Fatalf("seats %v", st)
	}
	f.checkInvariants("evt")
	// read back: every seat, or the seats asked (an unknown one has none)
	all, err := f.s.MarkedSeats(f.ctx, "evt")
	if err != nil || len(all) != 3 || all["A1"] != (MarkedSeat{"A1", MarkHold, "sponsor"}) || all["A2"].Mark != MarkKill {
		t.Fatalf("marked seats: %v %v", all, err)
	}
	some, err := f.s.MarkedSeats(f.ctx, "evt", "A1", "A3", "A4", "Z9")
	if err != nil || len(some) != 2 || some["A1"] != all["A1"] || some["A3"] != all["A3"] {
		t.Fatalf("marked seats of A1, A3, A4, Z9: %v %v", some, err)
	}

	// fans cannot select them, alone or among free seats
	if r := f.join("evt", "u1"); r.State != StateActive {
		t.Fatalf("join: %+v", r)
	}
	for _, want := range [][]string{{"A1"}, {"A4", "A3"}} {
		_, err := f.s.LockSeats(f.ctx, "evt", "u1", want)
		var kept *SeatsNotForSaleError
		if !errors.As(err, &kept) || !errors.Is(err, ErrSeatNotForSale) || kept.Seats[0] != want[len(want)-1] {
			t.Fatalf("lock %v: %v", want, err)
		}
	}
	if st := f.seats("evt"); st["A4"] != SeatAvailable {
		t.Fatalf("a refused selection locked A4: %v", st)
	}

	// a release puts them on sale at once
	if got := f.mark("evt", MarkRelease, "", "A1", "A2", "A3"); len(got) != 3 {
		t.Fatalf("release changed %v", got)
	}
	if got := f.mark("evt", MarkRelease, "", "A1"); len(got) != 0 {
		t.Fatalf("a repeated release changed %v", got)
	}
	f.buy("evt", "u1", "A1")
	f.join("evt", "u2")
	if _, err := f.s.LockSeats(f.ctx, "evt", "u2", []string{"A2"}); err != nil {
		t.Fatalf("lock released A2: %v", err)
	}
	f.checkInvariants("evt")

	// a seat a fan holds or bought is refused, each named, nothing changed
	before := f.seats("evt")
	_, err = f.s.MarkSeats(f.ctx, "evt", MarkKill, "", []string{"A5", "A1", "A2"})
	var refused *SeatsRefusedError
	if !errors.As(err, &refused) || !errors.Is(err, ErrSeatUnavailable) {
		t.Fatalf("kill over sold and held seats: %v", err)
	}
	want := []SeatRefusal{{"A1", SeatSold}, {"A2", SeatHeld}}
	if diff := cmp.Diff(want, refused.Seats); diff != "" {
		t.Fatalf("refused (-want +got):\n%s", diff)
	}
	if _, err := f.s.MarkSeats(f.ctx, "evt", MarkRelease, "", []string{"A5", "A1"}); !errors.As(err, &refused) ||
		len(refused.Seats) != 1 || refused.Seats[0] != (SeatRefusal{"A1", SeatSold}) {
		t.Fatalf("release of a sold seat: %v", err)
	}
	if diff := cmp.Diff(before, f.seats("evt")); diff != "" {
		t.Fatalf("a refused mark changed seats (-before +after):\n%s", diff)
	}
	f.checkInvariants("evt")
}

func TestMarkSeatsBadInput(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{})
	var unknown *SeatsUnknownError
	if _, err := f.s.MarkSeats(f.ctx, "evt", MarkKill, "", []string{"A1", "Z9", "Q1"}); !errors.As(err, &unknown) ||
		!slices.Equal(unknown.Seats, []string{"Z9", "Q1"}) || !errors.Is(err, ErrSeatUnknown) {
		t.Fatalf("unknown seats: %v", err)
	}
	for _, c := range []struct {
		m       SeatMark
		purpose string
		seats   []string
	}{
		{MarkHold, "", []string{"A1"}},
		{MarkHold, "  ", []string{"A1"}},
		{MarkHold, strings.Repeat("x", MaxPurposeLen+1), []string{"A1"}},
		{MarkHold, "a\nb", []string{"A1"}},
		{"sell", "", []string{"A1"}},
		{MarkKill, "", nil},
		{MarkKill, "", []string{"bad id"}},
	} {
		if _, err := f.s.MarkSeats(f.ctx, "evt", c.m, c.purpose, c.seats); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := f.s.MarkSeats(f.ctx, "nope", MarkKill, "", []string{"A1"}); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
	if c := f.counts("evt"); c.Available != c.Total {
		t.Fatalf("bad input changed seats: %+v", c)
	}
}

func TestRestoreKeepsMarks(t *testing.T) {
	f := newFixture(t)
	c, err := NormalizeEvent(EventConfig{ID: "evt", Name: "x", Rows: 2, SeatsPerRow: 5, Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: c,
		Sold: []SoldSeat{{UserID: "u1", SeatID: "B1", PaymentID: "p1", Sequence: 1}},
		Marks: []MarkedSeat{{SeatID: "A1", Mark: MarkHold, Purpose: "artist"}, {SeatID: "A2", Mark: MarkKill},
			{SeatID: "B1", Mark: MarkKill}, {SeatID: "A3", Mark: MarkHold, Purpose: "production"}, {SeatID: "Z9", Mark: MarkKill}}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(res.Unmarked); !slices.Equal(res.Unmarked, []string{"B1", "Z9"}) {
		t.Fatalf("unmarked %v", res.Unmarked)
	}
	st := f.seats("evt")
	if st["A1"] != SeatReserved || st["A2"] != SeatKilled || st["A3"] != SeatReserved || st["B1"] != SeatSold {
		t.Fatalf("seats %v", st)
	}
	f.checkInvariants("evt")
}

// A sale the ledger has wins over a mark Redis has (repair after a loss).
func TestRepairSoldOverAMark(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{})
	f.mark("evt", MarkKill, "", "A1")
	f.mark("evt", MarkHold, "artist", "A2")
	res, err := f.s.RepairSold(f.ctx, "evt", []SoldSeat{{UserID: "u9", SeatID: "A1", PaymentID: "p9", Sequence: 1},
		{UserID: "u8", SeatID: "A2", PaymentID: "p8", Sequence: 2}})
	if err != nil || res.Repaired != 2 {
		t.Fatalf("repair: %+v %v", res, err)
	}
	if c := f.counts("evt"); c.Killed != 0 || c.Reserved != 0 || c.Sold != 2 {
		t.Fatalf("counts %+v", c)
	}
	f.checkInvariants("evt")
}

// A rebuild draws with the seeds the ledger kept from its first step on:
// the event's config never holds a fresh seed the commitment published
// before the rebuild does not match, not even between the rebuild's steps.
func TestRestoreKeepsDrawSeeds(t *testing.T) {
	f := newFixture(t)
	c, err := NormalizeEvent(EventConfig{ID: "evt", Name: "x", Rows: 2, SeatsPerRow: 5, Capacity: 2,
		SalesStart: time.Now().Add(time.Hour), EarlyJoin: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	bad := drawSeedOf("", 3)
	bad.Commit = drawSeedOf("", 4).Commit
	if _, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: c, DrawSeeds: []DrawSeed{bad}}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a seed that does not match its commitment: %v", err)
	}
	if ok, err := f.s.EventExists(f.ctx, "evt"); err != nil || ok {
		t.Fatalf("a refused rebuild wrote the event: %v %v", ok, err)
	}
	own, later := drawSeedOf("", 1), drawSeedOf("general", 2)
	if _, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: c, DrawSeeds: []DrawSeed{own, later}}); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.DrawSeeds(f.ctx, "evt")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []DrawSeed{own, later}) {
		t.Fatalf("draws after the rebuild %+v, want %+v", got, []DrawSeed{own, later})
	}
	ev, err := f.s.GetEvent(f.ctx, "evt")
	if err != nil || ev.DrawCommit != own.Commit {
		t.Fatalf("draw_commit %q %v, want %q", ev.DrawCommit, err, own.Commit)
	}
}

// A rebuilt event has its door settings and its phase from its first
// step: no join between the rebuild's steps, nor after a later step
// failed, finds an event open to anyone without the challenge, the rate
// cap or the presale's code.
func TestRestoreKeepsDoorAndPhase(t *testing.T) {
	f := newFixture(t)
	c, err := NormalizeEvent(EventConfig{ID: "evt", Name: "x", Rows: 2, SeatsPerRow: 5, Capacity: 2,
		AdmitPerMinute: 600, Challenge: ChallengePoW, NoOrphanRule: true, OnPhaseChange: PhaseChangeLeave})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: c, Phase: PhaseState{Phase: "presale", Audience: "nobody"}}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an unknown audience: %v", err)
	}
	if _, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: c, Phase: PhaseState{Phase: "presale", Audience: AudienceCode}}); err != nil {
		t.Fatal(err)
	}
	ev, err := f.s.GetEvent(f.ctx, "evt")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Phase != "presale" || ev.Audience != AudienceCode || ev.AdmitPerMinute != 600 || ev.Challenge != ChallengePoW ||
		!ev.NoOrphanRule || ev.OnPhaseChange != PhaseChangeLeave {
		t.Fatalf("the rebuilt event %+v", ev)
	}
	if _, err := f.s.Enqueue(f.ctx, "evt", "fan"); !errors.Is(err, ErrCodeRequired) {
		t.Fatalf("a join without a code in the code-only presale: %v", err)
	}
}

// A rebuilt event has its draw's beacon and its schedule of phases from
// its first step, a later phase's kept seed with them: no draw closes
// without the beacon round it was committed to, and no sale stays in
// its phase because a later step failed.
func TestRestoreKeepsBeaconAndSchedule(t *testing.T) {
	f := newFixture(t)
	now := f.clock.Now().Truncate(time.Second)
	general := now.Add(time.Hour)
	c, err := NormalizeEvent(EventConfig{ID: "evt", Name: "x", Capacity: 500, SalesStart: now.Add(-time.Hour),
		EarlyJoin: 30 * time.Minute, Sections: []Section{{Name: "floor", Rows: 10, SeatsPerRow: 100, PriceCents: 5000}}})
	if err != nil {
		t.Fatal(err)
	}
	sch := Schedule{Phases: []Phase{
		{ID: "presale", StartsAt: now.Add(-time.Hour), EndsAt: general, Audience: AudienceCode},
		{ID: "general", StartsAt: general, EndsAt: now.Add(3 * time.Hour), Audience: AudiencePublic, EarlyJoinSeconds: intp(1800)}}}
	if err := CheckSchedule(c, &sch); err != nil {
		t.Fatal(err)
	}
	own, later := drawSeedOf("", 0x11), drawSeedOf("general", 0x22)
	beacon := fairness.Beacon{Round: 4242, Source: "drand quicknet", Value: strings.Repeat("ab", 32)}
	phaseBeacon := fairness.Beacon{Round: 4300, Source: "drand quicknet"} // its value not given yet
	if _, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: c, Schedule: sch,
		Beacons: map[string]fairness.Beacon{"": {Round: 1, Value: "nothex"}}}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a malformed beacon value: %v", err)
	}
	if _, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: c, Schedule: sch,
		Beacons:   map[string]fairness.Beacon{"": beacon, "general": phaseBeacon},
		DrawSeeds: []DrawSeed{own, later}, Phase: PhaseState{Phase: "presale", Audience: AudienceCode}}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.s.Beacon(f.ctx, "evt", ""); err != nil || got != beacon {
		t.Fatalf("the rebuilt beacon %+v %v, want %+v", got, err, beacon)
	}
	if got, err := f.s.Beacon(f.ctx, "evt", "general"); err != nil || got != phaseBeacon {
		t.Fatalf("the rebuilt beacon of the general phase's draw %+v %v, want %+v", got, err, phaseBeacon)
	}
	st, err := f.s.ApplySchedule(f.ctx, "evt", false)
	if err != nil || st.Slot != "p1" || !st.Due || st.Next.Phase != "presale" {
		t.Fatalf("the rebuilt schedule: %+v %v", st, err)
	}
	in, err := f.s.DrawInputs(f.ctx, "evt", "general")
	if err != nil || in.Commit != later.Commit {
		t.Fatalf("the later phase's draw: %+v %v, kept commitment %s", in, err, later.Commit)
	}
	if e, _ := f.s.GetEvent(f.ctx, "evt"); e.DrawCommit != own.Commit {
		t.Fatalf("the event's own draw: %s, kept %s", e.DrawCommit, own.Commit)
	}
}

// drawSeedOf is the draw seed of phase made of the byte b, with its
// commitment.
func drawSeedOf(phase string, b byte) DrawSeed {
	s := bytes.Repeat([]byte{b}, 32)
	sum := sha256.Sum256(s)
	return DrawSeed{Phase: phase, Seed: hex.EncodeToString(s), Commit: hex.EncodeToString(sum[:])}
}
