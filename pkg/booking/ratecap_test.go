package booking

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/testseed"
)

// capRun drives an event with a rate cap on the injected clock: joins and
// promotions at random steps, recording every admission's time.
type capRun struct {
	f        *fixture
	id       string
	next     int
	admitted []time.Time
}

func (r *capRun) join(n int) {
	for range n {
		r.next++
		res := r.f.join(r.id, "u"+strconv.Itoa(r.next))
		if res.State.InRoom() {
			r.admitted = append(r.admitted, r.f.clock.Now())
		}
	}
}

func (r *capRun) promote() int {
	res, err := r.f.s.Promote(r.f.ctx, r.id, 0)
	if err != nil {
		r.f.t.Fatal(err)
	}
	for range res.Promoted {
		r.admitted = append(r.admitted, r.f.clock.Now())
	}
	return len(res.Promoted)
}

// maxWindow is the most admissions in any 60 s window (t - 60 s, t].
func (r *capRun) maxWindow() int {
	ts := append([]time.Time(nil), r.admitted...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	most, lo := 0, 0
	for hi, t := range ts {
		for !ts[lo].After(t.Add(-time.Minute)) {
			lo++
		}
		// every admission at t counts: extend hi over equal times
		n := hi - lo + 1
		for k := hi + 1; k < len(ts) && ts[k].Equal(t); k++ {
			n++
		}
		if n > most {
			most = n
		}
	}
	return most
}

func (r *capRun) setCap(n int) {
	if _, err := r.f.s.UpdateEvent(r.f.ctx, r.id, EventUpdate{AdmitPerMinute: &n}); err != nil {
		r.f.t.Fatal(err)
	}
}

// run steps the clock by 0.2 to 3 s for d, joining a few users and
// promoting at each step (the safety net's tick).
func (r *capRun) run(rng *rand.Rand, d time.Duration) {
	end := r.f.clock.Now().Add(d)
	for r.f.clock.Now().Before(end) {
		r.f.clock.Advance(time.Duration(200+rng.IntN(2800)) * time.Millisecond)
		r.join(rng.IntN(4))
		r.promote()
	}
}

func TestRateCap(t *testing.T) {
	f := newFixture(t)
	e := f.event(EventConfig{ID: "cap", Rows: 40, SeatsPerRow: 50, Capacity: 1000, AdmitPerMinute: 120})
	if e.AdmitPerMinute != 120 {
		t.Fatalf("admit_per_minute not set: %+v", e)
	}
	r := &capRun{f: f, id: "cap"}
	rng := testseed.Rand(t)

	// a burst: the room has 1,000 free slots, the cap lets 120 in
	r.join(400)
	if len(r.admitted) != 120 {
		t.Fatalf("burst of 400 joins admitted %d, want 120 (immediate admissions are capped)", len(r.admitted))
	}
	if got := r.promote(); got != 0 {
		t.Fatalf("promotion admitted %d past the cap", got)
	}
	st, err := f.s.Position(f.ctx, "cap", "u400")
	if err != nil || st.AdmitPerMinute != 120 {
		t.Fatalf("position: %+v %v", st, err)
	}
	r.run(rng, 5*time.Minute)
	if m := r.maxWindow(); m > 120 {
		t.Fatalf("a 60 s window admitted %d, cap 120", m)
	}
	// no stall: each minute after the first lets about 120 more in
	if n := len(r.admitted); n < 120*5 {
		t.Fatalf("admitted %d in 5 minutes with 400+ waiting, want >= %d", n, 120*5)
	}

	// lowering takes effect at once: from now on no window holds more
	// than 30 admissions ending after the change
	r.setCap(30)
	lowered := f.clock.Now()
	before := len(r.admitted)
	r.run(rng, 3*time.Minute)
	for _, at := range r.admitted[before:] {
		if n := r.countWindow(at); n > 30 {
			t.Fatalf("admission at +%v after lowering: %d in its minute, cap 30", at.Sub(lowered), n)
		}
	}
	if n := len(r.admitted) - before; n < 30*2 || n > 30*3 {
		t.Fatalf("admitted %d in 3 minutes at 30/min", n)
	}

	// raising takes effect at once: the very next promotion admits
	r.setCap(240)
	if got := r.promote(); got == 0 {
		t.Fatal("raising the cap admitted nobody at once")
	}
	r.run(rng, 2*time.Minute)
	if m := r.maxWindow(); m > 240 {
		t.Fatalf("a 60 s window admitted %d, cap 240", m)
	}

	// off: the room's capacity is the only limit
	r.setCap(0)
	r.join(50)
	r.promote()
	if e, _ := f.s.GetEvent(f.ctx, "cap"); e.Counts.Waiting != 0 || e.AdmitPerMinute != 0 {
		t.Fatalf("cap off: %d still waiting (%+v)", e.Counts.Waiting, e)
	}

	bad := -1
	if _, err := f.s.UpdateEvent(f.ctx, "cap", EventUpdate{AdmitPerMinute: &bad}); err == nil {
		t.Fatal("negative admit_per_minute accepted")
	}
}

// countWindow counts admissions in (t - 60 s, t].
func (r *capRun) countWindow(t time.Time) int {
	n := 0
	for _, a := range r.admitted {
		if a.After(t.Add(-time.Minute)) && !a.After(t) {
			n++
		}
	}
	return n
}
