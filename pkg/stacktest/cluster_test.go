package stacktest_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
	"github.com/boxoffice/boxoffice/pkg/testseed"
)

// TestSaleOnClusters runs every service on a Redis Cluster of three
// masters with a replica each and a 3-node RabbitMQ cluster (quorum
// queues), and plays two sales, 60 users each joining, holding, paying,
// declining, cancelling and letting holds expire:
//
//  1. mid-sale, the Redis master that holds the event is killed with
//     SIGKILL; its replica is promoted by the cluster's own failure
//     detection (no operator command);
//  2. mid-sale, a RabbitMQ node is killed with SIGKILL (the leader of the
//     work queues when it can tell); once the next user is admitted on the
//     two others, the node is started again with its data, rejoins every
//     work queue, and the sale goes on and finishes on all three.
//
// After each sale the fault suite's invariants (stacktest.CheckSale) hold:
// every user final, no seat sold twice, Redis's sold seats = Kafka's
// booking_completed = PostgreSQL's orders, once per id, nothing left
// unacknowledged, every admission with its your_turn and timeout. It logs
// how long each failover took to recover (docs/testing.md).
//
// It runs in `make test` (about two minutes on two shared cores).
// BOXOFFICE_TEST_SEED replays a run's plans (pkg/testseed; its seed is
// logged). A developer may
// skip it with BOXOFFICE_SKIP_CLUSTERS=1 or -short; CI sets neither.
func TestSaleOnClusters(t *testing.T) {
	if testing.Short() || os.Getenv("BOXOFFICE_SKIP_CLUSTERS") == "1" {
		t.Skip("SKIPPED: the services on a Redis Cluster and a RabbitMQ cluster are not tested in this run (-short or BOXOFFICE_SKIP_CLUSTERS=1)")
	}
	start := time.Now()
	stacktest.Prebuild(stacktest.Services...) // meanwhile
	rc := redistest.StartReplicated(t, 3)
	mq := amqptest.StartCluster(t, 3)
	t.Logf("clusters up in %v", time.Since(start).Round(100*time.Millisecond))
	s := stacktest.StartOnClusters(t, stacktest.Options{},
		stacktest.Clusters{Redis: rc, RabbitMQ: mq})
	t.Logf("stack up after %v", time.Since(start).Round(100*time.Millisecond))

	// The RabbitMQ node to kill in the second sale: the one leading the
	// most work queues (their Raft leaders), so its loss forces elections.
	victim := leaderOfWorkQueues(t, mq)
	var survivor *amqptest.Node
	for _, n := range mq.Nodes {
		if n != victim {
			survivor = n
			break
		}
	}
	tap := stacktest.NewTap(t, survivor.URL())
	check := stacktest.SaleCheck{Tap: tap, Queues: stacktest.ClusterQueues(survivor)}
	seed := testseed.Seed(t)
	t.Log(testseed.Replay(t, seed), "(the users' plans and choices)")
	sale := func(t *testing.T, round, rows int, spread time.Duration, inject func(ev string)) {
		ev := fmt.Sprintf("cluster-%d", round)
		s.CreateEvent(t, stacktest.Event{ID: ev, Rows: rows, SeatsPerRow: 10, Capacity: 8, HoldSeconds: 3, GraceSeconds: 1})
		sl := s.StartSale(t, stacktest.SaleOptions{Event: ev, Users: 60, Seed: seed, Round: round, Spread: spread})
		time.Sleep(1500 * time.Millisecond)
		inject(ev)
		sl.Wait(90 * time.Second)
		rep := s.CheckSale(t, sl, check)
		t.Logf("%d users, %d admitted, %d sold, %d client retries; last user final %v after the start; ledger %v, RabbitMQ drained %v; your_turn/timeout copies %d/%d",
			rep.Users, rep.Admitted, rep.Sold, sl.Retried(), rep.LastFinal.Sub(sl.Start).Round(100*time.Millisecond),
			rep.LedgerLag.Round(100*time.Millisecond), rep.RabbitMQDrain.Round(100*time.Millisecond), rep.DupTurns, rep.DupTimeouts)
	}

	t.Run("redis master killed", func(t *testing.T) {
		sale(t, 1, 2, 0, func(ev string) {
			ctx := context.Background()
			master, replica, err := rc.MasterOf(ctx, booking.EventKeys(s.Prefix, ev)[0])
			if err != nil || replica == "" {
				t.Fatalf("the event's master: %q, replica %q, %v", master, replica, err)
			}
			probe := s.Client(t, "cluster-probe", "")
			killed := time.Now()
			rc.Kill(t, master)
			var promoted, answered time.Duration
			for promoted == 0 || answered == 0 {
				if time.Since(killed) > 90*time.Second {
					t.Fatalf("90 s after killing %s: replica %s promoted after %v, gateway answered after %v", master, replica, promoted, answered)
				}
				if promoted == 0 && redistest.IsMaster(ctx, replica) {
					promoted = time.Since(killed)
				}
				// the event's slot answers again through the gateway (a
				// position read for a user who never joined runs a script
				// on the event's keys; any answer below 500 is Redis's)
				if code, _ := probe.Do("GET", "/api/booking/position?event_id="+ev, nil, nil); answered == 0 && code != 0 && code < 500 {
					answered = time.Since(killed)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// The event must not stay unavailable long after the cluster
			// promoted the replica (the services' cluster clients must
			// notice the new master without waiting for a MOVED reply).
			if answered > promoted+15*time.Second {
				t.Errorf("the gateway answered on the event's slot %v after the kill, %v after the replica was promoted", answered, answered-promoted)
			}
			t.Logf("RECOVERY redis: killed master %s; replica %s promoted after %v; the gateway answered on the event's slot after %v (cluster-node-timeout %v)",
				master, replica, promoted.Round(10*time.Millisecond), answered.Round(10*time.Millisecond), redistest.NodeTimeout)
		})
	})

	t.Run("rabbitmq node killed", func(t *testing.T) {
		// the joins spread over 30 s, so that users still arrive and are
		// admitted after the killed node is back, and a seat for each (a
		// late user never finds the sale sold out)
		sale(t, 2, 7, 30*time.Second, func(ev string) {
			killed := time.Now()
			victim.Kill()
			var turn time.Time
			if _, ok := stacktest.Eventually(60*time.Second, func() bool {
				turn = tap.FirstTurnAfter(ev, killed)
				return !turn.IsZero()
			}); !ok {
				t.Fatalf("no user admitted within 60 s of killing %s", victim.Name)
			}
			t.Logf("RECOVERY rabbitmq: killed %s; the next your_turn was published %v later",
				victim.Name, turn.Sub(killed).Round(10*time.Millisecond))

			// The node comes back with its data while the sale goes on: it
			// rejoins the cluster and every work queue's membership, and
			// the queue keeps moving through its return.
			restarted := time.Now()
			victim.Start()
			booted := time.Since(restarted)
			if waited, ok := stacktest.Eventually(60*time.Second, func() bool { return onlineInWorkQueues(t, survivor, victim) }); !ok {
				t.Fatalf("%s started again after %v but is not an online member of every work queue %v later", victim.Name, booted, waited)
			}
			back := time.Now()
			if _, ok := stacktest.Eventually(60*time.Second, func() bool { return !tap.FirstTurnAfter(ev, back).IsZero() }); !ok {
				t.Fatalf("no user admitted within 60 s of %s rejoining", victim.Name)
			}
			t.Logf("RECOVERY rabbitmq: %s started again in %v, online in every work queue %v after its start; the next your_turn was published %v after that",
				victim.Name, booted.Round(10*time.Millisecond), back.Sub(restarted).Round(10*time.Millisecond),
				tap.FirstTurnAfter(ev, back).Sub(back).Round(10*time.Millisecond))
		})
	})
	t.Logf("total %v", time.Since(start).Round(100*time.Millisecond))
}

// workQueues is `rabbitmqctl list_queues name <column>` asked of node ask,
// for the work queues (slot-released and timeout): queue name → the
// column's value.
func workQueues(t *testing.T, ask *amqptest.Node, column string) map[string]string {
	t.Helper()
	out := ask.Ctl("list_queues", "--no-table-headers", "name", column)
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == amqpx.SlotReleasedQueue || f[0] == amqpx.TimeoutQueue) {
			m[f[0]] = strings.Join(f[1:], " ")
		}
	}
	return m
}

// onlineInWorkQueues reports whether node n is an online member of every
// work queue, as node ask sees it.
func onlineInWorkQueues(t *testing.T, ask, n *amqptest.Node) bool {
	t.Helper()
	online := workQueues(t, ask, "online")
	for _, members := range online {
		if !strings.Contains(members, n.Name) {
			return false
		}
	}
	return len(online) == 2
}

// leaderOfWorkQueues is the node that leads the most of the work queues.
func leaderOfWorkQueues(t *testing.T, c *amqptest.Cluster) *amqptest.Node {
	t.Helper()
	count := map[string]int{}
	for _, leader := range workQueues(t, c.Nodes[0], "leader") {
		count[leader]++
	}
	best := c.Nodes[len(c.Nodes)-1]
	for _, n := range c.Nodes {
		if count[n.Name] > count[best.Name] {
			best = n
		}
	}
	t.Logf("work queue leaders %v; killing %s", count, best.Name)
	return best
}
