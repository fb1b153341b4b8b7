package booking

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// withClocks gives a Store a process clock (Now) and, apart from it, the
// clock its scripts read (the test clock, as WithClock sets both): a
// store on a host whose clock is off.
func withClocks(process, scripts func() time.Time) Option {
	return func(s *Store) { WithClock(scripts)(s); WithProcessClock(process)(s) }
}

// skewed returns the fixture's store and two more on its prefix whose
// process clocks are 30 s ahead of and behind Redis's (the fixture's
// clock, which every store's scripts read).
func (f *fixture) skewed() []*Store {
	stores := []*Store{f.s}
	for _, d := range []time.Duration{30 * time.Second, -30 * time.Second} {
		s := New(f.rdb, WithPrefix(f.s.Prefix()), withClocks(func() time.Time { return f.clock.Now().Add(d) }, f.clock.Now))
		f.t.Cleanup(s.Close)
		stores = append(stores, s)
	}
	return stores
}

// TestOneClockAcrossSkewedStores: with three stores on one Redis whose
// process clocks are 30 s apart in both directions, whichever store
// admits, selects, pays or times out a hold, the hold lasts exactly its
// hold time by Redis's clock: it is never released a millisecond early, a
// payment made within it completes (never a refund), and at its deadline
// it expires.
func TestOneClockAcrossSkewedStores(t *testing.T) {
	f := newFixture(t)
	stores := f.skewed()
	const hold = time.Minute
	for turn := range 3 {
		// role r is played by stores[(turn+r)%3]
		by := func(r int) *Store { return stores[(turn+r)%3] }
		t.Run(fmt.Sprintf("paid_in_time/%d", turn), func(t *testing.T) {
			ev := fmt.Sprintf("paid%d", turn)
			f.event(EventConfig{ID: ev, Capacity: 1, Hold: hold})
			f.join(ev, "first") // fills the room
			if _, err := by(0).Enqueue(f.ctx, ev, "u"); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.Cancel(f.ctx, ev, "first"); err != nil {
				t.Fatal(err)
			}
			start := f.clock.Now()
			p, err := by(1).Promote(f.ctx, ev, 0)
			if err != nil || len(p.Promoted) != 1 {
				t.Fatalf("promote: %+v %v", p, err)
			}
			deadline := p.Promoted[0].ExpireAt
			if deadline != start.Add(hold) || p.At != start {
				t.Fatalf("deadline %v at %v, want %v at %v (Redis's clock)", deadline, p.At, start.Add(hold), start)
			}
			f.clock.Advance(hold - 2*time.Millisecond)
			if _, err := by(2).LockSeat(f.ctx, ev, "u", "A1"); err != nil {
				t.Fatalf("select 2 ms before the deadline: %v", err)
			}
			f.clock.Advance(time.Millisecond)
			if _, err := by(0).InitiatePayment(f.ctx, ev, "u", "pay-"+ev); err != nil {
				t.Fatalf("pay 1 ms before the deadline: %v", err)
			}
			for _, s := range stores {
				if r, err := s.HandleTimeout(f.ctx, ev, "u"); err != nil || r.Outcome != OutcomeNotDue {
					t.Fatalf("timeout 1 ms before the deadline: %+v %v", r, err)
				}
				if p, err := s.Promote(f.ctx, ev, 0); err != nil || len(p.Expired) != 0 {
					t.Fatalf("promotion 1 ms before the deadline expired %+v (%v)", p.Expired, err)
				}
			}
			// the provider confirms after the deadline, within the grace
			f.clock.Advance(time.Second)
			if r, err := by(1).HandleTimeout(f.ctx, ev, "u"); err != nil || r.Outcome != OutcomeExtended {
				t.Fatalf("timeout in payment: %+v %v", r, err)
			}
			r, err := by(2).PaymentSuccess(f.ctx, ev, "u", "pay-"+ev)
			if err != nil || r.Outcome != OutcomeCompleted {
				t.Fatalf("payment made in time: %+v %v, want completed", r, err)
			}
		})
		t.Run(fmt.Sprintf("expires_at_its_deadline/%d", turn), func(t *testing.T) {
			ev := fmt.Sprintf("exp%d", turn)
			f.event(EventConfig{ID: ev, Capacity: 1, Hold: hold})
			start := f.clock.Now()
			j, err := by(0).Enqueue(f.ctx, ev, "u")
			if err != nil || j.State != StateActive || j.ExpireAt != start.Add(hold) || j.At != start {
				t.Fatalf("join: %+v %v, want admitted until %v", j, err, start.Add(hold))
			}
			if _, err := by(1).LockSeat(f.ctx, ev, "u", "A1"); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(hold - time.Millisecond)
			for _, s := range stores {
				if r, err := s.HandleTimeout(f.ctx, ev, "u"); err != nil || r.Outcome != OutcomeNotDue {
					t.Fatalf("timeout 1 ms early: %+v %v", r, err)
				}
				if st, err := s.Position(f.ctx, ev, "u"); err != nil || st.State != StateSeatSelected {
					t.Fatalf("position 1 ms early: %+v %v", st, err)
				}
			}
			f.clock.Advance(time.Millisecond)
			if _, err := by(0).LockSeat(f.ctx, ev, "u", "A2"); !errors.Is(err, ErrHoldExpired) {
				t.Fatalf("select at the deadline: %v, want hold expired", err)
			}
			r, err := by(2).HandleTimeout(f.ctx, ev, "u")
			if err != nil || r.Outcome != OutcomeReleased || r.ExpireAt != start.Add(hold) {
				t.Fatalf("timeout at the deadline: %+v %v", r, err)
			}
		})
	}
}

