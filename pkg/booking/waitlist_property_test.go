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
// on a small sold-out event whose sales end part way (users in the room
// finish within their hold on even seeds, their holds end with the sale
// on odd ones). After every step: no seat is sold twice (the buyers the
// steps saw are the seats hash's), no seat is on general sale while a fan
// waits before the end (every returned seat is offered first), each open
// offer's seats are held by its fan and by no other offer (one seat to
// one fan at a time), offers are made in waitlist order, and the engine's
// invariants hold. After the end nothing starts: no join, no admission,
// no offer; a hold finishes (selection, payment) only when the event
// lets holds finish, else a payment that lands is late.
func TestPropertyWaitlist(t *testing.T) {
	var all waitlistRounds
	for seed := range uint64(8) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			r := waitlistProperty(t, seed)
			all.offers += r.offers
			all.afterEnd += r.afterEnd
			all.finished += r.finished
		})
	}
	t.Logf("%d offers made, %d steps after the sales end with fans waiting or holding, %d sales after it",
		all.offers, all.afterEnd, all.finished)
	if all.offers < 20 || all.afterEnd < 50 || all.finished == 0 {
		t.Fatalf("the rounds test little: %+v", all)
	}
}

// waitlistRounds counts what one seed's rounds did: offers made, steps
// after the sales end with fans on the waitlist or holding seats, and
// sales after the end (holds that finished, as the event allows).
type waitlistRounds struct{ offers, afterEnd, finished int }

