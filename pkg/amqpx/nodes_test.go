package amqpx_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
)

// AMQP_URL with several nodes, the first one dead (nothing listens on port
// 1): Publisher and Consumer connect to the node that answers, and after
// the broker closes their connections they reconnect past the dead node.
func TestSeveralNodesOneDead(t *testing.T) {
	t.Parallel()
	live := amqptest.Vhost(t)
	dead := strings.Replace(live, amqptest.Host, "127.0.0.1:1", 1)
	urls := dead + " , " + live
	p := newPublisher(t, urls, nil)
	recv := make(chan string, 10)
	startConsumer(t, urls, amqpx.SlotReleasedQueue, func(_ context.Context, d amqpx.Delivery) error {
		recv <- d.MessageID
		return nil
	}, amqpx.ConsumeOptions{}, nil)
	publish := func(id string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := p.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{ID: id, Body: []byte(`{}`)}); err != nil {
			t.Fatalf("Publish %s: %v", id, err)
		}
		select {
		case got := <-recv:
			if got != id {
				t.Fatalf("consumed %q, want %q", got, id)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s not consumed", id)
		}
	}
	publish("before")
	for range 2 { // each reconnect starts at another node
		if n := amqptest.CloseConnections(t, amqptest.VhostOf(live)); n == 0 {
			t.Fatal("no connection to close")
		}
		publish("after-close")
	}
}

func TestNodeAddr(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://guest:guest@127.0.0.1:5672/": "127.0.0.1:5672",
		"amqp://u:p@rabbit/vhost":            "rabbit:5672",
		"amqps://u:p@[::1]:5671/":            "[::1]:5671",
	} {
		if got := amqpx.NodeAddr(in); got != want {
			t.Errorf("NodeAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNodeAddrs(t *testing.T) {
	got := amqpx.NodeAddrs("amqp://u:p@rabbit-0:5672/bo, amqp://u:p@rabbit-1/bo,,amqps://u:p@rabbit-2:5671/")
	want := []string{"rabbit-0:5672", "rabbit-1:5672", "rabbit-2:5671"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NodeAddrs (-want +got):\n%s", diff)
	}
}
