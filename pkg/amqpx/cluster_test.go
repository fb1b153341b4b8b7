package amqpx_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
)

// A 3-node cluster on loopback, quorum queues, every node in the URL list.
// Delayed timeouts are published and delivered before the node that holds
// the publisher's connection is stopped, then published while it is down
// and after it started again, after which the wait queue is handed a stale dead-letter consumer registration
// (what RabbitMQ 3.10.8 commits when leadership moves twice in quick
// succession; amqptest.Node.StaleDeadLetterCheckout): every timeout
// arrives (none lost or stuck in a wait queue), none early, and publishing
// and consuming never stall for good.
//
// It runs in make test (about 30 s on an idle 2-core machine, up to three
// minutes on a busy one); -short or BOXOFFICE_SKIP_CLUSTERS=1 skips it, as
// they skip pkg/stacktest's TestSaleOnClusters:
//
//	go test -count=1 -run TestQuorumClusterSurvivesNodeRestart -v ./pkg/amqpx/
func TestQuorumClusterSurvivesNodeRestart(t *testing.T) {
	if testing.Short() || os.Getenv("BOXOFFICE_SKIP_CLUSTERS") == "1" {
		t.Skip("SKIPPED: delayed messages across a RabbitMQ node restart are not tested in this run (-short or BOXOFFICE_SKIP_CLUSTERS=1)")
	}
	t.Parallel() // its own nodes: it waits beside the package's other tests
	c := amqptest.StartCluster(t, 3)
	urls := c.URLs()
	p := newPublisher(t, urls, nil)

	const delay = 2 * time.Second
	var mu sync.Mutex
	got := map[string]int{}
	early := 0
	sent := map[string]time.Time{}
	startConsumer(t, urls, amqpx.TimeoutQueue, func(_ context.Context, d amqpx.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		got[d.MessageID]++
		if at, ok := sent[d.MessageID]; ok && time.Since(at) < delay {
			early++
		}
		return nil
	}, amqpx.ConsumeOptions{Workers: 4}, nil)

	id := 0
	var slowest time.Duration
	publish := func(n int) {
		t.Helper()
		for range n {
			id++
			mid := fmt.Sprintf("t-%03d", id)
			mu.Lock()
			sent[mid] = time.Now()
			mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			start := time.Now()
			err := p.PublishDelayed(ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, amqpx.Message{ID: mid, Body: []byte(`{}`)}, delay)
			cancel()
			slowest = max(slowest, time.Since(start))
			if err != nil {
				t.Fatalf("publish %s: %v", mid, err)
			}
		}
	}
	// waitDelivered waits until every timeout published so far arrived
	// or the deadline passed.
	waitDelivered := func(within time.Duration) {
		deadline := time.Now().Add(within)
		for {
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if n == id || time.Now().After(deadline) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	publish(50)
	// The first fifty arrive before the node stops. A timeout that
	// expires in the instant timeout-queue has no leader is dropped by
	// the at-most-once hand-over and left to the safety net (see
	// Topology.waitQueueArgs); stopping the node while they expire would
	// test that instant's timing, not the restart.
	waitDelivered(60 * time.Second)

	// The node the publisher is connected to: the connection's name ends
	// in "-> 127.0.0.1:<node port>".
	conns := c.Nodes[0].Ctl("list_connections", "--no-table-headers", "name", "client_properties")
	victim := c.Nodes[0]
	if m := regexp.MustCompile(`-> 127\.0\.0\.1:(\d+)[^\n]*boxoffice-publisher`).FindStringSubmatch(conns); m != nil {
		for _, n := range c.Nodes {
			if fmt.Sprint(n.Port) == m[1] {
				victim = n
			}
		}
	}
	t.Logf("stopping %s (port %d)", victim.Name, victim.Port)
	victim.Stop()
	publish(50) // through the other two nodes
	victim.Start()
	// A dead-letter consumer registration that no longer exists, as a
	// second leader change can leave behind: under at-least-once
	// dead-lettering every timeout expiring from here on would stay in
	// the wait queue until its next leader election.
	wq := amqpx.WaitQueueName(amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, amqpx.RoundDelay(delay))
	t.Logf("stale dead-letter checkout on %s: %s", wq, victim.StaleDeadLetterCheckout(wq))
	publish(50)

	waitDelivered(60 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	var missing []string
	dups := 0
	for i := 1; i <= id; i++ {
		mid := fmt.Sprintf("t-%03d", i)
		if got[mid] == 0 {
			missing = append(missing, mid)
		}
		dups += max(got[mid]-1, 0)
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d timeouts never arrived: %v", len(missing), id, missing)
		// where they are: each queue's leader and depth, per node's view
		t.Logf("queues:\n%s", c.Nodes[0].Ctl("list_queues", "name", "leader", "messages_ready", "messages_unacknowledged", "messages", "consumers"))
		t.Logf("consumers:\n%s", c.Nodes[0].Ctl("list_consumers", "queue_name", "channel_pid", "ack_required", "prefetch_count"))
	}
	if early > 0 {
		t.Errorf("%d timeouts arrived early", early)
	}
	t.Logf("%d timeouts, %d delivered twice (at-least-once); slowest publish %v", id, dups, slowest)
}
