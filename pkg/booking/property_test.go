package booking

// Property tests of the engine's correctness properties, over random
// interleavings of goroutines against the real Redis (docs/booking-engine.md
// lists the properties). The random choices come from testseed: a failure
// logs its seed, and BOXOFFICE_TEST_SEED=<seed> replays them.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/testseed"
)

// TestPropertyJoinIdempotent: joining many times, concurrently, adds a user
// once and always answers the same sequence.
func TestPropertyJoinIdempotent(t *testing.T) {
	for round := range 5 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			f, rng := newFixture(t), testseed.Rand(t)
			users, repeats := 20+rng.IntN(80), 2+rng.IntN(6)
			f.event(EventConfig{Capacity: 1 + rng.IntN(10)})
			seqs := make([][]int64, users)
			var mu sync.Mutex
			var wg sync.WaitGroup
			order := rng.Perm(users * repeats)
			for _, k := range order {
				u := k % users
				wg.Go(func() {
					r, err := f.s.Enqueue(f.ctx, "evt", "u"+strconv.Itoa(u))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seqs[u] = append(seqs[u], r.Sequence)
					mu.Unlock()
				})
			}
			wg.Wait()
			all := map[int64]bool{}
			for u, s := range seqs {
				for _, q := range s[1:] {
					if q != s[0] {
						t.Fatalf("user %d got sequences %v", u, s)
					}
				}
				if all[s[0]] {
					t.Fatalf("sequence %d given twice", s[0])
				}
				all[s[0]] = true
			}
			c := f.counts("evt")
			if c.Waiting+c.Active != int64(users) {
				t.Fatalf("%d users, %d waiting + %d active", users, c.Waiting, c.Active)
			}
			f.checkInvariants("evt")
		})
	}
}

// TestPropertyFIFOPromotion: users promoted are exactly the first K in join
// order, however many promoters race and whatever their batch sizes.
func TestPropertyFIFOPromotion(t *testing.T) {
	for round := range 5 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			f := newFixture(t)
			rng := testseed.Rand(t)
			capacity, users := 5+rng.IntN(40), 100+rng.IntN(100)
			paused, running := true, false
			f.event(EventConfig{Rows: 10, SeatsPerRow: 10, Capacity: capacity})
			f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Paused: &paused})
			for i := range users {
				f.join("evt", fmt.Sprintf("u%03d", i))
			}
			f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Paused: &running})
			var mu sync.Mutex
			var promoted []Admission
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 5 {
						p, err := f.s.Promote(f.ctx, "evt", 1+rng.IntN(7))
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						promoted = append(promoted, p.Promoted...)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(promoted) != capacity {
				t.Fatalf("promoted %d into a room of %d", len(promoted), capacity)
			}
			sort.Slice(promoted, func(i, j int) bool { return promoted[i].Sequence < promoted[j].Sequence })
			for i, a := range promoted {
				if want := fmt.Sprintf("u%03d", i); a.UserID != want || a.Sequence != int64(i+1) {
					t.Fatalf("promotion %d is %+v, want %s", i, a, want)
				}
			}
			f.checkInvariants("evt")
		})
	}
}

// TestPropertyHoldWindow: an admitted user's hold lasts exactly the hold
// window: not reclaimed a millisecond before, reclaimed at the deadline.
func TestPropertyHoldWindow(t *testing.T) {
	f := newFixture(t)
	rng := testseed.Rand(t)
	hold := time.Duration(1+rng.IntN(600)) * time.Second
	f.event(EventConfig{Capacity: 1, Hold: hold})
	r := f.join("evt", "a")
	f.join("evt", "b")
	if !r.ExpireAt.Equal(f.clock.Now().Add(hold)) {
		t.Fatalf("deadline %v, want now+%v", r.ExpireAt, hold)
	}
	f.clock.Advance(hold - time.Millisecond)
	if p, _ := f.s.Promote(f.ctx, "evt", 0); len(p.Expired) != 0 {
		t.Fatalf("reclaimed early: %+v", p)
	}
	if to, _ := f.s.HandleTimeout(f.ctx, "evt", "a"); to.Outcome != OutcomeNotDue {
		t.Fatalf("timeout early: %+v", to)
	}
	f.clock.Advance(time.Millisecond)
	if p, _ := f.s.Promote(f.ctx, "evt", 0); len(p.Expired) != 1 || len(p.Promoted) != 1 {
		t.Fatalf("not reclaimed at the deadline: %+v", p)
	}
}

