package main

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestWaitlistContract: the waitlist's journey and its bad input, every
// request and response validated against docs/openapi.yaml: a sold-out
// event's waitlist, an offer when a hold is cancelled, someone else's
// offer refused, a decline passing the seat on, an accept.
func TestWaitlistContract(t *testing.T) {
	hs := newHarness(t, true)
	_, bad := contractChecked(t, hs)
	alice, bob, carol := hs.token("alice", ""), hs.token("bob", ""), hs.token("carol", "")
	hs.createEvent(map[string]any{"id": "w1", "name": "Show", "seats": []string{"A1"}, "capacity": 1, "hold_seconds": 60})
	const wl = "/api/events/w1/waitlist"

	// no waitlist yet, then one: not sold out
	want(t, hs.do("POST", wl, bob, nil), 409, "waitlist_disabled")
	bad("PUT", "/api/admin/events/w1/waitlist", hs.admin, map[string]any{"offer_seconds": 3}, 400, "invalid_body")
	bad("PUT", "/api/admin/events/w1/waitlist", hs.admin, map[string]any{"early": true}, 400, "invalid_body")
	want(t, hs.do("PUT", "/api/admin/events/nope/waitlist", hs.admin, map[string]any{"offer_seconds": 60}), 404, "event_not_found")
	r := hs.do("PUT", "/api/admin/events/w1/waitlist", hs.admin, map[string]any{"offer_seconds": 60})
	want(t, r, 200, "")
	if r.num("offer_seconds") != 60 {
		t.Fatalf("settings: %s", r.raw)
	}
	want(t, hs.do("POST", wl, bob, nil), 409, "not_sold_out")
	want(t, hs.do("GET", "/api/events/w1", "", nil), 200, "")

	// alice holds the only seat: sold out
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "w1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "w1", "seat_id": "A1"}), 200, "")
	want(t, hs.do("POST", wl, alice, nil), 403, "invalid_state")
	bad("POST", wl, bob, map[string]any{"seats": 11}, 400, "invalid_body")
	bad("POST", wl, bob, map[string]any{"seats": 5}, 400, "invalid_argument") // over max_seats_per_order (4)
	want(t, hs.do("POST", wl, "", nil), 401, "")
	want(t, hs.do("POST", "/api/events/nope/waitlist", bob, nil), 404, "event_not_found")
	want(t, hs.do("GET", wl, bob, nil), 404, "booking_not_found")
	r = hs.do("POST", wl, bob, nil)
	want(t, r, 201, "")
	if r.str("state") != "waitlisted" || r.num("position") != 1 {
		t.Fatalf("bob join: %s", r.raw)
	}
	want(t, hs.do("POST", wl, bob, map[string]any{"seats": 1}), 200, "")
	want(t, hs.do("POST", wl, carol, nil), 201, "")
	if r := hs.do("GET", wl, carol, nil); r.num("position") != 2 || r.num("waitlisted") != 2 {
		t.Fatalf("carol: %s", r.raw)
	}
	if got := hs.ann.Waitlists(); len(got) != 3 {
		t.Fatalf("waitlist announcements %v", got)
	}

	// alice cancels: A1 is offered to bob
	want(t, hs.do("POST", "/api/booking/cancel", alice, map[string]any{"event_id": "w1"}), 200, "")
	r = hs.do("GET", wl, bob, nil)
	want(t, r, 200, "")
	if r.str("state") != "offered" || r.num("expire_time") == 0 {
		t.Fatalf("bob's offer: %s", r.raw)
	}
	offer := wl + "/offers/" + strconv.FormatInt(r.num("sequence"), 10)
	want(t, hs.do("POST", offer+"/accept", carol, nil), 403, "not_your_offer")
	want(t, hs.do("POST", wl+"/offers/999/accept", bob, nil), 404, "offer_not_found")
	want(t, hs.do("POST", wl+"/offers/x/accept", bob, nil), 404, "offer_not_found")
	r = hs.do("POST", offer+"/decline", bob, nil)
	want(t, r, 200, "")
	if r.str("outcome") != "declined" {
		t.Fatalf("decline: %s", r.raw)
	}
	want(t, hs.do("POST", offer+"/accept", bob, nil), 409, "offer_closed")

	// carol is next, accepts, and can pay the normal way
	r = hs.do("GET", wl, carol, nil)
	if r.str("state") != "offered" {
		t.Fatalf("carol's offer: %s", r.raw)
	}
	offer = wl + "/offers/" + strconv.FormatInt(r.num("sequence"), 10)
	r = hs.do("POST", offer+"/accept", carol, nil)
	want(t, r, 200, "")
	if r.str("outcome") != "accepted" || r.num("expire_time") == 0 {
		t.Fatalf("accept: %s", r.raw)
	}
	if r := hs.do("POST", offer+"/accept", carol, nil); r.code != 200 || r.body["duplicate"] != true {
		t.Fatalf("repeat accept: %s", r.raw)
	}
	want(t, hs.do("POST", offer+"/decline", carol, nil), 409, "offer_closed")
	if r := hs.do("GET", "/api/booking/position?event_id=w1", carol, nil); r.str("state") != "seat_selected" {
		t.Fatalf("carol holds A1: %s", r.raw)
	}
}

// TestWaitlistWritesGoToTheLedger: the waitlist's settings, each fan's
// place and a declined offer are in the system of record, which a
// rebuild of Redis restores them from (pkg/ledger).
func TestWaitlistWritesGoToTheLedger(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ctx := context.Background()
	alice, bob, carol := hs.token("alice", ""), hs.token("bob", ""), hs.token("carol", "")
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "seats": []string{"A1"}, "capacity": 1, "hold_seconds": 60})
	want(t, hs.do("PUT", "/api/admin/events/e1/waitlist", hs.admin, map[string]any{"offer_seconds": 75, "early": true}), 200, "")
	d, err := l.Event(ctx, "e1")
	if err != nil || d.Config.OfferTime != 75*time.Second || !d.Config.WaitlistEarly {
		t.Fatalf("ledger settings: %+v %v", d.Config, err)
	}
	want(t, hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", "/api/booking/select-seat", alice, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")
	const wl = "/api/events/e1/waitlist"
	b := hs.do("POST", wl, bob, map[string]any{"seats": 1})
	want(t, b, 201, "")
	want(t, hs.do("POST", wl, bob, nil), 200, "") // a repeat: the same place
	want(t, hs.do("POST", wl, carol, nil), 201, "")
	// one fan offered nothing yet: the wait is unknown
	if r := hs.do("GET", wl, carol, nil); r.body["eta_known"] != false || r.num("position") != 2 {
		t.Fatalf("carol's place: %s", r.raw)
	}
	places, err := l.WaitlistPlaces(ctx, "e1")
	if err != nil || len(places) != 2 || places[0].UserID != "bob" || places[0].Sequence != b.num("sequence") || places[1].UserID != "carol" {
		t.Fatalf("ledger places: %+v %v", places, err)
	}
	// bob declines the offer alice's cancel made: his place is closed
	want(t, hs.do("POST", "/api/booking/cancel", alice, map[string]any{"event_id": "e1"}), 200, "")
	want(t, hs.do("POST", wl+"/offers/"+strconv.FormatInt(b.num("sequence"), 10)+"/decline", bob, nil), 200, "")
	places, err = l.WaitlistPlaces(ctx, "e1")
	if err != nil || len(places) != 1 || places[0].UserID != "carol" {
		t.Fatalf("ledger places after bob declined: %+v %v", places, err)
	}
}
