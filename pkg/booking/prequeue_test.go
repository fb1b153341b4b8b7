package booking

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
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
	d, err := f.s.ReadDraw(f.ctx, "pq")
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
	want, err := DrawOrder(e.DrawSeed, e.DrawCommit, early)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if order[i] != want[i] {
			t.Fatalf("admission %d is %s, the revealed seed says %s", i, order[i], want[i])
		}
	}
	h := sha256.New()
	for _, u := range want {
		h.Write([]byte(u + "\n"))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d.Digest {
		t.Fatalf("the published digest %s is not the recomputed order's %s", d.Digest, got)
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
	if _, err := DrawOrder(e.DrawSeed, other, early); err == nil {
		t.Fatal("a seed that does not match the commitment accepted")
	}
}
