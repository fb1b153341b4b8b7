package booking

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/redis/go-redis/v9"
)

// The scripts run unchanged on a 3-node Redis Cluster (started by
// scripts/redis-cluster.sh): every key of a script is in KEYS and shares
// the event's hash tag, so events spread over the nodes and each script
// runs on one of them. A key outside the slot would fail with CROSSSLOT.
func TestClusterJourney(t *testing.T) {
	rdb := redistest.Cluster(t)
	f := newFixtureOn(t, rdb)
	// enough events that they land on every node
	nodes := map[string]bool{}
	for i := range 12 {
		id := "cluster-evt-" + strconv.Itoa(i)
		f.event(EventConfig{ID: id, Seats: []string{"S1", "S2"}, Capacity: 1, Hold: time.Minute})
		slot := keysFor(f.s.prefix, id)[kConfig]
		node, err := rdb.(*redis.ClusterClient).MasterForKey(f.ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		nodes[node.Options().Addr] = true

		f.join(id, "a")
		if r := f.join(id, "b"); r.State != StateWaiting {
			t.Fatalf("%s: b %+v", id, r)
		}
		f.join(id, "c")
		f.buy(id, "a", "S1")
		if p, err := f.s.Promote(f.ctx, id, 0); err != nil || len(p.Promoted) != 1 || p.Promoted[0].UserID != "b" {
			t.Fatalf("%s: promote %+v %v", id, p, err)
		}
		if _, err := f.s.LockSeat(f.ctx, id, "b", "S2"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Cancel(f.ctx, id, "b"); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Second)
		p, _ := f.s.Promote(f.ctx, id, 0)
		if len(p.Promoted) != 1 || p.Promoted[0].UserID != "c" {
			t.Fatalf("%s: promote c %+v", id, p)
		}
		f.clock.Advance(time.Minute)
		if to, err := f.s.HandleTimeout(f.ctx, id, "c"); err != nil || to.Outcome != OutcomeReleased {
			t.Fatalf("%s: timeout %+v %v", id, to, err)
		}
		if _, err := f.s.PaymentSuccess(f.ctx, id, "c", "x"); !errors.Is(err, ErrPaymentMismatch) {
			t.Fatal(err)
		}
		ob, err := f.s.Outbox(f.ctx, id, 0)
		if err != nil || len(ob) != 8 { // a, b, c joined and admitted; b cancelled; c expired
			t.Fatalf("%s: outbox %+v %v", id, ob, err)
		}
		if err := f.s.AckOutbox(f.ctx, id, ob...); err != nil {
			t.Fatal(err)
		}
		if st, _ := f.s.Seats(f.ctx, id); st[0].Status != SeatSold || st[1].Status != SeatAvailable {
			t.Fatalf("%s: seats %+v", id, st)
		}
		f.checkInvariants(id)
	}
	if len(nodes) < 3 {
		t.Fatalf("events landed on %d nodes only; the test proves nothing about slots", len(nodes))
	}
	list, err := f.s.ListEvents(f.ctx)
	if err != nil || len(list) != 12 {
		t.Fatalf("list events on cluster: %d %v", len(list), err)
	}
}
