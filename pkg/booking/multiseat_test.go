package booking

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice/pkg/testseed"
)

// Orders of several seats, in priced sections.

// twoSections is a 2-row floor at 50.00 and a 1-row balcony at 30.00,
// both 5 seats a row: one grid A1…C5.
func twoSections() []Section {
	return []Section{
		{Name: "Floor", Rows: 2, SeatsPerRow: 5, PriceCents: 5000},
		{Name: "Balcony", Rows: 1, SeatsPerRow: 5, PriceCents: 3000},
	}
}

func TestSectionsCreate(t *testing.T) {
	f := newFixture(t)
	e := f.event(EventConfig{Sections: twoSections(), Currency: "GBP", MaxSeatsPerOrder: 6})
	want := []EventSection{{Name: "Floor", PriceCents: 5000, Start: 0, Len: 10}, {Name: "Balcony", PriceCents: 3000, Start: 10, Len: 5}}
	if diff := cmp.Diff(want, e.Sections); diff != "" {
		t.Fatalf("sections (-want +got):\n%s", diff)
	}
	if e.Rows != 3 || e.PerRow != 5 || e.Counts.Total != 15 || e.Currency != "GBP" || e.MaxSeatsPerOrder != 6 ||
		e.PriceMinCents != 3000 || e.PriceMaxCents != 5000 {
		t.Fatalf("event %+v", e)
	}
	ids, _ := f.s.SeatMapIDs(f.ctx, "evt")
	if ids[0] != "A1" || ids[10] != "C1" || ids[14] != "C5" {
		t.Fatalf("ids %v", ids)
	}
	if sec, ok := e.SectionAt(10); !ok || sec.Name != "Balcony" {
		t.Fatalf("section of C1: %+v", sec)
	}
	// a retry with the same definition is idempotent
	if _, err := f.s.CreateEvent(f.ctx, EventConfig{ID: "evt", Sections: twoSections(), Currency: "GBP", MaxSeatsPerOrder: 6, Capacity: 2}); err != nil {
		t.Fatalf("retry: %v", err)
	}
	// sections of different widths or explicit ids: an indexed map
	mixed := f.event(EventConfig{ID: "mixed", Sections: []Section{
		{Name: "Stalls", Rows: 1, SeatsPerRow: 3, PriceCents: 100},
		{Name: "Boxes", Seats: []string{"BOX-1", "BOX-2"}, PriceCents: 900},
	}})
	if mixed.Rows != 0 || mixed.PerRow != 0 || mixed.Counts.Total != 5 || mixed.Currency != DefaultCurrency ||
		mixed.MaxSeatsPerOrder != DefaultMaxSeatsPerOrder {
		t.Fatalf("mixed %+v", mixed)
	}
	f.join("mixed", "u")
	if _, err := f.s.LockSeats(f.ctx, "mixed", "u", []string{"A3", "BOX-2"}); err != nil {
		t.Fatal(err)
	}
	ph, err := f.s.InitiatePayment(f.ctx, "mixed", "u", "p")
	if err != nil || ph.AmountCents != 1000 || ph.Currency != DefaultCurrency || !slices.Equal(ph.SeatIDs, []string{"A3", "BOX-2"}) {
		t.Fatalf("initiate %+v %v", ph, err)
	}
	f.checkInvariants("mixed")
}

// TestSectionsUnreadable: an event whose sections cannot be read (its
// config's JSON damaged) is an error, not an event of one section: one
// section would price every seat at 0 and misplace the sections of the
// seat map.
func TestSectionsUnreadable(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Sections: twoSections()})
	for _, bad := range []string{`[{"name":"Floor","len":10}`, `{"name":"Floor"}`, `[{"len":"ten"}]`} {
		if err := f.rdb.HSet(f.ctx, f.s.eventKeys("evt")[kConfig], "sections", bad).Err(); err != nil {
			t.Fatal(err)
		}
		e, err := f.s.GetEvent(f.ctx, "evt")
		if err == nil {
			t.Errorf("sections %s: no error, sections %+v", bad, e.Sections)
		} else if errors.Is(err, ErrEventNotFound) || errors.Is(err, ErrInvalidArgument) {
			t.Errorf("sections %s: %v, want an error of the stored event", bad, err)
		}
		if _, err := f.s.ListEvents(f.ctx); err == nil {
			t.Errorf("sections %s: ListEvents: no error", bad)
		}
	}
}

