package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// rig is one event written the way the services write it: the ledger
// first (gateway), Redis through the booking scripts, each sale recorded
// after its Lua step (payment-webhook).
type rig struct {
	t     *testing.T
	rdb   redis.UniversalClient
	store *booking.Store
	led   *ledger.Ledger
	rec   *events.Recorder
	r     *ledger.Restorer
	reg   *prometheus.Registry
	event string
}

func newRig(t *testing.T, cfg booking.EventConfig) *rig {
	t.Helper()
	rdb := redistest.Client(t)
	store := booking.New(rdb, booking.WithPrefix(redistest.Prefix(t)))
	t.Cleanup(store.Close)
	// the ledger counts on the restorer's registry, as in a service
	reg := prometheus.NewRegistry()
	g := &rig{t: t, rdb: rdb, store: store, led: ledgertest.Open(t, ledgertest.URL(t), ledger.WithRegisterer(reg)),
		rec: &events.Recorder{}, event: cfg.ID, reg: reg}
	g.r = &ledger.Restorer{Ledger: g.led, Store: store, Kafka: g.rec, Metrics: ledger.NewMetrics(g.reg)}
	ctx := context.Background()
	if _, _, err := g.led.CreateEvent(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateEvent(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	return g
}

// buy takes an admitted user through seat, payment and success; it
// returns false when the seat is not available.
func (g *rig) buy(user, seat string) (bool, error) {
	ctx := context.Background()
	if _, err := g.store.LockSeat(ctx, g.event, user, seat); err != nil {
		if errors.Is(err, booking.ErrSeatUnavailable) {
			return false, nil
		}
		return false, err
	}
	hold, err := g.store.InitiatePayment(ctx, g.event, user, "pay_"+user)
	if err != nil {
		return false, err
	}
	if err := g.led.RecordPayment(ctx, ledger.Payment{PaymentID: hold.PaymentID, EventID: g.event, UserID: user,
		SeatID: hold.SeatID, Sequence: hold.Sequence, Amount: 5000}); err != nil {
		return false, err
	}
	res, err := g.store.PaymentSuccess(ctx, g.event, user, hold.PaymentID)
	if err != nil {
		return false, err
	}
	_, err = g.led.RecordSale(ctx, ledger.Sale{PaymentID: hold.PaymentID, EventID: g.event, UserID: user,
		SeatID: res.SeatID, Sequence: res.Sequence, Phase: res.Phase})
	return err == nil, err
}

func (g *rig) join(user string) booking.JoinResult {
	g.t.Helper()
	res, err := g.store.Enqueue(context.Background(), g.event, user)
	if err != nil {
		g.t.Fatalf("join %s: %v", user, err)
	}
	return res
}

func (g *rig) redisSold() map[string]string {
	g.t.Helper()
	sold, err := g.store.SoldSeats(context.Background(), g.event)
	if err != nil {
		g.t.Fatal(err)
	}
	return sold
}

func (g *rig) ledgerSold() map[string]string {
	g.t.Helper()
	orders, err := g.led.SoldOrders(context.Background(), g.event)
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range orders {
		out[o.SeatID] = o.UserID
	}
	return out
}

// checkStatus holds the seat map's read model (the status string, a plain
// GET) equal to the seats hash, as every script must keep it.
func (g *rig) checkStatus() {
	g.t.Helper()
	ctx := context.Background()
	status, err := g.store.SeatStatuses(ctx, g.event)
	if err != nil {
		g.t.Fatal(err)
	}
	ids, err := g.store.SeatMapIDs(ctx, g.event)
	if err != nil {
		g.t.Fatal(err)
	}
	sold := g.redisSold()
	if len(status) != len(ids) {
		g.t.Fatalf("status string of %d bytes for %d seats", len(status), len(ids))
	}
	for i, id := range ids {
		_, isSold := sold[id]
		if (status[i] == 's') != isSold {
			g.t.Fatalf("seat %s: status %q, sold in the seats hash %v", id, status[i], isSold)
		}
	}
}

// flush deletes every Redis key of the event, as a Redis restart without
// persistence does.
func (g *rig) flush() {
	g.t.Helper()
	if err := g.rdb.Del(context.Background(), booking.EventKeys(g.store.Prefix(), g.event)...).Err(); err != nil {
		g.t.Fatal(err)
	}
}

func TestRestoreAfterRedisLostTheEventSellsOnlyTheRemainingSeats(t *testing.T) {
	t.Parallel()
	const seats = 50
	g := newRig(t, booking.EventConfig{ID: "tour", Name: "Tour", Rows: 5, SeatsPerRow: 10, Capacity: 20})
	ctx := context.Background()
	// mid-sale: 20 admitted, 10 of them bought, 10 more waiting
	var lastSeq int64
	for i := range 30 {
		lastSeq = g.join(fmt.Sprintf("u%02d", i)).Sequence
	}
	all := booking.SeatIDs(5, 10)
	for i := range 10 {
		if ok, err := g.buy(fmt.Sprintf("u%02d", i), all[i*3]); !ok || err != nil {
			t.Fatalf("buy %d: %v %v", i, ok, err)
		}
	}
	before := g.redisSold()
	if len(before) != 10 || !cmp.Equal(before, g.ledgerSold()) {
		t.Fatalf("before: redis %v ledger %v", before, g.ledgerSold())
	}

	g.flush()
	// the safety net rebuilds it within one interval
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.r.Run(runCtx, 50*time.Millisecond) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := g.store.EventExists(ctx, g.event)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			// the rebuild is counted in the ledger after Redis has it: wait
			// for that too before stopping the runner (whose context the
			// count uses)
			if d, err := g.led.Event(ctx, g.event); err == nil && d.Restores == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("event not restored in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done

	if diff := cmp.Diff(before, g.redisSold()); diff != "" {
		t.Fatalf("sold seats after restore (-before +after):\n%s", diff)
	}
	g.checkStatus()
	e, err := g.store.GetEvent(ctx, g.event)
	if err != nil || e.Counts.Sold != 10 || e.Counts.Total != seats || e.Capacity != 20 || e.Counts.Held != 0 {
		t.Fatalf("restored event %+v %v", e, err)
	}
	for i := range 10 {
		u := fmt.Sprintf("u%02d", i)
		st, err := g.store.Position(ctx, g.event, u)
		if err != nil || st.State != booking.StateCompleted || st.SeatID != all[i*3] {
			t.Fatalf("%s after restore: %+v %v", u, st, err)
		}
		if j := g.join(u); j.Created || j.State != booking.StateCompleted {
			t.Fatalf("completed %s joined again: %+v", u, j)
		}
	}
	restored := g.rec.Topic(events.TopicEventRestored)
	if len(restored) != 1 || restored[0].EventID != g.event || restored[0].Sequence <= lastSeq {
		t.Fatalf("event_restored %+v", restored)
	}
	// a waiting user rejoins, after every sequence given out before
	j := g.join("u25")
	if !j.Created || j.Sequence <= lastSeq {
		t.Fatalf("rejoin %+v (last sequence before %d)", j, lastSeq)
	}
	// (and leaves, so the room's last slot is not held by someone who does not buy)
	if _, err := g.store.Cancel(ctx, g.event, "u25"); err != nil {
		t.Fatal(err)
	}
	if d, _ := g.led.Event(ctx, g.event); d.Restores != 1 {
		t.Fatalf("restores %d", d.Restores)
	}
	if _, err := g.r.Restore(ctx, g.event); !errors.Is(err, booking.ErrEventExists) {
		t.Fatalf("restore of a present event: %v", err)
	}

	// 1,000 concurrent buyers: only the 40 remaining seats can be sold
	const buyers = 1000
	var wg sync.WaitGroup
	var bought atomic.Int64
	errs := make(chan error, buyers)
	for i := range buyers {
		wg.Go(func() {
			u := fmt.Sprintf("b%04d", i)
			if _, err := g.store.Enqueue(ctx, g.event, u); err != nil {
				if !errors.Is(err, booking.ErrSoldOut) {
					errs <- err
				}
				return
			}
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
				if _, err := g.store.Promote(ctx, g.event, 0); err != nil {
					errs <- err
					return
				}
				st, err := g.store.Position(ctx, g.event, u)
				if err != nil {
					errs <- err
					return
				}
				if st.SoldOut && st.State == booking.StateWaiting {
					return
				}
				if st.State != booking.StateActive {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				for _, k := range rand.Perm(seats) {
					ok, err := g.buy(u, all[k])
					if err != nil {
						errs <- fmt.Errorf("%s: %w", u, err)
						return
					}
					if ok {
						bought.Add(1)
						return
					}
				}
				return
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := bought.Load(); n != seats-10 {
		t.Fatalf("%d seats bought after the restore, want %d", n, seats-10)
	}
	g.checkStatus()
	after := g.redisSold()
	if len(after) != seats || !cmp.Equal(after, g.ledgerSold()) {
		t.Fatalf("after: %d sold in Redis, ledger differs: %v", len(after), cmp.Diff(g.ledgerSold(), after))
	}
	for seat, user := range before {
		if after[seat] != user {
			t.Fatalf("seat %s sold before the restore to %s was sold again to %s", seat, user, after[seat])
		}
	}
}

func TestReconcileRepairsSeatsTheLedgerSoldAndReportsTheRest(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "rc", Rows: 1, SeatsPerRow: 6, Capacity: 6})
	ctx := context.Background()
	for i := range 5 {
		g.join(fmt.Sprintf("u%d", i))
	}
	for i, seat := range []string{"A1", "A2"} {
		if ok, err := g.buy(fmt.Sprintf("u%d", i), seat); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	// Redis forgets A1 (sold to u0) and A2 (sold to u1); u3 then holds A2
	key := booking.EventKeys(g.store.Prefix(), g.event)
	g.rdb.HSet(ctx, key[1], "A1", "", "A2", "")
	g.rdb.HIncrBy(ctx, key[0], "sold", -2)
	if _, err := g.store.LockSeat(ctx, g.event, "u3", "A2"); err != nil {
		t.Fatal(err)
	}
	// and sells A5 with no order in the ledger (a webhook that never got its 2xx)
	if _, err := g.store.LockSeat(ctx, g.event, "u4", "A5"); err != nil {
		t.Fatal(err)
	}
	h, _ := g.store.InitiatePayment(ctx, g.event, "u4", "pay_u4")
	if _, err := g.store.PaymentSuccess(ctx, g.event, "u4", h.PaymentID); err != nil {
		t.Fatal(err)
	}

	recs, err := g.r.ReconcileAll(ctx)
	if err != nil || len(recs) != 1 {
		t.Fatalf("reconcile %+v %v", recs, err)
	}
	rc := recs[0]
	if !cmp.Equal(rc.MissingInRedis, []string{"A1", "A2"}) || rc.Repaired != 2 || !cmp.Equal(rc.MissingInLedger, []string{"A5"}) {
		t.Fatalf("reconciliation %+v", rc)
	}
	want := map[string]string{"A1": "u0", "A2": "u1", "A5": "u4"}
	if diff := cmp.Diff(want, g.redisSold()); diff != "" {
		t.Fatalf("redis sold after repair (-want +got):\n%s", diff)
	}
	g.checkStatus()
	if st, _ := g.store.Position(ctx, g.event, "u3"); st.State != booking.StateExpired {
		t.Fatalf("u3 held a seat the ledger sold; state %s, want expired", st.State)
	}
	e, _ := g.store.GetEvent(ctx, g.event)
	if e.Counts.Sold != 3 || e.Counts.Held != 0 {
		t.Fatalf("counts %+v", e.Counts)
	}
	if v := testutil.ToFloat64(g.r.Metrics.Difference(g.event, "missing_in_ledger")); v != 1 {
		t.Fatalf("missing_in_ledger gauge %v", v)
	}
	// a second pass finds only the seat without an order
	rc2, err := g.r.Reconcile(ctx, g.event)
	if err != nil || len(rc2.MissingInRedis) != 0 || rc2.Repaired != 0 || len(rc2.MissingInLedger) != 1 {
		t.Fatalf("second pass %+v %v", rc2, err)
	}
	// an event no pass reconciles any more (gone from Redis here) loses its
	// series: its missing_in_ledger alert does not fire forever
	const gauge = "boxoffice_ledger_reconcile_difference"
	if n, err := testutil.GatherAndCount(g.reg, gauge); err != nil || n != 3 {
		t.Fatalf("%d series of %s before, want 3 (%v)", n, gauge, err)
	}
	g.flush()
	if _, err := g.r.ReconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(g.reg, gauge); err != nil || n != 0 {
		t.Fatalf("%d series of %s after the event left Redis, want 0 (%v)", n, gauge, err)
	}
}

// TestRestoredFactOutlivesAKafkaOutage: the event_restored fact is written
// to the event's outbox by the same script that rebuilds the event, so a
// Kafka outage during the rebuild leaves it there for the safety net's
// sweep (pkg/admission's kinds table publishes it) instead of losing it;
// a published one is acknowledged.
func TestRestoredFactOutlivesAKafkaOutage(t *testing.T) {
	t.Parallel()
	g := newRig(t, booking.EventConfig{ID: "gig", Name: "Gig", Rows: 2, SeatsPerRow: 5, Capacity: 5})
	ctx := context.Background()
	g.join("u1")
	g.flush()

	g.rec.FailWith(errors.New("kafka down"))
	res, err := g.r.Restore(ctx, g.event)
	if err != nil {
		t.Fatalf("restore while Kafka is down: %v", err)
	}
	if n := len(g.rec.Topic(events.TopicEventRestored)); n != 0 {
		t.Fatalf("%d event_restored published while Kafka was down", n)
	}
	out, err := g.store.Outbox(ctx, g.event, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := booking.OutboxEntry{Kind: booking.KindRestored, Sequence: res.SeqBase, Reason: "seats=10 sold=0 completed_users=0"}
	if len(out) != 1 || out[0].Kind != want.Kind || out[0].Sequence != want.Sequence || out[0].Reason != want.Reason || out[0].At.IsZero() {
		t.Fatalf("outbox after the failed publish: %+v, want one %+v", out, want)
	}

	// the next rebuild, with Kafka up, publishes its fact and acknowledges it
	g.rec.FailWith(nil)
	g.flush()
	res2, err := g.r.Restore(ctx, g.event)
	if err != nil {
		t.Fatal(err)
	}
	restored := g.rec.Topic(events.TopicEventRestored)
	if len(restored) != 1 || restored[0].Sequence != res2.SeqBase || restored[0].Reason != want.Reason {
		t.Fatalf("event_restored %+v", restored)
	}
	if out, err := g.store.Outbox(ctx, g.event, 0); err != nil || len(out) != 0 {
		t.Fatalf("outbox after the published rebuild: %+v %v", out, err)
	}
}
