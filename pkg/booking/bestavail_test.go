package booking

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/testseed"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// checkRuns holds a grid event's index of free runs (lua/lib/rows.lua),
// once built, equal to the one computed from the status string.
func (f *fixture) checkRuns(event string) {
	f.t.Helper()
	k := keysFor(f.s.prefix, event)
	if f.rdb.ZScore(f.ctx, k[kRuns], "built").Err() != nil {
		return
	}
	cfg := f.rdb.HMGet(f.ctx, k[kConfig], "per_row", "rowlayout").Val()
	perRow, _ := strconv.Atoi(str(cfg[0]))
	if perRow == 0 && str(cfg[1]) == "" {
		return
	}
	status := f.rdb.Get(f.ctx, k[kStatus]).Val()
	var want []string
	for r, row := range rowsOf(status, str(cfg[1]), perRow) {
		want = append(want, runMembers(row, r)...)
	}
	got := f.rdb.ZRangeByScore(f.ctx, k[kRuns], &redis.ZRangeBy{Min: "0", Max: "+inf"}).Val()
	slices.Sort(want)
	slices.Sort(got)
	if d := cmp.Diff(strings.Join(want, " "), strings.Join(got, " ")); d != "" {
		f.t.Errorf("index of free runs differs from the status string (-want +got):\n%s", d)
	}
}

func str(v any) string { s, _ := v.(string); return s }

// rowsOf splits a status string into rows by a rowlayout ("n:len,...")
// or, without one, rows of perRow.
func rowsOf(status, layout string, perRow int) []string {
	if layout == "" {
		layout = strconv.Itoa(len(status)/perRow) + ":" + strconv.Itoa(perRow)
	}
	var rows []string
	pos := 0
	for _, part := range strings.Split(layout, ",") {
		n, _ := strconv.Atoi(strings.Split(part, ":")[0])
		l, _ := strconv.Atoi(strings.Split(part, ":")[1])
		for range n {
			rows = append(rows, status[pos:pos+l])
			pos += l
		}
	}
	return rows
}

// runMembers are row r's index members: kind c when c seats fit leaving
// no single free seat, 10 + c when c seats fit at all.
func runMembers(row string, r int) []string {
	fit := map[int]bool{}
	for _, run := range strings.FieldsFunc(row, func(c rune) bool { return c != 'a' }) {
		n := len(run)
		for c := 1; c <= min(n, 10); c++ {
			fit[10+c] = true
			if n == c || n >= c+2 {
				fit[c] = true
			}
		}
	}
	var out []string
	for k := range fit {
		out = append(out, strconv.FormatInt(int64(k)<<32+int64(r), 10))
	}
	return out
}

// cleanFit reports whether a row can take c adjacent free seats leaving
// no single free seat.
func cleanFit(row string, c int) bool {
	for _, run := range strings.FieldsFunc(row, func(r rune) bool { return r != 'a' }) {
		if len(run) == c || len(run) >= c+2 {
			return true
		}
	}
	return false
}

// admit joins users into a room big enough for all of them.
func (f *fixture) admit(event string, users ...string) {
	f.t.Helper()
	for _, u := range users {
		if r := f.join(event, u); r.State != StateActive {
			f.t.Fatalf("%s not admitted: %s", u, r.State)
		}
	}
}