func TestSectionsInvalid(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		cfg  EventConfig
	}{
		{"sections and rows", EventConfig{Sections: twoSections(), Rows: 1, SeatsPerRow: 1}},
		{"no name", EventConfig{Sections: []Section{{Rows: 1, SeatsPerRow: 1}}}},
		{"duplicate name", EventConfig{Sections: []Section{{Name: "a", Rows: 1, SeatsPerRow: 1}, {Name: "a", Rows: 1, SeatsPerRow: 1}}}},
		{"negative price", EventConfig{Sections: []Section{{Name: "a", Rows: 1, SeatsPerRow: 1, PriceCents: -1}}}},
		{"no seats", EventConfig{Sections: []Section{{Name: "a"}}}},
		{"seats and rows", EventConfig{Sections: []Section{{Name: "a", Rows: 1, SeatsPerRow: 1, Seats: []string{"x"}}}}},
		{"duplicate seat across sections", EventConfig{Sections: []Section{{Name: "a", Seats: []string{"x"}}, {Name: "b", Seats: []string{"x"}}}}},
		{"comma in a seat id", EventConfig{Seats: []string{"a,b"}}},
		{"bad currency", EventConfig{Rows: 1, SeatsPerRow: 1, Currency: "euro"}},
		{"max seats above 10", EventConfig{Rows: 1, SeatsPerRow: 1, MaxSeatsPerOrder: 11}},
		{"max seats negative", EventConfig{Rows: 1, SeatsPerRow: 1, MaxSeatsPerOrder: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.ID = "bad"
			if _, err := f.s.CreateEvent(f.ctx, tc.cfg); !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("got %v, want ErrInvalidEvent", err)
			}
		})
	}
	f.event(EventConfig{})
	for _, v := range []int{0, 11} {
		if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{MaxSeatsPerOrder: &v}); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("update max %d: %v", v, err)
		}
	}
	two := 2
	if e, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{MaxSeatsPerOrder: &two}); err != nil || e.MaxSeatsPerOrder != 2 {
		t.Fatalf("update: %+v %v", e, err)
	}
	f.join("evt", "u")
	var tm *TooManySeatsError
	if _, err := f.s.LockSeats(f.ctx, "evt", "u", []string{"A1", "A2", "A3"}); !errors.As(err, &tm) || tm.Max != 2 || !errors.Is(err, ErrTooManySeats) {
		t.Fatalf("3 seats of at most 2: %v", err)
	}
}

func TestLockSeatsAllOrNone(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Sections: twoSections(), Capacity: 3})
	f.join("evt", "a")
	f.join("evt", "b")
	if _, err := f.s.LockSeats(f.ctx, "evt", "a", []string{"A1", "C5"}); err != nil {
		t.Fatal(err)
	}
	// b wants A2, A1, C5, C4: two are a's, nothing is locked
	_, err := f.s.LockSeats(f.ctx, "evt", "b", []string{"A2", "A1", "C5", "C4"})
	var taken *SeatsTakenError
	if !errors.As(err, &taken) || !errors.Is(err, ErrSeatUnavailable) || !slices.Equal(taken.Seats, []string{"A1", "C5"}) {
		t.Fatalf("overlap: %v", err)
	}
	s := f.seats("evt")
	if s["A2"] != SeatAvailable || s["C4"] != SeatAvailable || f.state("evt", "b") != StateActive {
		t.Fatalf("a failed selection locked something: %v, %s", s, f.state("evt", "b"))
	}
	// unknown seat: named, nothing locked
	var unknown *SeatUnknownError
	if _, err := f.s.LockSeats(f.ctx, "evt", "b", []string{"A2", "Z9"}); !errors.As(err, &unknown) || unknown.Seat != "Z9" {
		t.Fatalf("unknown: %v", err)
	}
	for _, bad := range [][]string{nil, {"A2", "A2"}} {
		if _, err := f.s.LockSeats(f.ctx, "evt", "b", bad); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	if _, err := f.s.LockSeats(f.ctx, "evt", "b", []string{"A2", "C4"}); err != nil {
		t.Fatal(err)
	}
	if c := f.counts("evt"); c.Held != 4 {
		t.Fatalf("held %d", c.Held)
	}
	f.checkInvariants("evt")
}