// waitlistProperty runs one seed's rounds.
func waitlistProperty(t *testing.T, seed uint64) waitlistRounds {
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	const seats, fans = 6, 16
	ids := make([]string, seats)
	for i := range ids {
		ids[i] = "S" + strconv.Itoa(i+1)
	}
	finish := seed%2 == 0
	f.event(EventConfig{Seats: ids, Capacity: seats, Hold: time.Minute, Grace: time.Second, MaxSeatsPerOrder: 2,
		HoldsEndWithSale: !finish})
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
	// half the fans wait from the start, so the seats returned first
	// have somewhere to go
	for i := range fans / 2 {
		if _, err := f.s.JoinWaitlist(f.ctx, "evt", "w"+strconv.Itoa(i), 1+rng.IntN(2)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{} // offer entries already checked
	var lastOffer int64
	pids := 0
	sold := map[string]string{} // seat -> buyer, as the steps saw it
	var end time.Time           // the sales end, once set
	var out waitlistRounds
	// pay takes u's hold through a payment that fails or succeeds (and now
	// and then a cancelled sale), the clock moving on sometimes in between;
	// it returns what started after the end and should not have.
	pay := func(step int, u string, what *string, ended *bool) (late []string) {
		pids++
		pid := "p" + strconv.Itoa(pids)
		if _, err := f.s.InitiatePayment(f.ctx, "evt", u, pid); err == nil {
			if *ended && !finish {
				late = append(late, "a payment started")
			}
			// the payment lands now or once the clock moved on
			if rng.IntN(3) == 0 {
				f.clock.Advance(time.Duration(rng.IntN(40)) * time.Second)
				*ended = !end.IsZero() && f.clock.Now().UnixMilli() > end.UnixMilli()
			}
			if rng.IntN(2) == 0 {
				_, _ = f.s.PaymentFailure(f.ctx, "evt", u, pid)
			} else if r, err := f.s.PaymentSuccess(f.ctx, "evt", u, pid); err == nil && r.Outcome == OutcomeCompleted {
				if *ended && !finish {
					late = append(late, "a sale after the end of an event whose holds end with it")
				}
				if *ended {
					out.finished++
				}
				for _, seat := range r.SeatIDs {
					if b, dup := sold[seat]; dup {
						t.Fatalf("step %d: %s sold to %s and to %s", step, seat, b, u)
					}
					sold[seat] = u
				}
				if rng.IntN(3) == 0 {
					*what = "cancel a sale"
					rel, err := f.s.ReleaseSold(f.ctx, "evt", u, pid, r.SeatIDs)
					if err == nil {
						for _, seat := range r.SeatIDs {
							if !slices.Contains(rel.Left, seat) {
								delete(sold, seat)
							}
						}
					}
				}
			}
		}
		return late
	}
	endStep := 20 + rng.IntN(80)
	for step := range 300 {
		if step == endStep {
			// the sale ends now, with holds still running
			end = f.clock.Now()
			if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{SalesEnd: &end}); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(time.Second)
		}
		// the sale has ended when Redis's clock is past the end
		ended := !end.IsZero() && f.clock.Now().UnixMilli() > end.UnixMilli()
		if step == endStep {
			// every holder tries to pay: they finish only when the event
			// lets holds finish
			for _, u := range users {
				if st, err := f.s.Position(f.ctx, "evt", u); err == nil && st.State == StateSeatSelected {
					what := "pay right after the end"
					if late := pay(step, u, &what, &ended); len(late) > 0 {
						t.Fatalf("step %d (%s: %s): after the sales end (finish %v): %v", step, u, what, finish, late)
					}
				}
			}
		}
		u := users[rng.IntN(len(users))]
		var what string
		var late []string // what started after the end and should not have
		switch op := rng.IntN(11); op {
		case 0, 1, 10:
			what = "join the waitlist"
			if w, err := f.s.JoinWaitlist(f.ctx, "evt", u, 1+rng.IntN(2)); err == nil && w.Created && ended {
				late = append(late, "a waitlist join")
			}
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
			late = pay(step, u, &what, &ended)
		case 6:
			what = "timeout"
			_, _ = f.s.HandleTimeout(f.ctx, "evt", u)
		case 7:
			what = "time passes, promotion"
			f.clock.Advance(time.Duration(10+rng.IntN(40)) * time.Second)
			ended = !end.IsZero() && f.clock.Now().UnixMilli() > end.UnixMilli()
			if r, err := f.s.Promote(f.ctx, "evt", 0); err == nil && len(r.Promoted) > 0 && ended {
				late = append(late, "an admission")
			}
		case 8:
			what = "join the queue, promotion"
			if j, err := f.s.Enqueue(f.ctx, "evt", u); err == nil && j.Created && ended {
				late = append(late, "a queue join")
			}
			if r, err := f.s.Promote(f.ctx, "evt", 0); err == nil && len(r.Promoted) > 0 && ended {
				late = append(late, "an admission")
			}
		case 9:
			what = "select fewer seats"
			if st, err := f.s.Position(f.ctx, "evt", u); err == nil && len(SplitSeats(st.SeatID)) > 1 {
				_, err := f.s.LockSeats(f.ctx, "evt", u, SplitSeats(st.SeatID)[:1])
				if err == nil && ended && !finish {
					late = append(late, "a seat selection")
				}
			}
		}
		ctx := "step " + strconv.Itoa(step) + " (" + u + ": " + what + ")"
		if len(late) > 0 {
			t.Fatalf("%s: after the sales end (finish %v): %v", ctx, finish, late)
		}
		// the seats hash sells what the steps saw sold, to the same buyers
		for seat, st := range f.seats("evt") {
			b, ok := sold[seat]
			if ok != (st == SeatSold) {
				t.Fatalf("%s: %s is %v, sold to %q as the steps saw it", ctx, seat, st, b)
			}
			if ok && f.rdb.HGet(f.ctx, f.s.eventKeys("evt")[kSeats], seat).Val() != "s:"+b {
				t.Fatalf("%s: %s sold to %q, not %s", ctx, seat, f.rdb.HGet(f.ctx, f.s.eventKeys("evt")[kSeats], seat).Val(), b)
			}
		}
		// every returned seat is offered before it is on general sale,
		// while the sale lasts
		waiting, err := f.rdb.ZCard(f.ctx, f.s.eventKeys("evt")[kWaitlist]).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ended && (waiting > 0 || f.counts("evt").Held > 0) {
			out.afterEnd++
		}
		if c := f.counts("evt"); !ended && waiting > 0 && c.Available > 0 {
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
		if len(fresh) > 0 && ended {
			t.Fatalf("%s: %d offers made after the sales end", ctx, len(fresh))
		}
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
	out.offers = len(seen)
	t.Logf("finish %v: %+v", finish, out)
	return out
}