func TestSelectBest(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 20, MaxSeatsPerOrder: 6, Sections: []Section{
		{Name: "Stalls", Rows: 2, SeatsPerRow: 8, PriceCents: 5000},
		{Name: "Circle", Rows: 2, SeatsPerRow: 8, PriceCents: 3000},
	}})
	f.admit("evt", "u1", "u2", "u3", "u4", "u5", "u6")
	f.mark("evt", MarkKill, "", "A4", "A5")
	f.mark("evt", MarkHold, "sponsor", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8")

	pick := func(user string, n int, section string) []string {
		t.Helper()
		r, err := f.s.SelectBest(f.ctx, "evt", user, n, section)
		if err != nil {
			t.Fatalf("select %d for %s: %v", n, user, err)
		}
		return r.Seats
	}
	// row A is split by the kill into A1-A3 and A6-A8: three fit, nearest the centre
	if got := pick("u1", 3, ""); !slices.Equal(got, []string{"A1", "A2", "A3"}) {
		t.Errorf("3 best: %v", got)
	}
	// four do not fit in row A: row B's centre
	if got := pick("u2", 4, ""); !slices.Equal(got, []string{"B3", "B4", "B5", "B6"}) {
		t.Errorf("4 best: %v", got)
	}
	// the section asked for; its first row is held for a sponsor
	if got := pick("u3", 2, "Circle"); !slices.Equal(got, []string{"D4", "D5"}) {
		t.Errorf("2 in the circle: %v", got)
	}
	// selecting again replaces the selection
	if got := pick("u3", 3, ""); !slices.Equal(got, []string{"A6", "A7", "A8"}) {
		t.Errorf("3 again: %v", got)
	}
	if st := f.seats("evt"); st["D4"] != SeatAvailable || st["A6"] != SeatHeld {
		t.Errorf("replaced selection: D4 %s A6 %s", st["D4"], st["A6"])
	}
	// two singles would be left by B1-B2 or B7-B8 with 1: B1-B2 exactly takes 2
	if got := pick("u4", 2, "Stalls"); !slices.Equal(got, []string{"B1", "B2"}) {
		t.Errorf("2 in the stalls: %v", got)
	}

	var left *NoAdjacentSeatsError
	_, err := f.s.SelectBest(f.ctx, "evt", "u5", 3, "Stalls")
	if !errors.As(err, &left) || left.Largest != 2 || left.Available != 32-2-8-3-4-2-3 {
		t.Errorf("3 in the full stalls: %v (%+v)", err, left)
	}
	var many *TooManySeatsError
	if _, err := f.s.SelectBest(f.ctx, "evt", "u5", 7, ""); !errors.As(err, &many) || many.Max != 6 {
		t.Errorf("7 seats: %v", err)
	}
	for _, bad := range []struct {
		n       int
		section string
		want    error
	}{
		{0, "", ErrInvalidArgument},
		{-1, "", ErrInvalidArgument},
		{11, "", ErrTooManySeats},
		{2, "Balcony", ErrSectionUnknown},
		{2, strings.Repeat("x", 101), ErrSectionUnknown},
		{2, "\xff", ErrSectionUnknown},
	} {
		if _, err := f.s.SelectBest(f.ctx, "evt", "u5", bad.n, bad.section); !errors.Is(err, bad.want) {
			t.Errorf("select %d in %q: %v, want %v", bad.n, bad.section, err, bad.want)
		}
	}
	if _, err := f.s.SelectBest(f.ctx, "evt", "nobody", 1, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("a user who never joined: %v", err)
	}
	f.checkInvariants("evt")
}

func TestNoOrphanRuleManual(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Rows: 2, SeatsPerRow: 6, Capacity: 10, NoOrphanRule: true})
	f.admit("evt", "u1", "u2")
	var orphan *OrphanSeatError
	_, err := f.s.LockSeats(f.ctx, "evt", "u1", []string{"A2", "A3"})
	if !errors.As(err, &orphan) || !slices.Equal(orphan.Orphans, []string{"A1"}) ||
		!slices.Equal(orphan.Suggested, []string{"A1", "A2"}) {
		t.Fatalf("A2-A3 leaving A1: %v (%+v)", err, orphan)
	}
	if c := f.counts("evt"); c.Held != 0 {
		t.Fatalf("refused selection held %d seats", c.Held)
	}
	// a choice leaving no single is held
	if _, err := f.s.LockSeats(f.ctx, "evt", "u1", []string{"A3", "A4"}); err != nil {
		t.Fatal(err)
	}
	// replacing it: the user's own seats count as free
	if _, err := f.s.LockSeats(f.ctx, "evt", "u1", []string{"A1", "A2"}); err != nil {
		t.Fatalf("replace with A1-A2: %v", err)
	}
	// when nothing else fits, the orphaning choice is allowed
	f.mark("evt", MarkKill, "", "B1", "B2", "B3", "B4", "B5", "B6", "A6")
	if _, err := f.s.LockSeats(f.ctx, "evt", "u2", []string{"A3", "A4"}); err != nil {
		t.Fatalf("the only choice left: %v", err)
	}
	// the rule switched off live
	off := false
	if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{NoOrphanRule: &off}); err != nil {
		t.Fatal(err)
	}
	if e, _ := f.s.GetEvent(f.ctx, "evt"); e.NoOrphanRule {
		t.Fatal("rule still on")
	}
	f.checkInvariants("evt")
}

