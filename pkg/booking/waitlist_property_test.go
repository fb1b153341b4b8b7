package booking

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPropertyWaitlist: random rounds of waitlist joins, holds that end
// every way (cancel, timeout, promotion's reclaim, payment failure), sales
// cancelled, offers accepted, declined or left to run out, and purchases,
// on a small sold-out event. After every step: no seat is on general sale
// while a fan waits (every returned seat is offered first), each open
// offer's seats are held by its fan and by no other offer (one seat to
// one fan at a time), offers are made in waitlist order, and the engine's
// invariants hold.
func TestPropertyWaitlist(t *testing.T) {
	offers := 0
	for seed := range uint64(5) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { offers += waitlistProperty(t, seed) })
	}
	t.Logf("%d offers made", offers)
	if offers < 20 {
		t.Fatalf("%d offers made in all: the rounds test little", offers)
	}
}

// waitlistProperty runs one seed's rounds; it returns the offers made.
func waitlistProperty(t *testing.T, seed uint64) int {
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	const seats, fans = 6, 16
	ids := make([]string, seats)
	for i := range ids {
		ids[i] = "S" + strconv.Itoa(i+1)
	}
	f.event(EventConfig{Seats: ids, Capacity: seats, Hold: time.Minute, Grace: time.Second, MaxSeatsPerOrder: 2})
	if err := f.s.SetWaitlist(f.ctx, "evt", WaitlistSettings{OfferTime: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// three holders of two seats each: sold out
	for i := range seats / 2 {
		f.join("evt", "h"+strconv.Itoa(i))
	}
	if _, err := f.s.Promote(f.ctx, "evt", 0); err != nil {
		t.Fatal(err)
	}
	for i := range seats / 2 {
		if _, err := f.s.LockSeats(f.ctx, "evt", "h"+strconv.Itoa(i), ids[2*i:2*i+2]); err != nil {
			t.Fatal(err)
		}
	}
	users := make([]string, 0, seats+fans)
	for i := range seats / 2 {
		users = append(users, "h"+strconv.Itoa(i))
	}
	for i := range fans {
		users = append(users, "w"+strconv.Itoa(i))
	}
	seen := map[string]bool{} // offer entries already checked
	var lastOffer int64
	pids := 0
	for step := range 200 {
		u := users[rng.IntN(len(users))]
		var what string
		switch op := rng.IntN(11); op {
		case 0, 1, 10:
			what = "join the waitlist"
			_, _ = f.s.JoinWaitlist(f.ctx, "evt", u, 1+rng.IntN(2))
		case 2:
			what = "cancel"
			_, _ = f.s.Cancel(f.ctx, "evt", u)
		case 3, 4:
			w, err := f.s.Waitlist(f.ctx, "evt", u)
			if err == nil && w.State == Offered {
				what = "answer"
				_, _ = f.s.AnswerOffer(f.ctx, "evt", u, w.Sequence, rng.IntN(2) == 0)
			}
		case 5:
			what = "pay"
			pids++
			pid := "p" + strconv.Itoa(pids)
			if _, err := f.s.InitiatePayment(f.ctx, "evt", u, pid); err == nil {
				if rng.IntN(2) == 0 {
					_, _ = f.s.PaymentFailure(f.ctx, "evt", u, pid)
				} else if _, err := f.s.PaymentSuccess(f.ctx, "evt", u, pid); err == nil && rng.IntN(3) == 0 {
					what = "cancel a sale"
					st, _ := f.s.Position(f.ctx, "evt", u)
					_, _ = f.s.ReleaseSold(f.ctx, "evt", u, pid, SplitSeats(st.SeatID))
				}
			}
		case 6:
			what = "timeout"
			_, _ = f.s.HandleTimeout(f.ctx, "evt", u)
		case 7:
			what = "time passes, promotion"
			f.clock.Advance(time.Duration(10+rng.IntN(40)) * time.Second)
			_, _ = f.s.Promote(f.ctx, "evt", 0)
		case 8:
			what = "join the queue, promotion"
			_, _ = f.s.Enqueue(f.ctx, "evt", u)
			_, _ = f.s.Promote(f.ctx, "evt", 0)
		case 9:
			what = "select fewer seats"
			if st, err := f.s.Position(f.ctx, "evt", u); err == nil && len(SplitSeats(st.SeatID)) > 1 {
				_, _ = f.s.LockSeats(f.ctx, "evt", u, SplitSeats(st.SeatID)[:1])
			}
		}
		ctx := "step " + strconv.Itoa(step) + " (" + u + ": " + what + ")"
		// every returned seat is offered before it is on general sale
		waiting, err := f.rdb.ZCard(f.ctx, f.s.eventKeys("evt")[kWaitlist]).Result()
		if err != nil {
			t.Fatal(err)
		}
		if c := f.counts("evt"); waiting > 0 && c.Available > 0 {
			t.Fatalf("%s: %d seats on sale while %d fans wait", ctx, c.Available, waiting)
		}
		// each open offer's seats are its fan's, in no other offer
		open, err := f.rdb.HGetAll(f.ctx, f.s.eventKeys("evt")[kOffers]).Result()
		if err != nil {
			t.Fatal(err)
		}
		owner := map[string]string{}
		for field, v := range open {
			fan, ok := strings.CutPrefix(field, "o:")
			if !ok {
				continue
			}
			for _, seat := range SplitSeats(strings.Split(v, "|")[2]) {
				if o, dup := owner[seat]; dup {
					t.Fatalf("%s: %s offered to %s and %s", ctx, seat, o, fan)
				}
				owner[seat] = fan
				if got := f.rdb.HGet(f.ctx, f.s.eventKeys("evt")[kSeats], seat).Val(); got != "h:"+fan {
					t.Fatalf("%s: %s of %s's offer is %q", ctx, seat, fan, got)
				}
			}
		}
		// offers are made in waitlist order: each new offer's place comes
		// after every earlier offer's
		all, err := f.s.WaitlistOutbox(f.ctx, "evt")
		if err != nil {
			t.Fatal(err)
		}
		var fresh []int64
		for _, e := range all {
			if e.Kind == KindOffered && !seen[e.field()] {
				seen[e.field()] = true
				fresh = append(fresh, e.Sequence)
			}
		}
		slices.Sort(fresh)
		if len(fresh) > 0 {
			if fresh[0] <= lastOffer {
				t.Fatalf("%s: offer to place %d after one to place %d", ctx, fresh[0], lastOffer)
			}
			lastOffer = fresh[len(fresh)-1]
		}
		f.checkInvariants("evt")
		if t.Failed() {
			t.Fatalf("%s: invariants", ctx)
		}
	}
	return len(seen)
}
