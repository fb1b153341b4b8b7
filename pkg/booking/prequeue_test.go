package booking

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// 1,000 users join the pre-queue; at the start they are admitted in the
// order of the draw: unrelated to their join order, recomputable from the
// revealed seed, and all before anyone who joined after the start.
func TestPrequeueDraw(t *testing.T) {
	f := newFixture(t)
	start := f.clock.Now().Add(time.Hour).Truncate(time.Second)
	e := f.event(EventConfig{ID: "pq", Rows: 11, SeatsPerRow: 100, Capacity: 1100, BatchSize: 300,
		SalesStart: start, EarlyJoin: 30 * time.Minute})
	if len(e.DrawCommit) != 64 || e.DrawSeed != "" || e.EarlyJoin != 30*time.Minute {
		t.Fatalf("before the sale: commit %q, seed %q (must stay secret), early %v", e.DrawCommit, e.DrawSeed, e.EarlyJoin)
	}
	// before the pre-queue opens: refused
	if _, err := f.s.Enqueue(f.ctx, "pq", "eager"); !errors.Is(err, ErrSalesNotStarted) {
		t.Fatalf("join before the pre-queue: %v", err)
	}
	f.clock.Advance(31 * time.Minute)
	const n = 1000
	early := make([]string, n)
	for i := range n {
		early[i] = "early" + strconv.Itoa(i)
		r := f.join("pq", early[i])
		if r.State != StateWaiting || r.Position != 0 || !r.PrequeuedUntil.Equal(start) {
			t.Fatalf("pre-queued join: %+v", r)
		}
		f.clock.Advance(1500 * time.Millisecond) // 25 minutes for 1,000
	}
	if r := f.join("pq", early[0]); r.Position != 0 || r.Created {
		t.Fatalf("repeated pre-queued join: %+v", r)
	}
	st, err := f.s.Position(f.ctx, "pq", early[5])
	if err != nil || st.State != StateWaiting || st.Position != 0 || !st.SalesStart.Equal(start) {
		t.Fatalf("pre-queued position: %+v %v", st, err)
	}
	if res, err := f.s.Promote(f.ctx, "pq", 0); err != nil || len(res.Promoted) != 0 || res.Reason != "not_started" {
		t.Fatalf("promotion before the start: %+v %v", res, err)
	}

	f.clock.Advance(start.Sub(f.clock.Now()))
	late := []string{"late0", "late1", "late2"}
	for _, u := range late {
		if r := f.join("pq", u); r.State != StateWaiting || r.Position < n {
			t.Fatalf("a join after the start is not behind the pre-queue: %+v", r)
		}
	}
	e, _ = f.s.GetEvent(f.ctx, "pq")
	if e.DrawSeed == "" || e.Prequeued != n {
		t.Fatalf("after the start: seed %q revealed, prequeued %d", e.DrawSeed, e.Prequeued)
	}
	// promotion waits for the draw to be published
	if res, err := f.s.Promote(f.ctx, "pq", 0); err != nil || len(res.Promoted) != 0 || res.Reason != "draw_pending" {
		t.Fatalf("promotion before the draw is published: %+v %v", res, err)
	}
	d, err := f.s.CloseDraw(f.ctx, "pq")
	if err != nil || d.Count != n || d.Seed != e.DrawSeed || d.Commit != e.DrawCommit {
		t.Fatalf("draw: %+v %v", d, err)
	}
	if err := f.s.MarkDrawn(f.ctx, "pq"); err != nil {
		t.Fatal(err)
	}
	var order []string
	for range 10 {
		res, err := f.s.Promote(f.ctx, "pq", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range res.Promoted {
			if a.Sequence < 1 {
				t.Fatalf("promoted with sequence %d: %+v", a.Sequence, a)
			}
			order = append(order, a.UserID)
		}
	}
	if len(order) != n+len(late) {
		t.Fatalf("admitted %d, want %d", len(order), n+len(late))
	}
	salt, err := f.s.FairSalt(f.ctx, "pq")
	if err != nil {
		t.Fatal(err)
	}
	want, err := DrawOrder(e.DrawSeed, e.DrawCommit, salt, early)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if order[i] != want[i] {
			t.Fatalf("admission %d is %s, the revealed seed says %s", i, order[i], want[i])
		}
	}
	hashes := make([]string, n)
	for i, u := range early {
		hashes[i] = fairness.UserHash(salt, u)
	}
	if got := fairness.ListDigest(hashes); got != d.Digest {
		t.Fatalf("the published digest %s is not the closed list's %s", d.Digest, got)
	}
	list, err := f.s.DrawList(f.ctx, "pq", "", 0, n+1)
	if err != nil || len(list) != n {
		t.Fatalf("draw list: %d entries, %v", len(list), err)
	}
	for i, h := range fairness.DrawOrder(d.Seed, d.Digest, hashes) {
		if list[i] != h || h != fairness.UserHash(salt, want[i]) {
			t.Fatalf("draw list %d: %s, recomputed %s", i, list[i], h)
		}
	}
	for i, u := range late {
		if order[n+i] != u {
			t.Fatalf("later joiners not after the pre-queue in join order: %v", order[n:])
		}
	}
	// Spearman's rank correlation of join order and admission order: ~0
	// for a random permutation (standard deviation 1/sqrt(999) = 0.032)
	rank := map[string]int{}
	for i, u := range order[:n] {
		rank[u] = i
	}
	var d2 float64
	for i, u := range early {
		d := float64(i - rank[u])
		d2 += d * d
	}
	rho := 1 - 6*d2/(float64(n)*(float64(n)*float64(n)-1))
	if math.Abs(rho) > 0.15 {
		t.Fatalf("rank correlation %.3f between join and admission order", rho)
	}
	t.Logf("rank correlation %.4f", rho)
	other := "0" + e.DrawCommit[1:]
	if e.DrawCommit[0] == '0' {
		other = "1" + e.DrawCommit[1:]
	}
	if _, err := DrawOrder(e.DrawSeed, other, salt, early); err == nil {
		t.Fatal("a seed that does not match the commitment accepted")
	}
}

