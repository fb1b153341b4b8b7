package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// joinWaitlist joins the waitlist the way the gateway does: Redis, then
// the ledger's record of the place.
func (g *rig) joinWaitlist(user string, seats int) booking.WaitlistStatus {
	g.t.Helper()
	ctx := context.Background()
	w, err := g.store.JoinWaitlist(ctx, g.event, user, seats)
	if err != nil {
		g.t.Fatalf("join waitlist %s: %v", user, err)
	}
	if err := g.led.RecordWaitlistJoin(ctx, ledger.WaitlistEntry{EventID: g.event, UserID: user,
		Sequence: w.Sequence, Seats: int(w.Seats)}); err != nil {
		g.t.Fatal(err)
	}
	return w
}

func (g *rig) waitlist(user string) booking.WaitlistStatus {
	g.t.Helper()
	w, err := g.store.Waitlist(context.Background(), g.event, user)
	if err != nil {
		g.t.Fatalf("waitlist %s: %v", user, err)
	}
	return w
}

// A rebuild of Redis from the ledger keeps the event's waitlist settings
// and every waiting fan's place; a fan whose offer was open (its hold is
// gone with Redis) is back at their place, and the seats the rebuild
// freed are offered to the waitlist in order before they go on sale. A
// fan who declined stays off it; a buyer is not offered seats again.
func TestRestoreKeepsTheWaitlistItsSettingsAndItsPlaces(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "wl", Name: "Waitlist", Rows: 1, SeatsPerRow: 3, Capacity: 10})
	ctx := context.Background()
	offer, early := 90*time.Second, true
	u := booking.EventUpdate{OfferTime: &offer, WaitlistEarly: &early}
	if _, err := g.led.UpdateEvent(ctx, g.event, u, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.store.SetWaitlist(ctx, g.event, booking.WaitlistSettings{OfferTime: offer, Early: early}); err != nil {
		t.Fatal(err)
	}
	seats := booking.SeatIDs(1, 3)
	// sold out: b0 and b1 bought, h holds the third seat
	for i, user := range []string{"b0", "b1"} {
		g.join(user)
		if ok, err := g.buy(user, seats[i]); !ok || err != nil {
			t.Fatalf("buy %s: %v %v", user, ok, err)
		}
	}
	g.join("h")
	if _, err := g.store.LockSeat(ctx, g.event, "h", seats[2]); err != nil {
		t.Fatal(err)
	}
	w1 := g.joinWaitlist("w1", 1)
	g.joinWaitlist("w2", 1)
	g.joinWaitlist("w3", 2)
	g.joinWaitlist("w4", 1)
	// h gives the seat back: offered to w1; w1's offer is open
	if _, err := g.store.Cancel(ctx, g.event, "h"); err != nil {
		t.Fatal(err)
	}
	if w := g.waitlist("w1"); w.State != booking.Offered {
		t.Fatalf("w1 before the rebuild: %+v", w)
	}
	// the ledger has w4's place closed (as a declined offer closes it)
	if err := g.led.RecordOfferDeclined(ctx, g.event, "w4", g.waitlist("w4").Sequence); err != nil {
		t.Fatal(err)
	}

	g.flush()
	if _, err := g.r.Restore(ctx, g.event); err != nil {
		t.Fatal(err)
	}

	e, err := g.store.GetEvent(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	if e.OfferSeconds != 90 || !e.WaitlistEarly {
		t.Fatalf("waitlist settings after the rebuild: offer %ds early %v", e.OfferSeconds, e.WaitlistEarly)
	}
	// the seat h held is free again: offered first to w1, at the head
	w := g.waitlist("w1")
	if w.State != booking.Offered || len(w.OfferSeats) != 1 || w.OfferSeats[0] != seats[2] || w.Sequence != w1.Sequence {
		t.Fatalf("w1 after the rebuild: %+v", w)
	}
	for i, user := range []string{"w2", "w3"} {
		w := g.waitlist(user)
		if w.State != booking.Waitlisted || w.Position != int64(i+1) {
			t.Fatalf("%s after the rebuild: %+v", user, w)
		}
	}
	if w := g.waitlist("w3"); w.Seats != 2 {
		t.Fatalf("w3 wants %d seats after the rebuild, not 2", w.Seats)
	}
	if _, err := g.store.Waitlist(ctx, g.event, "w4"); err == nil {
		t.Fatal("w4 declined before the rebuild and is back on the waitlist")
	}
	// a fan who joins after the rebuild queues behind the restored ones
	if w := g.joinWaitlist("w5", 1); w.Position != 3 {
		t.Fatalf("w5 joined after the rebuild at %d, not 3", w.Position)
	}
	// w1 declines: the seat goes to w2, the next in line
	a, err := g.store.AnswerOffer(ctx, g.event, "w1", w.Sequence, false)
	if err != nil || a.Outcome != booking.OfferDeclined {
		t.Fatalf("w1 declines: %+v %v", a, err)
	}
	if w := g.waitlist("w2"); w.State != booking.Offered {
		t.Fatalf("w2 after w1 declined: %+v", w)
	}
	g.checkStatus()
}