func TestLockSeatsReplace(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Sections: twoSections(), Capacity: 3})
	f.join("evt", "a")
	f.join("evt", "b")
	f.s.LockSeats(f.ctx, "evt", "a", []string{"A1", "A2", "A3"})
	f.s.LockSeats(f.ctx, "evt", "b", []string{"B1"})
	// replacing: A2 stays, A1 and A3 are freed, A4 taken
	if _, err := f.s.LockSeats(f.ctx, "evt", "a", []string{"A4", "A2"}); err != nil {
		t.Fatal(err)
	}
	s := f.seats("evt")
	if s["A1"] != SeatAvailable || s["A3"] != SeatAvailable || s["A2"] != SeatHeld || s["A4"] != SeatHeld {
		t.Fatalf("seats %v", s)
	}
	if st, _ := f.s.Position(f.ctx, "evt", "a"); st.SeatID != "A4,A2" {
		t.Fatalf("selection %q", st.SeatID)
	}
	// a replacement that collides changes nothing of the old selection
	if _, err := f.s.LockSeats(f.ctx, "evt", "a", []string{"A5", "B1"}); !errors.Is(err, ErrSeatUnavailable) {
		t.Fatal(err)
	}
	if s := f.seats("evt"); s["A2"] != SeatHeld || s["A4"] != SeatHeld || s["A5"] != SeatAvailable {
		t.Fatalf("failed replacement changed the hold: %v", s)
	}
	if c := f.counts("evt"); c.Held != 3 {
		t.Fatalf("held %d", c.Held)
	}
	f.checkInvariants("evt")
}

// Every way a hold ends releases every seat of it; a payment sells every
// seat and prices the order by section; a late payment refunds the whole.
func TestMultiSeatHoldEnds(t *testing.T) {
	seats := []string{"A1", "B5", "C1"} // floor, floor, balcony: 130.00
	for _, end := range []string{"expiry", "failure", "cancel", "success", "late"} {
		t.Run(end, func(t *testing.T) {
			f := newFixture(t)
			f.event(EventConfig{Sections: twoSections(), Capacity: 2, Hold: time.Minute, Grace: time.Second, Currency: "USD"})
			f.join("evt", "u")
			if _, err := f.s.LockSeats(f.ctx, "evt", "u", seats); err != nil {
				t.Fatal(err)
			}
			if end != "cancel" && end != "expiry" {
				ph, err := f.s.InitiatePayment(f.ctx, "evt", "u", "p")
				if err != nil || ph.AmountCents != 13000 || ph.Currency != "USD" || !slices.Equal(ph.SeatIDs, seats) {
					t.Fatalf("initiate %+v %v", ph, err)
				}
			}
			wantSold := int64(0)
			switch end {
			case "expiry":
				f.clock.Advance(2 * time.Minute)
				r, err := f.s.HandleTimeout(f.ctx, "evt", "u")
				if err != nil || r.Outcome != OutcomeReleased || r.SeatID != "A1,B5,C1" {
					t.Fatalf("timeout %+v %v", r, err)
				}
			case "failure":
				r, err := f.s.PaymentFailure(f.ctx, "evt", "u", "p")
				if err != nil || r.Outcome != OutcomeFailed || !slices.Equal(r.SeatIDs, seats) {
					t.Fatalf("failure %+v %v", r, err)
				}
			case "cancel":
				r, err := f.s.Cancel(f.ctx, "evt", "u")
				if err != nil || r.SeatID != "A1,B5,C1" || len(r.Outbox) != 1 || r.Outbox[0].SeatID != "A1,B5,C1" {
					t.Fatalf("cancel %+v %v", r, err)
				}
			case "success":
				r, err := f.s.PaymentSuccess(f.ctx, "evt", "u", "p")
				if err != nil || r.Outcome != OutcomeCompleted || r.AmountCents != 13000 || !slices.Equal(r.SeatIDs, seats) ||
					!slices.Equal(r.SeatPrices, []int64{5000, 5000, 3000}) {
					t.Fatalf("success %+v %v", r, err)
				}
				wantSold = 3
			case "late":
				f.clock.Advance(2 * time.Minute)
				f.s.HandleTimeout(f.ctx, "evt", "u") // grace
				f.clock.Advance(2 * time.Minute)
				f.s.HandleTimeout(f.ctx, "evt", "u") // released
				for i := range 2 {
					_, err := f.s.PaymentSuccess(f.ctx, "evt", "u", "p")
					var late *LatePaymentError
					if !errors.Is(err, ErrLatePayment) || !errors.As(err, &late) {
						t.Fatalf("late #%d: %v", i, err)
					}
					if r := late.Payment; r.AmountCents != 13000 || !slices.Equal(r.SeatIDs, seats) || r.Duplicate != (i == 1) {
						t.Fatalf("late #%d %+v %v", i, r, err)
					}
				}
			}
			c := f.counts("evt")
			if c.Held != 0 || c.Sold != wantSold || c.Available != 15-wantSold {
				t.Fatalf("counts %+v", c)
			}
			want := SeatAvailable
			if wantSold > 0 {
				want = SeatSold
			}
			for _, id := range seats {
				if s := f.seats("evt")[id]; s != want {
					t.Fatalf("seat %s %s, want %s", id, s, want)
				}
			}
			f.checkInvariants("evt")
		})
	}
}