// TestPropertyNoOversell: M concurrent buyers for N seats give exactly
// min(M, N) sales and no seat is sold twice.
func TestPropertyNoOversell(t *testing.T) {
	for _, tc := range []struct{ buyers, seats int }{
		{10, 1}, {50, 100}, {100, 100}, {300, 37}, {10_000, 100},
	} {
		t.Run(fmt.Sprintf("%d buyers %d seats", tc.buyers, tc.seats), func(t *testing.T) {
			f, rng := newFixture(t), testseed.Rand(t)
			ids := make([]string, tc.seats)
			for i := range ids {
				ids[i] = "S" + strconv.Itoa(i)
			}
			f.event(EventConfig{Seats: ids, Capacity: tc.buyers})
			// Everyone joins and tries at once. The room holds at most as
			// many users as there are unsold seats; those race for seats,
			// the others' attempts must be refused.
			var sold, unavailable, refused atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range tc.buyers {
				user := "u" + strconv.Itoa(i)
				wg.Go(func() {
					<-start
					r, err := f.s.Enqueue(f.ctx, "evt", user)
					if errors.Is(err, ErrSoldOut) { // the seats went before this user joined
						refused.Add(1)
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					if r.State != StateActive {
						_, err := f.s.LockSeat(f.ctx, "evt", user, ids[rng.IntN(len(ids))])
						if !errors.Is(err, ErrInvalidState) {
							t.Errorf("waiting user %s locked a seat: %v", user, err)
						}
						refused.Add(1)
						return
					}
					if buyAnySeat(f, rng, user, &unavailable) {
						sold.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			want := int64(min(tc.buyers, tc.seats))
			if sold.Load() != want {
				t.Fatalf("%d sales, want %d", sold.Load(), want)
			}
			c := f.counts("evt")
			if c.Sold != want || c.Held != 0 || c.Available != int64(tc.seats)-want {
				t.Fatalf("counts %+v", c)
			}
			f.checkInvariants("evt")
			if refused.Load() != int64(tc.buyers)-want {
				t.Fatalf("%d attempts refused, want %d", refused.Load(), int64(tc.buyers)-want)
			}
			t.Logf("%d seat conflicts resolved, %d attempts from the queue refused", unavailable.Load(), refused.Load())
		})
	}
}

// buyAnySeat is one buyer: read the seat map, try the free seats in random
// order until one holds, pay. False when no seat was left.
func buyAnySeat(f *fixture, rng *rand.Rand, user string, conflicts *atomic.Int64) bool {
	for {
		all, err := f.s.Seats(f.ctx, "evt")
		if err != nil {
			f.t.Error(err)
			return false
		}
		var free []string
		for _, s := range all {
			if s.Status == SeatAvailable {
				free = append(free, s.ID)
			}
		}
		if len(free) == 0 {
			return false
		}
		rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		for _, seat := range free {
			_, err := f.s.LockSeat(f.ctx, "evt", user, seat)
			if errors.Is(err, ErrSeatUnavailable) {
				conflicts.Add(1)
				continue
			}
			if err != nil {
				f.t.Error(err)
				return false
			}
			pid := "pay-" + user
			if _, err := f.s.InitiatePayment(f.ctx, "evt", user, pid); err != nil {
				f.t.Error(err)
				return false
			}
			r, err := f.s.PaymentSuccess(f.ctx, "evt", user, pid)
			if err != nil || r.Outcome != OutcomeCompleted {
				f.t.Errorf("pay %s: %+v %v", user, r, err)
				return false
			}
			return true
		}
	}
}

// TestPropertyExpiryOnce: an expiry is counted once, however many timeouts
// and promotions race for it.
func TestPropertyExpiryOnce(t *testing.T) {
	for round := range 10 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			f := newFixture(t)
			f.event(EventConfig{Capacity: 1, Hold: time.Minute, Grace: 0})
			f.join("evt", "a")
			f.join("evt", "b")
			f.s.LockSeat(f.ctx, "evt", "a", "A1")
			if round%2 == 1 { // half the rounds with a payment pending: grace first
				f.s.InitiatePayment(f.ctx, "evt", "a", "pa")
			}
			f.clock.Advance(time.Minute + DefaultGrace)
			var released, extended atomic.Int64
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Go(func() {
					if i%2 == 0 {
						r, err := f.s.HandleTimeout(f.ctx, "evt", "a")
						if err != nil {
							t.Error(err)
						}
						switch r.Outcome {
						case OutcomeReleased:
							released.Add(1)
						case OutcomeExtended:
							extended.Add(1)
						}
						return
					}
					p, err := f.s.Promote(f.ctx, "evt", 0)
					if err != nil {
						t.Error(err)
					}
					released.Add(int64(len(p.Expired)))
				})
			}
			wg.Wait()
			if released.Load() != 1 || extended.Load() != 0 {
				t.Fatalf("released %d times, extended %d", released.Load(), extended.Load())
			}
			c := f.counts("evt")
			if c.Held != 0 || c.Available != c.Total || c.Active != 1 {
				t.Fatalf("counts after expiry %+v", c)
			}
			f.checkInvariants("evt")
		})
	}
}

// Random interleavings of every operation from many goroutines, with time
// moving: the invariants of checkInvariants hold at the end, every sold
// seat has one buyer, and nobody is admitted out of join order.
func TestPropertyRandomInterleavings(t *testing.T) {
	for round := range 4 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			f, seed := newFixture(t), testseed.Seed(t)
			f.event(EventConfig{Rows: 3, SeatsPerRow: 5, Capacity: 4, Hold: 20 * time.Second, Grace: 5 * time.Second})
			users := 60
			seats := SeatIDs(3, 5)
			var wg sync.WaitGroup
			var admittedMu sync.Mutex
			var admitted []int64
			for g := range 12 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(seed, uint64(g))) // one stream per goroutine
					for range 150 {
						u := "u" + strconv.Itoa(rng.IntN(users))
						switch op := rng.IntN(10); op {
						case 0, 1:
							r, err := f.s.Enqueue(f.ctx, "evt", u)
							if err == nil && r.Created && r.State == StateActive {
								admittedMu.Lock()
								admitted = append(admitted, r.Sequence)
								admittedMu.Unlock()
							}
						case 2:
							p, _ := f.s.Promote(f.ctx, "evt", 1+rng.IntN(3))
							admittedMu.Lock()
							for _, a := range p.Promoted {
								admitted = append(admitted, a.Sequence)
							}
							admittedMu.Unlock()
						case 3, 4:
							f.s.LockSeat(f.ctx, "evt", u, seats[rng.IntN(len(seats))])
						case 5:
							f.s.InitiatePayment(f.ctx, "evt", u, "p-"+u)
						case 6:
							if rng.IntN(3) == 0 {
								f.s.PaymentFailure(f.ctx, "evt", u, "p-"+u)
							} else {
								f.s.PaymentSuccess(f.ctx, "evt", u, "p-"+u)
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
			// promotions and immediate admissions never overtake: sorted by
			// admission they are a prefix-closed set of sequences, i.e. no
			// sequence was admitted while a smaller one still waits
			k := keysFor(f.s.prefix, "evt")
			waiting, _ := f.rdb.ZRangeWithScores(f.ctx, k[kWaiting], 0, 0).Result()
			if len(waiting) > 0 {
				first := int64(waiting[0].Score)
				for _, s := range admitted {
					if s > first && slices.Contains(admitted, s) {
						// a later joiner was admitted while first waits: only
						// allowed if first joined (again) after that admission
						st, _ := f.s.Position(f.ctx, "evt", waiting[0].Member.(string))
						if st.Sequence < s {
							t.Fatalf("sequence %d admitted while %d waits", s, first)
						}
					}
				}
			}
		})
	}
}
