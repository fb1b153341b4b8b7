package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// A phased sale verifies: a registered presale whose waiters move on
// into the general sale, whose own pre-queue (joined during the presale)
// is drawn at its start, then fans who joined after it. Check recomputes
// the phase's draw and finds every admission in the order the rules
// give (the drawn fans ranked as join base + rank); a draw whose base is
// moved puts them after the later joiners and is caught as overtakes.
func TestVerifyAPhasedSale(t *testing.T) {
	ctx := context.Background()
	s := runPhasedSale(t)
	rec, err := Fetch(ctx, http.DefaultClient, s.srv.URL, "ph")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.PhaseDraws) != 1 || rec.PhaseDraws[0].Phase != "general" || len(rec.PhaseDraws[0].Entries) != 100 ||
		rec.PhaseDraws[0].Beacon != phaseBeacon {
		t.Fatalf("the phase draws: %+v", rec.PhaseDraws)
	}
	r, err := Check(rec, issuer, time.Now())
	if err != nil {
		t.Fatalf("a fair phased sale does not verify: %v", err)
	}
	if r.Entries != 160 || r.Drawn != 100 || r.Overtakes != 0 {
		t.Fatalf("report %+v", r)
	}
	moved := rec
	moved.PhaseDraws = []fairness.DrawDoc{rec.PhaseDraws[0]}
	moved.PhaseDraws[0].Base += 1000
	if _, err := Check(moved, issuer, time.Now()); err == nil || !strings.Contains(err.Error(), "went ahead") {
		t.Fatalf("a moved draw verifies: %v", err)
	}
	other := rec
	other.PhaseDraws = []fairness.DrawDoc{rec.PhaseDraws[0]}
	other.PhaseDraws[0].Beacon.Value = strings.Repeat("00", 32)
	if _, err := Check(other, issuer, time.Now()); err == nil || !strings.Contains(err.Error(), "rank") {
		t.Fatalf("a phase draw with another beacon value verifies: %v", err)
	}
}

// phaseBeacon is the beacon round the phased sale's general draw is
// committed to, and the value it is given at the start.
var phaseBeacon = fairness.Beacon{Round: 12345, Source: "NIST beacon v2", Value: strings.Repeat("9c", 32)}

// runPhasedSale: 10 registered members join the presale's queue (paused),
// 100 fans the general sale's pre-queue during the presale (its draw
// committed to phaseBeacon), 50 fans the general sale after its start;
// all 160 are admitted, 20 at a time, each leaving at once.
func runPhasedSale(t *testing.T) *sale {
	t.Helper()
	ctx := context.Background()
	s := newSale(t)
	c, store := s.clock, s.store
	cfg := booking.EventConfig{ID: "ph", Rows: 2, SeatsPerRow: 100, Capacity: 20}
	if _, err := store.CreateEvent(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	general := c.Now().Add(time.Hour)
	early := 1800
	sch := booking.Schedule{Phases: []booking.Phase{
		{ID: "presale", StartsAt: c.Now().Add(-time.Hour), EndsAt: general, Audience: booking.AudienceRegistered},
		{ID: "general", StartsAt: general, EndsAt: general.Add(time.Hour), Audience: booking.AudiencePublic, EarlyJoinSeconds: &early}}}
	if err := booking.CheckSchedule(cfg, &sch); err != nil {
		t.Fatal(err)
	}
	if err := store.SetSchedule(ctx, cfg, sch, 0); err != nil {
		t.Fatal(err)
	}
	// the general sale's draw waits for a beacon round's value
	if _, err := store.SetBeaconRound(ctx, "ph", "general", phaseBeacon.Round, phaseBeacon.Source); err != nil {
		t.Fatal(err)
	}
	apply := func() {
		if _, err := store.ApplySchedule(ctx, "ph", true); err != nil {
			t.Fatal(err)
		}
	}
	apply()
	members := users("m", 10)
	if err := store.MarkSelected(ctx, "ph", members); err != nil {
		t.Fatal(err)
	}
	paused := true
	if _, err := store.UpdateEvent(ctx, "ph", booking.EventUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	join := func(us []string) {
		for _, u := range us {
			if _, err := store.Enqueue(ctx, "ph", u); err != nil {
				t.Fatal(err)
			}
		}
	}
	join(members)
	c.Advance(40 * time.Minute)
	join(users("p", 100))
	c.Advance(general.Sub(c.Now()))
	apply()
	join(users("u", 50))
	paused = false
	if _, err := store.UpdateEvent(ctx, "ph", booking.EventUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	for admitted := 0; admitted < 160; {
		res, err := store.Promote(ctx, "ph", 20)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason == "draw_pending" {
			d, ok, err := store.ClosePhaseDraw(ctx, "ph")
			if errors.Is(err, booking.ErrBeaconPending) {
				if _, err := store.SetBeaconValue(ctx, "ph", "general", phaseBeacon.Value, ""); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err != nil || !ok {
				t.Fatalf("phase draw: %v %v", ok, err)
			}
			if err := store.MarkPhaseDrawn(ctx, "ph", d.Phase); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if len(res.Promoted) == 0 {
			t.Fatalf("promotion stopped: %s after %d", res.Reason, admitted)
		}
		for _, a := range res.Promoted {
			if _, err := store.Cancel(ctx, "ph", a.UserID); err != nil {
				t.Fatal(err)
			}
		}
		admitted += len(res.Promoted)
		c.Advance(time.Second)
	}
	s.srv = httptest.NewServer(s.handler())
	t.Cleanup(s.srv.Close)
	return s
}