// TestLimitsAgreeAcrossSkewedStores: the abuse limits and the rate cap
// decide the same whichever store asks, whatever its process's clock:
// one event served by one store, another by the three in turn, the same
// calls at the same Redis times.
func TestLimitsAgreeAcrossSkewedStores(t *testing.T) {
	f := newFixture(t)
	stores := f.skewed()
	for _, ev := range []string{"one", "many"} {
		f.event(EventConfig{ID: ev, Capacity: 1000, Rows: 20, SeatsPerRow: 50, AdmitPerMinute: 5})
	}
	ip := Limit{Subject: "ip:198.51.100.7", Rate: 3, Period: time.Second}
	decisions := map[string][]string{}
	for i := range 60 {
		for _, ev := range []string{"one", "many"} {
			s := f.s
			if ev == "many" {
				s = stores[i%3]
			}
			var d []string
			u := fmt.Sprintf("u%d", i)
			j, err := s.Enqueue(f.ctx, ev, u, ip, Limit{Subject: UserSubject(u), Rate: 1, Period: time.Second})
			var rl *RateLimitedError
			switch {
			case errors.As(err, &rl):
				d = append(d, "join limited "+rl.RetryAfter.String())
			case err != nil:
				t.Fatal(err)
			default:
				d = append(d, "join "+string(j.State))
			}
			if err := s.CheckLimits(f.ctx, ev, ip); errors.As(err, &rl) {
				d = append(d, "check limited "+rl.RetryAfter.String())
			} else if err != nil {
				t.Fatal(err)
			}
			p, err := s.Promote(f.ctx, ev, 0)
			if err != nil {
				t.Fatal(err)
			}
			d = append(d, fmt.Sprintf("promote %d %s", len(p.Promoted), p.Reason))
			decisions[ev] = append(decisions[ev], strings.Join(d, ", "))
		}
		f.clock.Advance(time.Duration(150+37*(i%5)) * time.Millisecond)
		if i%20 == 19 {
			f.clock.Advance(40 * time.Second)
		}
	}
	if d := cmp.Diff(decisions["one"], decisions["many"]); d != "" {
		t.Fatalf("one store (-) and three skewed stores (+) decided differently:\n%s", d)
	}
	seen := strings.Join(decisions["one"], "\n")
	for _, want := range []string{"join limited", "check limited", "join active", "join waiting", "rate_capped"} {
		if !strings.Contains(seen, want) {
			t.Errorf("no %q decision in the run:\n%s", want, seen)
		}
	}
}

// TestScriptsReadRedisClock: a store without a test clock (production's
// case) whose process clock is 30 s off either way: its scripts judge by
// Redis's clock (TIME), and what they answer says so.
func TestScriptsReadRedisClock(t *testing.T) {
	rdb := redistest.Client(t)
	for _, skew := range []time.Duration{30 * time.Second, -30 * time.Second} {
		s := New(rdb, WithPrefix(strings.TrimSuffix(redistest.Prefix(t), ":")+skew.String()),
			withClocks(func() time.Time { return time.Now().Add(skew) }, nil))
		t.Cleanup(s.Close)
		ctx := context.Background()
		if _, err := s.CreateEvent(ctx, EventConfig{ID: "e", Rows: 1, SeatsPerRow: 2, Capacity: 1, Hold: time.Minute}); err != nil {
			t.Fatal(err)
		}
		before, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		j, err := s.Enqueue(ctx, "e", "u")
		if err != nil {
			t.Fatal(err)
		}
		after, _ := s.Clock(ctx, "e")
		lo, hi := before.Truncate(time.Millisecond), after
		if j.At.Before(lo) || j.At.After(hi) || j.ExpireAt != j.At.Add(time.Minute) {
			t.Fatalf("process clock %v off: joined at %v until %v, want Redis's time in [%v, %v] plus the hold",
				skew, j.At, j.ExpireAt, lo, hi)
		}
	}
}
