package booking

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// soldOutWithWaitlist makes an event of n seats whose seats are all held by
// h1..hn, with offers of a minute, and waitlists fans w1..wm in order.
func soldOutWithWaitlist(f *fixture, n, m int) {
	f.t.Helper()
	seats := make([]string, n)
	for i := range seats {
		seats[i] = "S" + itoa(i+1)
	}
	f.event(EventConfig{Seats: seats, Capacity: n, Hold: time.Minute})
	if err := f.s.SetWaitlist(f.ctx, "evt", WaitlistSettings{OfferTime: time.Minute}); err != nil {
		f.t.Fatal(err)
	}
	for i := range n {
		f.join("evt", "h"+itoa(i+1))
	}
	if _, err := f.s.Promote(f.ctx, "evt", 0); err != nil {
		f.t.Fatal(err)
	}
	for i := range n {
		if _, err := f.s.LockSeat(f.ctx, "evt", "h"+itoa(i+1), seats[i]); err != nil {
			f.t.Fatal(err)
		}
	}
	for i := range m {
		w, err := f.s.JoinWaitlist(f.ctx, "evt", "w"+itoa(i+1), 1)
		if err != nil || w.State != Waitlisted || w.Position != int64(i+1) || !w.Created {
			f.t.Fatalf("join waitlist w%d: %+v %v", i+1, w, err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func (f *fixture) waitlist(user string) WaitlistStatus {
	f.t.Helper()
	w, err := f.s.Waitlist(f.ctx, "evt", user)
	if err != nil {
		f.t.Fatalf("waitlist %s: %v", user, err)
	}
	return w
}

// outboxOf returns the event's outbox entries of kind, as "user:from:seats".
func (f *fixture) outboxOf(kind OutboxKind) []string {
	f.t.Helper()
	all, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, e := range all {
		if e.Kind == kind {
			out = append(out, e.UserID+":"+e.From+":"+e.SeatID)
		}
	}
	return out
}

func TestWaitlistOffersInOrderAndPassesThemOn(t *testing.T) {
	f := newFixture(t)
	soldOutWithWaitlist(f, 2, 3)
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "h2", "pay-h2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.PaymentSuccess(f.ctx, "evt", "h2", "pay-h2"); err != nil {
		t.Fatal(err)
	}
	// a repeat join keeps the place
	again, err := f.s.JoinWaitlist(f.ctx, "evt", "w1", 1)
	if err != nil || again.Created || again.Position != 1 {
		t.Fatalf("repeat join: %+v %v", again, err)
	}
	if w := f.waitlist("w3"); w.Position != 3 || w.Waitlisted != 3 {
		t.Fatalf("w3: %+v", w)
	}
	// h1's hold runs out: S1 goes to w1 in the same step
	f.clock.Advance(61 * time.Second)
	if r, err := f.s.HandleTimeout(f.ctx, "evt", "h1"); err != nil || r.Outcome != OutcomeReleased {
		t.Fatalf("timeout h1: %+v %v", r, err)
	}
	w1 := f.waitlist("w1")
	if w1.State != Offered || !slices.Equal(w1.OfferSeats, []string{"S1"}) || !w1.ExpireAt.Equal(f.clock.Now().Add(time.Minute)) {
		t.Fatalf("w1 after S1 returned: %+v", w1)
	}
	if f.seats("evt")["S1"] != SeatHeld || f.state("evt", "w1") != StateSeatSelected {
		t.Fatalf("S1 %v, w1 %v: want held by w1", f.seats("evt")["S1"], f.state("evt", "w1"))
	}
	if w := f.waitlist("w2"); w.Position != 1 {
		t.Fatalf("w2 should be next: %+v", w)
	}
	// someone else's offer, or a wrong sequence: nothing changes
	if _, err := f.s.AnswerOffer(f.ctx, "evt", "w2", w1.Sequence, true); !errors.Is(err, ErrNotYourOffer) {
		t.Fatalf("foreign accept: %v", err)
	}
	if _, err := f.s.AnswerOffer(f.ctx, "evt", "w1", w1.Sequence+100, true); !errors.Is(err, ErrOfferNotFound) {
		t.Fatalf("unknown offer: %v", err)
	}
	// w1 declines: S1 goes to w2
	a, err := f.s.AnswerOffer(f.ctx, "evt", "w1", w1.Sequence, false)
	if err != nil || a.Outcome != OfferDeclined || a.OffersMade != 1 {
		t.Fatalf("decline: %+v %v", a, err)
	}
	if a, err := f.s.AnswerOffer(f.ctx, "evt", "w1", w1.Sequence, false); err != nil || !a.Duplicate {
		t.Fatalf("repeat decline: %+v %v", a, err)
	}
	if _, err := f.s.AnswerOffer(f.ctx, "evt", "w1", w1.Sequence, true); !errors.Is(err, ErrOfferClosed) {
		t.Fatalf("accept after decline: %v", err)
	}
	if _, err := f.s.Waitlist(f.ctx, "evt", "w1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("w1 after declining: %v", err)
	}
	w2 := f.waitlist("w2")
	if w2.State != Offered || !slices.Equal(w2.OfferSeats, []string{"S1"}) {
		t.Fatalf("w2: %+v", w2)
	}
	// w2 lets it run out; promotion's reclaim passes it on to w3 (no
	// timeout message needed)
	f.clock.Advance(61 * time.Second)
	if _, err := f.s.AnswerOffer(f.ctx, "evt", "w2", w2.Sequence, true); !errors.Is(err, ErrOfferExpired) {
		t.Fatalf("accept after the deadline: %v", err)
	}
	if _, err := f.s.Promote(f.ctx, "evt", 0); err != nil {
		t.Fatal(err)
	}
	w3 := f.waitlist("w3")
	if w3.State != Offered || !slices.Equal(w3.OfferSeats, []string{"S1"}) {
		t.Fatalf("w3: %+v", w3)
	}
	if c := f.counts("evt"); c.Held != 1 || c.Sold != 1 || c.Available != 0 {
		t.Fatalf("counts %+v: want S1 held for w3, S2 sold", c)
	}
	// w3 accepts and pays the normal way
	a, err = f.s.AnswerOffer(f.ctx, "evt", "w3", w3.Sequence, true)
	if err != nil || a.Outcome != OfferAccepted || !slices.Equal(a.Seats, []string{"S1"}) {
		t.Fatalf("accept: %+v %v", a, err)
	}
	if a, err := f.s.AnswerOffer(f.ctx, "evt", "w3", w3.Sequence, true); err != nil || !a.Duplicate {
		t.Fatalf("repeat accept: %+v %v", a, err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "w3", "pay-w3"); err != nil {
		t.Fatal(err)
	}
	if r, err := f.s.PaymentSuccess(f.ctx, "evt", "w3", "pay-w3"); err != nil || r.Outcome != OutcomeCompleted {
		t.Fatalf("pay: %+v %v", r, err)
	}
	f.checkInvariants("evt")
	if got := f.outboxOf(KindOffered); !slices.Equal(got, []string{"w1::S1", "w2::S1", "w3::S1"}) {
		t.Fatalf("offers made %v", got)
	}
	if got := f.outboxOf(KindOfferEnded); !slices.Equal(got, []string{"w1:declined:S1", "w2:expired:S1", "w3:accepted:S1"}) {
		t.Fatalf("offers ended %v", got)
	}
	if got := f.outboxOf(KindWaitlisted); len(got) != 3 {
		t.Fatalf("joins %v", got)
	}
	// each offer is an admission in the admission log, in order
	var offered []string
	for _, e := range f.rdb.LRange(f.ctx, f.s.eventKeys("evt")[kAlog], 0, -1).Val() {
		if p := strings.Split(e, "|"); p[2] == "offered" {
			offered = append(offered, p[3])
		}
	}
	if !slices.Equal(offered, []string{"w1", "w2", "w3"}) {
		t.Fatalf("offers in the admission log: %v", offered)
	}
}

// Every way a seat comes back offers it: a failed payment, a cancelled
// sale, an operator's release, a cancelled hold; one seat to one fan.
func TestWaitlistEveryReturnOffers(t *testing.T) {
	f := newFixture(t)
	soldOutWithWaitlist(f, 3, 5)
	// h1 pays, the payment fails: S1 to w1
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "h1", "pay-h1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.PaymentFailure(f.ctx, "evt", "h1", "pay-h1"); err != nil {
		t.Fatal(err)
	}
	// h2 buys, the sale is cancelled: S2 to w2
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "h2", "pay-h2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.PaymentSuccess(f.ctx, "evt", "h2", "pay-h2"); err != nil {
		t.Fatal(err)
	}
	if r, err := f.s.ReleaseSold(f.ctx, "evt", "h2", "pay-h2", []string{"S2"}); err != nil || r.Released != 1 {
		t.Fatalf("release sold: %+v %v", r, err)
	}
	// h3 cancels: S3 to w3
	if _, err := f.s.Cancel(f.ctx, "evt", "h3"); err != nil {
		t.Fatal(err)
	}
	for i, seat := range []string{"S1", "S2", "S3"} {
		w := f.waitlist("w" + itoa(i+1))
		if w.State != Offered || !slices.Equal(w.OfferSeats, []string{seat}) {
			t.Fatalf("w%d: %+v, want %s offered", i+1, w, seat)
		}
	}
	// w3 cancels its offer hold (a decline): S3 to w4; the operators hold
	// it afterwards? they cannot: it is held by w4
	if _, err := f.s.Cancel(f.ctx, "evt", "w3"); err != nil {
		t.Fatal(err)
	}
	if w := f.waitlist("w4"); w.State != Offered || !slices.Equal(w.OfferSeats, []string{"S3"}) {
		t.Fatalf("w4: %+v", w)
	}
	if _, err := f.s.MarkSeats(f.ctx, "evt", MarkHold, "artist", []string{"S3"}); !errors.Is(err, ErrSeatUnavailable) {
		t.Fatalf("hold an offered seat: %v", err)
	}
	// w1 buys S1; w4 declines S3 -> w5; w5 declines -> nobody: on sale
	a, _ := f.s.Waitlist(f.ctx, "evt", "w4")
	if _, err := f.s.AnswerOffer(f.ctx, "evt", "w4", a.Sequence, false); err != nil {
		t.Fatal(err)
	}
	w5 := f.waitlist("w5")
	if _, err := f.s.AnswerOffer(f.ctx, "evt", "w5", w5.Sequence, false); err != nil {
		t.Fatal(err)
	}
	if f.seats("evt")["S3"] != SeatAvailable {
		t.Fatalf("S3 with the waitlist empty: %v", f.seats("evt")["S3"])
	}
	// an operator hold, then a release, with a fan waiting: offered
	if _, err := f.s.MarkSeats(f.ctx, "evt", MarkHold, "artist", []string{"S3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.JoinWaitlist(f.ctx, "evt", "w6", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.MarkSeats(f.ctx, "evt", MarkRelease, "", []string{"S3"}); err != nil {
		t.Fatal(err)
	}
	if w := f.waitlist("w6"); w.State != Offered || !slices.Equal(w.OfferSeats, []string{"S3"}) {
		t.Fatalf("w6: %+v", w)
	}
	f.checkInvariants("evt")
	// each seat was offered to one fan at a time: offers of one seat
	// alternate with their ends
	open := map[string]string{}
	all, _ := f.s.Outbox(f.ctx, "evt", 0)
	slices.SortFunc(all, func(a, b OutboxEntry) int { return a.At.Compare(b.At) })
	for _, e := range all {
		switch e.Kind {
		case KindOffered:
			if u, ok := open[e.SeatID]; ok {
				t.Fatalf("%s offered to %s while open for %s", e.SeatID, e.UserID, u)
			}
			open[e.SeatID] = e.UserID
		case KindOfferEnded:
			delete(open, e.SeatID)
		}
	}
}

func TestWaitlistRefusals(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Seats: []string{"S1", "S2"}, Capacity: 2})
	if _, err := f.s.JoinWaitlist(f.ctx, "evt", "w1", 1); !errors.Is(err, ErrWaitlistDisabled) {
		t.Fatalf("disabled: %v", err)
	}
	if err := f.s.SetWaitlist(f.ctx, "evt", WaitlistSettings{OfferTime: time.Second}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("offer time too short: %v", err)
	}
	if err := f.s.SetWaitlist(f.ctx, "evt", WaitlistSettings{OfferTime: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.JoinWaitlist(f.ctx, "evt", "w1", 1); !errors.Is(err, ErrNotSoldOut) {
		t.Fatalf("not sold out: %v", err)
	}
	for _, n := range []int{0, 5} {
		if _, err := f.s.JoinWaitlist(f.ctx, "evt", "w1", n); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%d seats: %v", n, err)
		}
	}
	if _, err := f.s.JoinWaitlist(f.ctx, "nope", "w1", 1); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("no event: %v", err)
	}
	f.join("evt", "q1")
	var st *StateError
	if err := f.s.SetWaitlist(f.ctx, "evt", WaitlistSettings{OfferTime: time.Minute, Early: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.JoinWaitlist(f.ctx, "evt", "q1", 1); !errors.As(err, &st) {
		t.Fatalf("in the room: %v", err)
	}
	if w, err := f.s.JoinWaitlist(f.ctx, "evt", "w1", 2); err != nil || w.Position != 1 || w.Seats != 2 {
		t.Fatalf("early join: %+v %v", w, err)
	}
	e, err := f.s.GetEvent(f.ctx, "evt")
	if err != nil || e.OfferSeconds != 60 || !e.WaitlistEarly {
		t.Fatalf("event settings %+v %v", e, err)
	}
}

// A fan wanting two seats gets two returned seats in one offer.
func TestWaitlistOfferOfSeveralSeats(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Seats: []string{"S1", "S2", "S3"}, Capacity: 1, MaxSeatsPerOrder: 3})
	if err := f.s.SetWaitlist(f.ctx, "evt", WaitlistSettings{OfferTime: time.Minute}); err != nil {
		t.Fatal(err)
	}
	f.join("evt", "h1")
	if _, err := f.s.Promote(f.ctx, "evt", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.LockSeats(f.ctx, "evt", "h1", []string{"S1", "S2", "S3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.JoinWaitlist(f.ctx, "evt", "w1", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.JoinWaitlist(f.ctx, "evt", "w2", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Cancel(f.ctx, "evt", "h1"); err != nil {
		t.Fatal(err)
	}
	w1, w2 := f.waitlist("w1"), f.waitlist("w2")
	if !slices.Equal(w1.OfferSeats, []string{"S1", "S2"}) || !slices.Equal(w2.OfferSeats, []string{"S3"}) {
		t.Fatalf("w1 %+v w2 %+v", w1, w2)
	}
	f.checkInvariants("evt")
}

// A rebuild from the ledger keeps the waitlist; a fan whose offer was
// open goes back to their place at its head.
func TestWaitlistSurvivesRebuild(t *testing.T) {
	f := newFixture(t)
	soldOutWithWaitlist(f, 2, 3)
	f.clock.Advance(61 * time.Second)
	if _, err := f.s.HandleTimeout(f.ctx, "evt", "h1"); err != nil {
		t.Fatal(err)
	}
	if w := f.waitlist("w1"); w.State != Offered {
		t.Fatalf("w1 before the rebuild: %+v", w)
	}
	if err := f.rdb.Del(f.ctx, f.s.eventKeys("evt")[kConfig]).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := NormalizeEvent(EventConfig{ID: "evt", Name: "x", Seats: []string{"S1", "S2"}, Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.RestoreEvent(f.ctx, RestoreInput{Config: c, SeqBase: 100}); err != nil {
		t.Fatal(err)
	}
	if st := f.seats("evt"); st["S1"] != SeatAvailable || st["S2"] != SeatAvailable { // holds are not rebuilt
		t.Fatalf("seats after the rebuild: %v", st)
	}
	for i, u := range []string{"w1", "w2", "w3"} {
		if w := f.waitlist(u); w.State != Waitlisted || w.Position != int64(i+1) || w.Seats != 1 {
			t.Fatalf("%s after the rebuild: %+v", u, w)
		}
	}
	// offers resume once the settings are set again: a seat returned by
	// the operators goes to w1
	if err := f.s.SetWaitlist(f.ctx, "evt", WaitlistSettings{OfferTime: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.MarkSeats(f.ctx, "evt", MarkKill, "", []string{"S1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.MarkSeats(f.ctx, "evt", MarkRelease, "", []string{"S1"}); err != nil {
		t.Fatal(err)
	}
	if w := f.waitlist("w1"); w.State != Offered || !slices.Equal(w.OfferSeats, []string{"S1"}) {
		t.Fatalf("w1 after a release: %+v", w)
	}
	f.checkInvariants("evt")
}

// A waitlisted fan's estimate is their position at the pace fans were
// offered seats lately, and unknown without enough offers over long
// enough, or once the sale ended.
func TestWaitlistETA(t *testing.T) {
	f := newFixture(t)
	soldOutWithWaitlist(f, 3, 6)
	if w := f.waitlist("w6"); w.ETAKnown || w.OffersPerMinute != 0 || w.ETASeconds != 0 {
		t.Fatalf("no offer yet: %+v", w)
	}
	for i, h := range []string{"h1", "h2", "h3"} {
		if i > 0 {
			f.clock.Advance(30 * time.Second)
		}
		if _, err := f.s.Cancel(f.ctx, "evt", h); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			// two fans offered seats: too few to go by
			if w := f.waitlist("w6"); w.ETAKnown || w.Position != 4 {
				t.Fatalf("after two offers: %+v", w)
			}
		}
	}
	// three fans offered over a minute: three a minute; w6 is third
	w := f.waitlist("w6")
	if !w.ETAKnown || w.Position != 3 || w.OffersPerMinute != 3 || w.ETASeconds != 60 {
		t.Fatalf("after three offers in a minute: %+v", w)
	}
	if o := f.waitlist("w1"); o.State != Offered || o.ETAKnown {
		t.Fatalf("an offered fan has no estimate: %+v", o)
	}
	// the sale ends: no more offers, no estimate
	end := f.clock.Now()
	if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{SalesEnd: &end}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	if w := f.waitlist("w6"); w.ETAKnown || !w.SalesEnded {
		t.Fatalf("after the sales end: %+v", w)
	}
}
