package amqpx_test

import (
	"context"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
)

// queueTypes lists "name type" of every queue in the vhost of url.
func queueTypes(t *testing.T, url string) map[string]string {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "-q", "list_queues", "-p", amqptest.VhostOf(url),
		"--no-table-headers", "name", "type", "arguments").CombinedOutput()
	if err != nil {
		t.Fatalf("list_queues: %v: %s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "amq.gen") {
			continue
		}
		typ := f[1]
		if strings.Contains(line, "at-least-once") {
			typ += "+at-least-once"
		}
		got[f[0]] = typ
	}
	return got
}

// Every durable queue boxoffice declares (work, DLQ, delay wait, retry wait)
// takes the configured type; quorum work queues dead-letter at-least-once,
// wait queues at-most-once (Topology.waitQueueArgs says why).
func TestQueueTypeSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ        amqpx.QueueType
		work, dlq  string
		wait, retr string
	}{
		{amqpx.QueueQuorum, "quorum+at-least-once", "quorum", "quorum", "quorum"},
		{amqpx.QueueClassic, "classic", "classic", "classic", "classic"},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			t.Parallel()
			url := amqptest.Vhost(t)
			opts := append(testOpts(t, nil), amqpx.WithQueueType(tc.typ))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p, err := amqpx.NewPublisher(ctx, url, opts...)
			if err != nil {
				t.Fatalf("NewPublisher: %v", err)
			}
			defer p.Close()
			if err := p.PublishDelayed(ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, amqpx.Message{ID: "d", Body: []byte(`{}`)}, 100*time.Millisecond); err != nil {
				t.Fatalf("PublishDelayed: %v", err)
			}
			// One retry through the Consumer declares a retry wait queue.
			done := make(chan struct{}, 2)
			cctx, stop := context.WithCancel(context.Background())
			defer stop()
			c := amqpx.NewConsumer(url, opts...)
			go c.Consume(cctx, amqpx.TimeoutQueue, func(_ context.Context, d amqpx.Delivery) error {
				done <- struct{}{}
				if d.RetryCount == 0 {
					return context.DeadlineExceeded
				}
				return nil
			}, amqpx.ConsumeOptions{RetryMinBackoff: 100 * time.Millisecond})
			for range 2 {
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("delayed message or its retry not consumed")
				}
			}
			got := queueTypes(t, url)
			want := map[string]string{
				amqpx.SlotReleasedQueue:                        tc.work,
				amqpx.TimeoutQueue:                             tc.work,
				amqpx.DeadLetterQueue(amqpx.SlotReleasedQueue): tc.dlq,
				amqpx.DeadLetterQueue(amqpx.TimeoutQueue):      tc.dlq,
				amqpx.WaitQueueName(amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, 100*time.Millisecond): tc.wait,
				amqpx.TimeoutQueue + ".retry-delay.100":                                                   tc.retr,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("queue types (-want +got):\n%s", diff)
			}
		})
	}
}