// Racing users selecting overlapping sets: never both succeed on a seat,
// and a loser holds none of its seats.
func TestPropertyOverlappingSelections(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Rows: 3, SeatsPerRow: 20, Capacity: 50})
	seats := SeatIDs(3, 20)
	users := 40
	for i := range users {
		f.join("evt", "u"+strconv.Itoa(i))
	}
	seed := testseed.Seed(t)
	var wg sync.WaitGroup
	won := make([][]string, users)
	start := make(chan struct{})
	for i := range users {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			pick := rng.Perm(len(seats))[:1+rng.IntN(4)]
			var want []string
			for _, p := range pick {
				want = append(want, seats[p])
			}
			<-start
			_, err := f.s.LockSeats(f.ctx, "evt", "u"+strconv.Itoa(i), want)
			switch {
			case err == nil:
				won[i] = want
			case !errors.Is(err, ErrSeatUnavailable):
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	owner := map[string]int{}
	var n int64
	for i, w := range won {
		for _, s := range w {
			if j, dup := owner[s]; dup {
				t.Fatalf("seat %s won by u%d and u%d", s, j, i)
			}
			owner[s] = i
			n++
		}
	}
	if c := f.counts("evt"); c.Held != n {
		t.Fatalf("held %d, won %d", c.Held, n)
	}
	f.checkInvariants("evt")
}

// 10,000 concurrent buyers choosing random sets of 1-4 seats from 400:
// every seat is sold at most once and the seats sold are the sum of the
// completed orders' seats.
func TestPropertyMultiSeatNoOversell(t *testing.T) {
	buyers, nseats := 10_000, 400
	if testing.Short() {
		buyers = 1000
	}
	f := newFixture(t)
	f.event(EventConfig{Rows: 20, SeatsPerRow: 20, Capacity: buyers, MaxSeatsPerOrder: 4})
	var orders, orderSeats, conflicts atomic.Int64
	var mu sync.Mutex
	soldTo := map[string]string{}
	seed := testseed.Seed(t)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range buyers {
		user := "u" + strconv.Itoa(i)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			<-start
			r, err := f.s.Enqueue(f.ctx, "evt", user)
			if errors.Is(err, ErrSoldOut) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			if r.State != StateActive {
				return
			}
			for try := 0; try < 5; try++ {
				all, err := f.s.Seats(f.ctx, "evt")
				if err != nil {
					t.Error(err)
					return
				}
				var free []string
				for _, s := range all {
					if s.Status == SeatAvailable {
						free = append(free, s.ID)
					}
				}
				if len(free) == 0 {
					break
				}
				rng.Shuffle(len(free), func(a, b int) { free[a], free[b] = free[b], free[a] })
				want := free[:min(len(free), 1+rng.IntN(4))]
				_, err = f.s.LockSeats(f.ctx, "evt", user, want)
				if errors.Is(err, ErrSeatUnavailable) {
					conflicts.Add(1)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				pid := "pay-" + user
				if _, err := f.s.InitiatePayment(f.ctx, "evt", user, pid); err != nil {
					t.Error(err)
					return
				}
				res, err := f.s.PaymentSuccess(f.ctx, "evt", user, pid)
				if err != nil || res.Outcome != OutcomeCompleted {
					t.Errorf("pay %s: %+v %v", user, res, err)
					return
				}
				mu.Lock()
				for _, s := range res.SeatIDs {
					if prev, dup := soldTo[s]; dup {
						t.Errorf("seat %s sold to %s and %s", s, prev, user)
					}
					soldTo[s] = user
				}
				mu.Unlock()
				orders.Add(1)
				orderSeats.Add(int64(len(res.SeatIDs)))
				return
			}
			// sold out, or gave up after 5 conflicts: leave the room with nothing held
			if _, err := f.s.Cancel(f.ctx, "evt", user); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	c := f.counts("evt")
	if c.Sold != orderSeats.Load() || c.Held != 0 || int64(len(soldTo)) != c.Sold {
		t.Fatalf("sold %d held %d, orders' seats %d (%d distinct)", c.Sold, c.Held, orderSeats.Load(), len(soldTo))
	}
	f.checkInvariants("evt")
	t.Logf("%d orders, %d seats sold of %d, %d conflicts", orders.Load(), c.Sold, nseats, conflicts.Load())
}

// Random interleavings of every operation with multi-seat selections keep
// the invariants (checkInvariants: a selection is all held or none).
func TestPropertyMultiSeatInterleavings(t *testing.T) {
	for round := range 3 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			f, seed := newFixture(t), testseed.Seed(t)
			f.event(EventConfig{Sections: twoSections(), Capacity: 5, Hold: 20 * time.Second, Grace: 5 * time.Second})
			seats := SeatIDs(3, 5)
			var wg sync.WaitGroup
			for g := range 10 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 150 {
						u := "u" + strconv.Itoa(rng.IntN(40))
						switch rng.IntN(10) {
						case 0, 1:
							f.s.Enqueue(f.ctx, "evt", u)
						case 2:
							f.s.Promote(f.ctx, "evt", 1+rng.IntN(3))
						case 3, 4:
							var want []string
							for _, p := range rng.Perm(len(seats))[:1+rng.IntN(4)] {
								want = append(want, seats[p])
							}
							f.s.LockSeats(f.ctx, "evt", u, want)
						case 5:
							f.s.InitiatePayment(f.ctx, "evt", u, fmt.Sprintf("p-%s-%d", u, rng.IntN(2)))
						case 6:
							st, _ := f.s.Position(f.ctx, "evt", u)
							if rng.IntN(3) == 0 {
								f.s.PaymentFailure(f.ctx, "evt", u, st.PaymentID+"x")
								f.s.PaymentFailure(f.ctx, "evt", u, st.PaymentID)
							} else if st.PaymentID != "" {
								f.s.PaymentSuccess(f.ctx, "evt", u, st.PaymentID)
							}
						case 7:
							f.s.Cancel(f.ctx, "evt", u)
						case 8:
							f.s.HandleTimeout(f.ctx, "evt", u)
						case 9:
							f.clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
						}
					}
				})
			}
			wg.Wait()
			f.checkInvariants("evt")
		})
	}
}