// TestPropertyBestAvailableSequential runs seeded random best-available
// calls, marks and releases, and checks each pick against the status
// string before it: the seats were free, adjacent in one row of the
// section, in the first row that could take them without leaving a
// single free seat, and a pick that left one had no such row.
func TestPropertyBestAvailableSequential(t *testing.T) {
	f := newFixture(t)
	const perRow = 12
	f.event(EventConfig{Capacity: 1000, MaxSeatsPerOrder: 6, Sections: []Section{
		{Name: "S1", Rows: 6, SeatsPerRow: perRow}, {Name: "S2", Rows: 6, SeatsPerRow: perRow},
	}})
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 38))
	k := keysFor(f.s.prefix, "evt")
	all := SeatIDs(12, perRow)
	var holders []string
	var picks, orphaned, refused int
	for step := range 600 {
		switch x := rng.IntN(10); {
		case x == 0:
			seat := all[rng.IntN(len(all))]
			_, err := f.s.MarkSeats(f.ctx, "evt", []SeatMark{MarkHold, MarkKill, MarkAllocate}[rng.IntN(3)], "p", []string{seat})
			if err != nil && !errors.Is(err, ErrSeatUnavailable) { // a fan's seat is refused
				t.Fatal(err)
			}
			continue
		case x == 1 && len(holders) > 0:
			u := holders[rng.IntN(len(holders))]
			if _, err := f.s.Cancel(f.ctx, "evt", u); err != nil && !errors.Is(err, ErrCannotCancel) {
				t.Fatal(err)
			}
			continue
		case x == 2:
			seat := all[rng.IntN(len(all))]
			if v := f.rdb.HGet(f.ctx, k[kSeats], seat).Val(); strings.HasPrefix(v, "r:") || strings.HasPrefix(v, "k:") ||
				strings.HasPrefix(v, "c:") {
				f.mark("evt", MarkRelease, "", seat)
			}
			continue
		}
		user := "u" + strconv.Itoa(step)
		if f.join("evt", user).State != StateActive { // the room is full of holds
			if _, err := f.s.Cancel(f.ctx, "evt", user); err != nil {
				t.Fatal(err)
			}
			continue
		}
		n := 1 + rng.IntN(6)
		section, r0, r1 := "", 0, 11
		if rng.IntN(3) == 0 {
			section, r0, r1 = "S2", 6, 11
		}
		before := f.rdb.Get(f.ctx, k[kStatus]).Val()
		res, err := f.s.SelectBest(f.ctx, "evt", user, n, section)
		rows := rowsOf(before, "", perRow)
		firstClean, firstAny := -1, -1
		for r := r0; r <= r1; r++ {
			if firstClean < 0 && cleanFit(rows[r], n) {
				firstClean = r
			}
			if firstAny < 0 && strings.Contains(rows[r], strings.Repeat("a", n)) {
				firstAny = r
			}
		}
		if errors.Is(err, ErrNoAdjacentSeats) {
			if firstAny >= 0 {
				t.Fatalf("step %d: %d seats refused, row %d has them: %q", step, n, firstAny, rows[firstAny])
			}
			if _, err := f.s.Cancel(f.ctx, "evt", user); err != nil {
				t.Fatal(err)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		picks++
		if res.Orphaned {
			orphaned++
		}
		holders = append(holders, user)
		want := firstClean
		if want < 0 {
			want = firstAny
		}
		pos := slices.Index(all, res.Seats[0])
		row, off := pos/perRow, pos%perRow
		if row != want || len(res.Seats) != n || res.Orphaned != (firstClean < 0) {
			t.Fatalf("step %d: %d seats in %q gave %v (orphaned %v), want row %d", step, n, section, res, res.Orphaned, want)
		}
		for i, s := range res.Seats {
			if s != all[pos+i] || before[pos+i] != 'a' || (pos+i)/perRow != row {
				t.Fatalf("step %d: %v not %d adjacent free seats of row %d: %q", step, res.Seats, n, row, rows[row])
			}
		}
		after := rows[row][:off] + strings.Repeat("h", n) + rows[row][off+n:]
		if firstClean >= 0 && !cleanFit(rows[row], n) || (firstClean >= 0 && leavesSingle(after, off, n)) {
			t.Fatalf("step %d: %v left a single free seat in %q", step, res.Seats, after)
		}
	}
	f.checkInvariants("evt")
	if picks == 0 || orphaned == 0 || refused == 0 {
		t.Errorf("%d picks, %d leaving a single seat, %d refused: the run tried too little", picks, orphaned, refused)
	}
	t.Logf("%d picks, %d leaving a single seat (no other fitting), %d refused", picks, orphaned, refused)
}

// leavesSingle reports whether a single free seat sits beside the n seats
// from off in row.
func leavesSingle(row string, off, n int) bool {
	single := func(i int) bool {
		return i >= 0 && i < len(row) && row[i] == 'a' && (i == 0 || row[i-1] != 'a') && (i == len(row)-1 || row[i+1] != 'a')
	}
	return single(off-1) || single(off+n)
}

// TestPropertyBestAvailableConcurrent: 1,000 concurrent fans, each
// asking best available for 1 to 6 seats and paying, on a 10,000-seat
// map of 50-seat rows with seats held and killed and two rows allocated
// to a partner channel (a tenth of the fans buy through it), sell no
// seat twice, never a held or killed one, an allocated one only through
// its channel, and fill at least 98 % of the seats on sale; the index of
// free runs ends equal to the status string.
func TestPropertyBestAvailableConcurrent(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Rows: 200, SeatsPerRow: 50, Capacity: 100_000, MaxSeatsPerOrder: 6})
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	all := SeatIDs(200, 50)
	marked := map[string]bool{}
	for range 150 {
		s := all[rng.IntN(len(all))]
		marked[s] = true
		f.mark("evt", []SeatMark{MarkHold, MarkKill}[rng.IntN(2)], "artist", s)
	}
	sellable := len(all) - len(marked)
	allocated := map[string]bool{}
	for _, s := range all[100:200] { // rows C and D
		if !marked[s] {
			allocated[s] = true
		}
	}
	if _, err := f.s.AllocateSeats(f.ctx, "evt", "partner", time.Time{}, slices.Collect(maps.Keys(allocated))); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	soldTo := map[string]string{}
	var next, refusedInARow atomic.Int64
	var wg sync.WaitGroup
	for w := range 1000 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)+1))
			for refusedInARow.Load() < 500 {
				user := "u" + strconv.FormatInt(next.Add(1), 10)
				r, err := f.s.Enqueue(f.ctx, "evt", user)
				if err != nil {
					t.Errorf("join %s: %v", user, err)
					return
				}
				for st := r.State; st == StateWaiting; { // the room is full of fans paying
					if _, err := f.s.Promote(f.ctx, "evt", 100); err != nil {
						t.Error(err)
						return
					}
					pos, err := f.s.Position(f.ctx, "evt", user)
					if err != nil {
						t.Error(err)
						return
					}
					st = pos.State
				}
				channel := ""
				if w%10 == 0 {
					channel = "partner"
				}
				res, err := f.s.SelectBestVia(f.ctx, "evt", user, channel, false, 1+rng.IntN(6), "")
				if errors.Is(err, ErrNoAdjacentSeats) {
					refusedInARow.Add(1)
					if _, err := f.s.Cancel(f.ctx, "evt", user); err != nil {
						t.Error(err)
					}
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				refusedInARow.Store(0)
				pid := "pay-" + user
				if _, err := f.s.InitiatePayment(f.ctx, "evt", user, pid); err != nil {
					t.Error(err)
					return
				}
				paid, err := f.s.PaymentSuccess(f.ctx, "evt", user, pid)
				if err != nil || paid.Outcome != OutcomeCompleted {
					t.Errorf("pay %s: %+v %v", user, paid, err)
					return
				}
				mu.Lock()
				for _, s := range res.Seats {
					if prev, dup := soldTo[s]; dup || marked[s] || (allocated[s] && channel != "partner") {
						t.Errorf("seat %s sold to %s through %q (before: %q, marked %v, allocated %v)", s, user, channel, prev,
							marked[s], allocated[s])
					}
					soldTo[s] = user
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	c := f.counts("evt")
	if int64(len(soldTo)) != c.Sold || c.Held != 0 {
		t.Fatalf("sold %d held %d, fans' seats %d", c.Sold, c.Held, len(soldTo))
	}
	if fill := float64(c.Sold) / float64(sellable); fill < 0.98 {
		t.Errorf("filled %.3f of %d seats on sale", fill, sellable)
	}
	through := 0
	for s := range allocated {
		if _, ok := soldTo[s]; ok {
			through++
		}
	}
	if through != len(allocated) || c.Allocated != 0 {
		t.Errorf("%d of %d allocated seats sold through the channel, %d left allocated", through, len(allocated), c.Allocated)
	}
	f.checkInvariants("evt")
	t.Logf("%d of %d seats on sale sold to %d fans", c.Sold, sellable, next.Load())
}