// A message requeued more often than the delivery limit (a handler that
// crashes its process, a retry copy that cannot be published) is moved to
// the work queue's DLQ by the broker, not redelivered forever.
func TestDeliveryLimitDeadLetters(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil) // declares the topology, default limit
	p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	p, err := amqpx.NewPublisher(ctx, url, append(testOpts(t, nil), amqpx.WithDeliveryLimit(2))...)
	if err == nil {
		p.Close()
		t.Fatal("redeclare with another delivery limit succeeded; want PRECONDITION_FAILED (every service must agree)")
	}
	if !strings.Contains(err.Error(), "PRECONDITION_FAILED") {
		t.Errorf("redeclare with another delivery limit: %v, want PRECONDITION_FAILED", err)
	}
	cancel()

	url = amqptest.Vhost(t)
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err = amqpx.NewPublisher(ctx, url, append(testOpts(t, nil), amqpx.WithDeliveryLimit(2))...)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	defer p.Close()
	if err := p.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{ID: "poison", Body: []byte(`{}`)}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	ch := dial(t, url)
	dlq := amqpx.DeadLetterQueue(amqpx.SlotReleasedQueue)
	deliveries := 0
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if d, ok, err := ch.Get(dlq, true); err != nil {
			t.Fatalf("get %s: %v", dlq, err)
		} else if ok {
			var reasons []string
			if deaths, ok := d.Headers["x-death"].([]any); ok {
				for _, x := range deaths {
					if tbl, ok := x.(amqp.Table); ok {
						reasons = append(reasons, tbl["reason"].(string))
					}
				}
			}
			sort.Strings(reasons)
			if d.MessageId != "poison" || !cmp.Equal(reasons, []string{"delivery_limit"}) {
				t.Errorf("dead letter id=%q x-death reasons=%v, want poison [delivery_limit]", d.MessageId, reasons)
			}
			if deliveries != 3 {
				t.Errorf("delivered %d times before dead-lettering, want 3 (limit 2)", deliveries)
			}
			return
		}
		d, ok, err := ch.Get(amqpx.SlotReleasedQueue, false)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if ok {
			deliveries++
			if deliveries > 10 {
				t.Fatalf("redelivered %d times; the delivery limit does not act", deliveries)
			}
			_ = d.Nack(false, true) // "crash": back to the queue
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("message not dead-lettered after %d deliveries", deliveries)
}

// A nacked publish (not stored) is sent again with backoff: a quorum queue
// nacks while it has no leader during a node failure. Here a full queue
// with reject-publish nacks until the test makes room.
func TestPublishRetriesNack(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil)
	ch := dial(t, url)
	const q = "nack-test"
	if _, err := ch.QueueDeclare(q, true, false, false, false, amqp.Table{
		"x-max-length": int64(1), "x-overflow": "reject-publish", // classic: exact limit
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Publish(ctx, "", q, amqpx.Message{ID: "first", Body: []byte(`{}`)}); err != nil {
		t.Fatalf("first publish: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Publish(ctx, "", q, amqpx.Message{ID: "second", Body: []byte(`{}`)}) }()
	select {
	case err := <-done:
		t.Fatalf("second publish into a full reject-publish queue returned %v before room was made", err)
	case <-time.After(500 * time.Millisecond):
	}
	if d := getOne(t, ch, q, 5*time.Second); d.MessageId != "first" {
		t.Fatalf("got %q, want first", d.MessageId)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("second publish: %v, want success once the queue had room", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("second publish never returned")
	}
	if d := getOne(t, ch, q, 5*time.Second); d.MessageId != "second" {
		t.Errorf("got %q, want second", d.MessageId)
	}
}

// A broker that still has the earlier wait queues ("timeout-wait.<ms>",
// at-least-once) takes the new ones beside them without a
// PRECONDITION_FAILED, and a timeout still waiting in an earlier one
// arrives as before.
func TestWaitQueuesBesideEarlierOnes(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil) // the topology
	ch := dial(t, url)
	const old = "timeout-wait.100"
	if _, err := ch.QueueDeclare(old, true, false, false, false, amqp.Table{
		"x-message-ttl": int64(100), "x-expires": int64(100 + 3_600_000),
		"x-dead-letter-exchange": amqpx.TimeoutExchange, "x-dead-letter-routing-key": amqpx.TimeoutRoutingKey,
		"x-queue-type": "quorum", "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish",
	}); err != nil {
		t.Fatalf("declare the earlier wait queue: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Publish(ctx, "", old, amqpx.Message{ID: "earlier", Body: []byte(`{}`)}); err != nil {
		t.Fatalf("publish into %s: %v", old, err)
	}
	if err := p.PublishDelayed(ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, amqpx.Message{ID: "now", Body: []byte(`{}`)}, 100*time.Millisecond); err != nil {
		t.Fatalf("PublishDelayed beside %s: %v", old, err)
	}
	got := map[string]bool{}
	for range 2 {
		got[getOne(t, ch, amqpx.TimeoutQueue, 10*time.Second).MessageId] = true
	}
	if diff := cmp.Diff(map[string]bool{"earlier": true, "now": true}, got); diff != "" {
		t.Errorf("arrived in %s (-want +got):\n%s", amqpx.TimeoutQueue, diff)
	}
}