// A reader of Redis knows the seed and the salt while the pre-queue is
// open, and still cannot compute the ranks: the order depends on the
// closed list, so one more joiner reorders everyone; a joiner who retries
// adds nothing to the list and cannot move their rank.
func TestDrawNeedsTheClosedList(t *testing.T) {
	f := newFixture(t)
	start := f.clock.Now().Add(time.Hour).Truncate(time.Second)
	f.event(EventConfig{ID: "dl", Rows: 5, SeatsPerRow: 100, Capacity: 500, SalesStart: start, EarlyJoin: 2 * time.Hour})
	const n = 200
	users := make([]string, n)
	for i := range users {
		users[i] = "u" + strconv.Itoa(i)
		f.join("dl", users[i])
	}
	seed, err := f.s.rdb.HGet(f.ctx, f.s.eventKeys("dl")[kConfig], "draw_seed").Result()
	if err != nil {
		t.Fatal(err)
	}
	salt, err := f.s.FairSalt(f.ctx, "dl")
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]string, n)
	for i, u := range users {
		hashes[i] = fairness.UserHash(salt, u)
	}
	predicted := fairness.DrawOrder(seed, fairness.ListDigest(hashes), hashes)

	f.join("dl", "last")
	for range 3 { // retries: the same member, the same list
		if r := f.join("dl", "u7"); r.Created {
			t.Fatalf("a retried join made a new entry: %+v", r)
		}
	}
	f.clock.Advance(start.Sub(f.clock.Now()))
	d, err := f.s.CloseDraw(f.ctx, "dl")
	if err != nil || d.Count != n+1 {
		t.Fatalf("close: %+v %v", d, err)
	}
	all := append(slices.Clone(hashes), fairness.UserHash(salt, "last"))
	if d.Digest != fairness.ListDigest(all) {
		t.Fatalf("digest %s is not the closed list's", d.Digest)
	}
	drawn, err := f.s.DrawList(f.ctx, "dl", "", 0, n+1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(drawn, fairness.DrawOrder(seed, d.Digest, all)) {
		t.Fatal("the kept order does not recompute from the seed and the closed list")
	}
	// the open list's prediction: the relative order of the first n is
	// a fresh permutation (about half of all pairs swap)
	rank := map[string]int{}
	for i, h := range drawn {
		rank[h] = i
	}
	swapped := 0
	for i := 1; i < n; i++ {
		if rank[predicted[i-1]] > rank[predicted[i]] {
			swapped++
		}
	}
	if swapped < n/4 {
		t.Fatalf("only %d of %d neighbours of the open list's order swapped: ranks were computable before the close", swapped, n-1)
	}
	// the queue admits in the kept order
	if err := f.s.MarkDrawn(f.ctx, "dl"); err != nil {
		t.Fatal(err)
	}
	res, err := f.s.Promote(f.ctx, "dl", 500)
	if err != nil || len(res.Promoted) != n+1 {
		t.Fatalf("promote: %d %v", len(res.Promoted), err)
	}
	for i, a := range res.Promoted {
		if fairness.UserHash(salt, a.UserID) != drawn[i] {
			t.Fatalf("admission %d is %s, the draw says %s", i, a.UserID, drawn[i])
		}
	}
	if again, err := f.s.CloseDraw(f.ctx, "dl"); err != nil || again != d {
		t.Fatalf("closing again: %+v %v, want %+v", again, err, d)
	}
}
