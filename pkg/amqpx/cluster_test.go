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
// Delayed timeouts are published before, during and after the node that
// holds the publisher's connection is stopped and started again: every
// one arrives (none lost in a wait queue or while dead-lettering), none
// early, and publishing and consuming never stall for good.
//
// Runs only with BOXOFFICE_RABBITMQ_CLUSTER=1 (about two minutes on 2 cores):
//
//	BOXOFFICE_RABBITMQ_CLUSTER=1 go test -run TestQuorumClusterSurvivesNodeRestart -v ./pkg/amqpx/
func TestQuorumClusterSurvivesNodeRestart(t *testing.T) {
	if os.Getenv(amqptest.ClusterEnv) != "1" {
		t.Skipf("set %s=1 (make test-cluster) to start a 3-node RabbitMQ cluster and restart a node; the stack test pkg/stacktest TestSaleOnClusters runs a cluster in make test", amqptest.ClusterEnv)
	}
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
	publish(50)

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
	publish(50)

	deadline := time.Now().Add(120 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == id || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
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
