package booking

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestAllocationsOnlyTheirChannel(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 10, MaxSeatsPerOrder: 4}) // A1…B5
	release := f.clock.Now().Add(time.Hour)
	got, err := f.s.AllocateSeats(f.ctx, "evt", "partner", release, []string{"A1", "A2", "A3"})
	if err != nil || !slices.Equal(got, []string{"A1", "A2", "A3"}) {
		t.Fatalf("allocate: %v %v", got, err)
	}
	if got := f.mark("evt", MarkAllocate, "partner", "A1"); len(got) != 0 {
		t.Fatalf("a repeated allocation changed %v", got)
	}
	if c := f.counts("evt"); c.Allocated != 3 || c.Available != 7 {
		t.Fatalf("counts %+v", c)
	}
	if st := f.seats("evt"); st["A1"] != SeatAllocated || st["A4"] != SeatAvailable {
		t.Fatalf("seats %v", st)
	}
	f.checkInvariants("evt")

	// a request through no channel, or another, is refused them
	f.join("evt", "u1")
	for _, ch := range []string{"", "other"} {
		_, err := f.s.LockSeatsVia(f.ctx, "evt", "u1", ch, false, []string{"A4", "A2"})
		var kept *SeatsNotForSaleError
		if !errors.As(err, &kept) || !slices.Equal(kept.Seats, []string{"A2"}) {
			t.Fatalf("lock through %q: %v", ch, err)
		}
	}
	// best available outside the channel never takes them
	best, err := f.s.SelectBest(f.ctx, "evt", "u1", 3, "")
	if err != nil || slices.ContainsFunc(best.Seats, func(s string) bool { return s < "A4" }) {
		t.Fatalf("best available without the channel: %+v %v", best, err)
	}

	// through the channel: taken, and given back to the channel
	f.join("evt", "u2")
	if _, err := f.s.LockSeatsVia(f.ctx, "evt", "u2", "partner", false, []string{"A2"}); err != nil {
		t.Fatalf("lock through the channel: %v", err)
	}
	if _, err := f.s.LockSeatsVia(f.ctx, "evt", "u2", "partner", false, []string{"A1"}); err != nil {
		t.Fatalf("select again through the channel: %v", err)
	}
	if st := f.seats("evt"); st["A2"] != SeatAllocated || st["A1"] != SeatHeld {
		t.Fatalf("a seat given back is not the channel's again: %v", st)
	}
	f.checkInvariants("evt")
	// the channel's seats, the one its fan holds too
	if seats, err := f.s.ChannelSeats(f.ctx, "evt", "partner"); err != nil || !slices.Equal(seats, []string{"A1", "A2", "A3"}) {
		t.Fatalf("the channel's seats: %v %v", seats, err)
	}
	if seats, err := f.s.ChannelSeats(f.ctx, "evt", "other"); err != nil || len(seats) != 0 {
		t.Fatalf("another channel's seats: %v %v", seats, err)
	}
	// best available through the channel: its own seats first
	f.join("evt", "u3")
	best, err = f.s.SelectBestVia(f.ctx, "evt", "u3", "partner", false, 2, "")
	if err != nil || !slices.Equal(best.Seats, []string{"A2", "A3"}) {
		t.Fatalf("best available through the channel: %+v %v", best, err)
	}
	f.checkInvariants("evt")
	// the hold ends: the seats go back to the channel, not on sale
	if _, err := f.s.Cancel(f.ctx, "evt", "u3"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if st := f.seats("evt"); st["A2"] != SeatAllocated || st["A3"] != SeatAllocated {
		t.Fatalf("a cancelled hold's seats: %v", st)
	}
	f.checkInvariants("evt")

	// the current phase is a channel
	if _, _, err := f.s.SetPhase(f.ctx, "evt", PhaseState{Phase: "partner", Audience: AudiencePublic}); err != nil {
		t.Fatal(err)
	}
	f.join("evt", "u4")
	if _, err := f.s.LockSeats(f.ctx, "evt", "u4", []string{"A3"}); err != nil {
		t.Fatalf("lock in the channel's phase: %v", err)
	}
	if _, _, err := f.s.SetPhase(f.ctx, "evt", PhaseState{Audience: AudiencePublic}); err != nil {
		t.Fatal(err)
	}

	// released at its time, by Redis's clock, not before
	_, err = f.s.ReleaseAllocation(f.ctx, "evt", "partner", true)
	var early *AllocationNotDueError
	if !errors.As(err, &early) || !early.At.Equal(release.Truncate(time.Millisecond)) {
		t.Fatalf("release before its time: %v", err)
	}
	f.clock.Advance(2 * time.Hour)
	f.join("evt", "u5")
	// due: selectable by anyone before the release ran
	if _, err := f.s.LockSeats(f.ctx, "evt", "u5", []string{"A2"}); err != nil {
		t.Fatalf("lock a due allocation's seat: %v", err)
	}
	f.checkInvariants("evt")
	if _, err := f.s.Cancel(f.ctx, "evt", "u5"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if st := f.seats("evt"); st["A2"] != SeatAvailable {
		t.Fatalf("a due allocation's seat given back: %v", st)
	}
	if _, err := f.s.Cancel(f.ctx, "evt", "u4"); err != nil { // A3 back to the channel
		t.Fatalf("cancel: %v", err)
	}
	freed, err := f.s.ReleaseAllocation(f.ctx, "evt", "partner", true)
	if err != nil || freed.Repeat || !slices.Equal(sorted(freed.Released), []string{"A3"}) {
		t.Fatalf("due release: %+v %v", freed, err)
	}
	if seats, err := f.s.ChannelSeats(f.ctx, "evt", "partner"); err != nil || len(seats) != 0 {
		t.Fatalf("an ended allocation's seats: %v %v", seats, err)
	}
	// a repeat puts nothing on sale and answers what the end did
	if again, err := f.s.ReleaseAllocation(f.ctx, "evt", "partner", false); err != nil || len(again.Released) != 0 ||
		!again.Repeat || !slices.Equal(again.Before, []string{"A3"}) {
		t.Fatalf("a repeated release: %+v %v", again, err)
	}
	if never, err := f.s.ReleaseAllocation(f.ctx, "evt", "nobody", false); err != nil || !never.Repeat || len(never.Before) != 0 {
		t.Fatalf("the release of a channel never allocated: %+v %v", never, err)
	}
	if c := f.counts("evt"); c.Allocated != 0 {
		t.Fatalf("counts after the release %+v", c)
	}
	// A1, held by u2 when the allocation ended, goes on sale when given back
	if _, err := f.s.Cancel(f.ctx, "evt", "u2"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if st := f.seats("evt"); st["A1"] != SeatAvailable || st["A3"] != SeatAvailable {
		t.Fatalf("after the release: %v", st)
	}
	f.checkInvariants("evt")
}

func TestAllocationsBadInput(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{})
	if _, err := f.s.AllocateSeats(f.ctx, "evt", "", time.Time{}, []string{"A1"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("no channel: %v", err)
	}
	if _, err := f.s.AllocateSeats(f.ctx, "evt", "a b", time.Time{}, []string{"A1"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad channel: %v", err)
	}
	if _, err := f.s.AllocateSeats(f.ctx, "nope", "p", time.Time{}, []string{"A1"}); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("no event: %v", err)
	}
	if _, err := f.s.ReleaseAllocation(f.ctx, "evt", "p", true); err != nil {
		t.Fatalf("due release of a channel never allocated: %v", err)
	}
	if _, err := f.s.AllocateSeats(f.ctx, "evt", "p", time.Time{}, []string{"B5"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ReleaseAllocation(f.ctx, "evt", "p", true); !errors.Is(err, ErrAllocationNotDue) {
		t.Fatalf("due release of an allocation with no time: %v", err)
	}
	f.join("evt", "u1")
	if _, err := f.s.LockSeatsVia(f.ctx, "evt", "u1", "a,b", false, []string{"A1"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad request channel: %v", err)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// Accessibility seats are allocated to the channels wheelchair and
// companion: a fan who asks for them (accessible) may take them, others
// are refused them and best available passes them by; with accessible,
// best available offers them first; at their release time (Redis's
// clock) they are anyone's.
func TestAccessibilitySeats(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 10, MaxSeatsPerOrder: 4}) // A1…B5
	release := f.clock.Now().Add(time.Hour)
	if _, err := f.s.AllocateSeats(f.ctx, "evt", ChannelWheelchair, release, []string{"B2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.AllocateSeats(f.ctx, "evt", ChannelCompanion, release, []string{"B3"}); err != nil {
		t.Fatal(err)
	}
	f.join("evt", "u1")
	var kept *SeatsNotForSaleError
	if _, err := f.s.LockSeatsVia(f.ctx, "evt", "u1", "", false, []string{"B2"}); !errors.As(err, &kept) {
		t.Fatalf("a wheelchair space without asking: %v", err)
	}
	if _, err := f.s.LockSeatsVia(f.ctx, "evt", "u1", "partner", false, []string{"B3"}); !errors.As(err, &kept) {
		t.Fatalf("a companion seat through another channel: %v", err)
	}
	f.mark("evt", MarkKill, "", "A1", "A2", "A3", "A4", "A5") // row B: B1, (B2, B3), B4, B5
	best, err := f.s.SelectBestVia(f.ctx, "evt", "u1", "", false, 2, "")
	if err != nil || !slices.Equal(best.Seats, []string{"B4", "B5"}) {
		t.Fatalf("best available without asking took accessibility seats: %+v %v", best, err)
	}
	f.checkInvariants("evt")

	// asking: the wheelchair space and its companion seat, first
	f.join("evt", "u2")
	best, err = f.s.SelectBestVia(f.ctx, "evt", "u2", "", true, 2, "")
	if err != nil || !slices.Equal(best.Seats, []string{"B2", "B3"}) {
		t.Fatalf("best available asking for accessibility seats: %+v %v", best, err)
	}
	if _, err := f.s.LockSeatsVia(f.ctx, "evt", "u2", "", true, []string{"B3"}); err != nil {
		t.Fatalf("a companion seat asked for: %v", err)
	}
	if st := f.seats("evt"); st["B2"] != SeatAllocated || st["B3"] != SeatHeld {
		t.Fatalf("a wheelchair space given back is not reserved again: %v", st)
	}
	f.checkInvariants("evt")

	// at the release time, by Redis's clock: anyone's
	f.clock.Advance(2 * time.Hour)
	f.join("evt", "u3")
	if _, err := f.s.LockSeatsVia(f.ctx, "evt", "u3", "", false, []string{"B2"}); err != nil {
		t.Fatalf("a wheelchair space after its release time: %v", err)
	}
	freed, err := f.s.ReleaseAllocation(f.ctx, "evt", ChannelCompanion, true)
	if err != nil || len(freed.Released) != 0 || freed.Repeat { // B3 is u2's: on sale when given back
		t.Fatalf("due release: %v %v", freed, err)
	}
	f.checkInvariants("evt")
}

// A wheelchair space or companion seat is one for good: the kind stays
// when its allocation ends (by the operator or at its release time) and
// the seat goes on general sale, while fans hold and buy it, and when an
// operator takes it off sale; while the seat is allocated to another
// channel the kind is not shown (that channel's fans take it), and it is
// shown again when that allocation ends.
func TestAccessibleSeatsKeepTheirKind(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 10, MaxSeatsPerOrder: 4}) // A1…B5
	release := f.clock.Now().Add(time.Hour)
	if _, err := f.s.AllocateSeats(f.ctx, "evt", ChannelWheelchair, release, []string{"A1", "B1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.AllocateSeats(f.ctx, "evt", ChannelCompanion, release, []string{"A2"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A1": ChannelWheelchair, "B1": ChannelWheelchair, "A2": ChannelCompanion}
	check := func(when string, want map[string]string) {
		t.Helper()
		got, err := f.s.AccessibleSeats(f.ctx, "evt")
		if err != nil || !maps.Equal(got, want) {
			t.Fatalf("%s: accessible seats %v %v, want %v", when, got, err, want)
		}
	}
	check("allocated", want)
	// the operator ends the wheelchair allocation: on sale, still wheelchair spaces
	if freed, err := f.s.ReleaseAllocation(f.ctx, "evt", ChannelWheelchair, false); err != nil || len(freed.Released) != 2 {
		t.Fatalf("release: %v %v", freed, err)
	}
	check("after the operator's release", want)
	// the companion allocation ends at its release time
	f.clock.Advance(2 * time.Hour)
	if freed, err := f.s.ReleaseAllocation(f.ctx, "evt", ChannelCompanion, true); err != nil || len(freed.Released) != 1 {
		t.Fatalf("due release: %v %v", freed, err)
	}
	check("after the release time", want)
	if st := f.seats("evt"); st["A1"] != SeatAvailable || st["A2"] != SeatAvailable {
		t.Fatalf("seats %v", st)
	}
	// a fan who did not ask holds them, they stay what they are
	f.join("evt", "u1")
	if _, err := f.s.LockSeats(f.ctx, "evt", "u1", []string{"A1", "A2"}); err != nil {
		t.Fatal(err)
	}
	check("held", want)
	if _, err := f.s.Cancel(f.ctx, "evt", "u1"); err != nil {
		t.Fatal(err)
	}
	f.mark("evt", MarkKill, "", "B1")
	check("killed", want)
	f.mark("evt", MarkRelease, "", "B1")
	// allocated to another channel: its fans' seat, not shown as one
	if _, err := f.s.AllocateSeats(f.ctx, "evt", "box_office", time.Time{}, []string{"B1"}); err != nil {
		t.Fatal(err)
	}
	check("allocated to another channel", map[string]string{"A1": ChannelWheelchair, "A2": ChannelCompanion})
	// what the ledger should record keeps it, and while a rebuild's steps
	// are still to run the kinds are not settled
	if kinds, settled, err := f.s.SeatKinds(f.ctx, "evt"); err != nil || !settled || !maps.Equal(kinds, want) {
		t.Fatalf("seat kinds %v %v %v, want %v", kinds, settled, err, want)
	}
	if err := f.s.SetRestorePending(f.ctx, "evt", RestorePendingAll); err != nil {
		t.Fatal(err)
	}
	if _, settled, err := f.s.SeatKinds(f.ctx, "evt"); err != nil || settled {
		t.Fatalf("seat kinds during a rebuild: settled %v %v", settled, err)
	}
	if err := f.s.SetRestorePending(f.ctx, "evt", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.s.SeatKinds(f.ctx, "nope"); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("seat kinds of no event: %v", err)
	}
	if _, err := f.s.ReleaseAllocation(f.ctx, "evt", "box_office", false); err != nil {
		t.Fatal(err)
	}
	check("that allocation ended", want)
	// allocated to the other accessibility channel: its kind changes
	if _, err := f.s.AllocateSeats(f.ctx, "evt", ChannelCompanion, time.Time{}, []string{"B1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ReleaseAllocation(f.ctx, "evt", ChannelCompanion, false); err != nil {
		t.Fatal(err)
	}
	check("made a companion seat", map[string]string{"A1": ChannelWheelchair, "A2": ChannelCompanion, "B1": ChannelCompanion})
	f.checkInvariants("evt")

	// a rebuild's: the kind set again, seats not in the map left out
	if set, err := f.s.MarkAccessible(f.ctx, "evt", ChannelWheelchair, []string{"B5", "Z9"}); err != nil || !slices.Equal(set, []string{"B5"}) {
		t.Fatalf("mark accessible: %v %v", set, err)
	}
	check("marked", map[string]string{"A1": ChannelWheelchair, "A2": ChannelCompanion, "B1": ChannelCompanion, "B5": ChannelWheelchair})
	if _, err := f.s.MarkAccessible(f.ctx, "evt", "box_office", []string{"B4"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("mark accessible of no kind: %v", err)
	}
	if _, err := f.s.MarkAccessible(f.ctx, "nope", ChannelCompanion, []string{"B4"}); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("mark accessible of no event: %v", err)
	}
}

// The end of an allocation offers its unsold seats to the waitlist first,
// in the same step: the fan at the head holds them for the offer time.
func TestAllocationEndOffersTheWaitlist(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 10, MaxSeatsPerOrder: 4}) // A1…B5
	if err := f.s.SetWaitlist(f.ctx, "evt", WaitlistSettings{OfferTime: time.Minute, Early: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.AllocateSeats(f.ctx, "evt", "partner", f.clock.Now().Add(time.Hour), []string{"A1", "A2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.JoinWaitlist(f.ctx, "evt", "w1", 1); err != nil {
		t.Fatal(err)
	}
	freed, err := f.s.ReleaseAllocation(f.ctx, "evt", "partner", false)
	if err != nil || !slices.Equal(sorted(freed.Released), []string{"A1", "A2"}) {
		t.Fatalf("release: %v %v", freed, err)
	}
	st := f.seats("evt")
	if held := countStatus(st, SeatHeld); held != 1 || f.state("evt", "w1") != StateSeatSelected {
		t.Fatalf("the waitlist's head was not offered a seat: %v, w1 %s", st, f.state("evt", "w1"))
	}
	if c := f.counts("evt"); c.Allocated != 0 || c.Held != 1 {
		t.Fatalf("counts %+v", c)
	}
	f.checkInvariants("evt")
}

func countStatus(st map[string]SeatStatus, want SeatStatus) int {
	n := 0
	for _, s := range st {
		if s == want {
			n++
		}
	}
	return n
}
