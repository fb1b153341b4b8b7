package booking

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOutbox(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2, Hold: time.Minute})
	a := f.join("evt", "a")
	f.clock.Advance(10 * time.Second)
	b := f.join("evt", "b")
	all, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(a.Outbox, b.Outbox...), all); diff != "" {
		t.Fatalf("outbox (-want +got):\n%s", diff)
	}
	old, _ := f.s.Outbox(f.ctx, "evt", 5*time.Second)
	if diff := cmp.Diff(a.Outbox, old); diff != "" {
		t.Fatalf("stale entries (-want +got):\n%s", diff)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", a.Outbox...); err != nil {
		t.Fatal(err)
	}
	// a changed entry (b cancelled, joined again and was re-admitted) is not
	// removed by an ack of the old one
	bc, _ := f.s.Cancel(f.ctx, "evt", "b")
	f.clock.Advance(time.Second)
	b2 := f.join("evt", "b")
	// each join of b has its own joined entry (booking_request per sequence)
	var joins []int64
	all, _ = f.s.Outbox(f.ctx, "evt", 0)
	for _, e := range all {
		if e.Kind == KindJoined && e.UserID == "b" {
			joins = append(joins, e.Sequence)
		}
	}
	if !cmp.Equal(joins, []int64{2, 3}) {
		t.Fatalf("b's joined entries: %v in %+v", joins, all)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", append(b.Outbox, bc.Outbox...)...); err != nil {
		t.Fatal(err)
	}
	left, _ := f.s.Outbox(f.ctx, "evt", 0)
	if diff := cmp.Diff(b2.Outbox, left); diff != "" {
		t.Fatalf("after acks (-want +got):\n%s", diff)
	}
	// expiries reclaimed by a promotion are in the outbox too
	f.clock.Advance(time.Minute)
	p, _ := f.s.Promote(f.ctx, "evt", 0)
	left, _ = f.s.Outbox(f.ctx, "evt", 0)
	// a's and b's expiries, plus b's second join and admission never acked
	if len(p.Outbox) != 2 || p.Outbox[0].Kind != KindExpired || len(left) != 4 {
		t.Fatalf("promote outbox %+v, outbox %+v", p.Outbox, left)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", left...); err != nil {
		t.Fatal(err)
	}
	if left, _ = f.s.Outbox(f.ctx, "evt", 0); len(left) != 0 {
		t.Fatalf("outbox not empty: %+v", left)
	}
}

// TestOutboxReadBounded: a backlog larger than OutboxReadMax (a long Kafka
// outage during an on-sale) is read in bounded steps, oldest sequences
// first, and drains completely by repeated sweeps.
func TestOutboxReadBounded(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1})
	key := f.s.eventKeys("evt")[kOutbox]
	n := OutboxReadMax + 500
	at := f.clock.Now().UnixMilli()
	pipe := f.rdb.Pipeline()
	for seq := 1; seq <= n; seq++ {
		pipe.HSet(f.ctx, key, fmt.Sprintf("j:%d", seq), fmt.Sprintf("%d|u%d||%d", seq, seq, at))
	}
	if _, err := pipe.Exec(f.ctx); err != nil {
		t.Fatal(err)
	}
	first, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil || len(first) != OutboxReadMax {
		t.Fatalf("first read: %d entries, %v", len(first), err)
	}
	for i := 1; i < len(first); i++ {
		if first[i].Sequence <= first[i-1].Sequence {
			t.Fatalf("not in sequence order at %d: %d after %d", i, first[i].Sequence, first[i-1].Sequence)
		}
	}
	if first[0].Kind != KindJoined || first[0].UserID != fmt.Sprintf("u%d", first[0].Sequence) {
		t.Fatalf("parsed %+v", first[0])
	}
	total := 0
	for batch := first; len(batch) > 0; batch, err = f.s.Outbox(f.ctx, "evt", 0) {
		if err != nil {
			t.Fatal(err)
		}
		total += len(batch)
		if err := f.s.AckOutbox(f.ctx, "evt", batch...); err != nil {
			t.Fatal(err)
		}
	}
	if total != n {
		t.Fatalf("drained %d entries, want %d", total, n)
	}
}
