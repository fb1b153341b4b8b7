package amqpx_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap/zaptest"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/requestid"
)

func testOpts(t testing.TB, m *amqpx.Metrics) []amqpx.Option {
	opts := []amqpx.Option{amqpx.WithReconnectBackoff(50*time.Millisecond, time.Second)}
	if tt, ok := t.(*testing.T); ok && testing.Verbose() {
		opts = append(opts, amqpx.WithLogger(zaptest.NewLogger(tt)))
	}
	if m != nil {
		opts = append(opts, amqpx.WithMetrics(m))
	}
	return opts
}

func newPublisher(t testing.TB, url string, m *amqpx.Metrics) *amqpx.Publisher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := amqpx.NewPublisher(ctx, url, testOpts(t, m)...)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// startConsumer runs Consume until the test ends; stop cancels it and
// returns Consume's result.
func startConsumer(t testing.TB, url, queue string, h amqpx.Handler, co amqpx.ConsumeOptions, m *amqpx.Metrics) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	c := amqpx.NewConsumer(url, testOpts(t, m)...)
	go func() { errc <- c.Consume(ctx, queue, h, co) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-errc:
			case <-time.After(20 * time.Second):
				err = errors.New("Consume did not return")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func dial(t testing.TB, url string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	return ch
}

// getOne polls queue with basic.get until a message arrives or timeout.
func getOne(t testing.TB, ch *amqp.Channel, queue string, timeout time.Duration) amqp.Delivery {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatalf("get %s: %v", queue, err)
		}
		if ok {
			return d
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no message in %s after %v", queue, timeout)
	return amqp.Delivery{}
}

func queueLen(t testing.TB, ch *amqp.Channel, queue string) int {
	t.Helper()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, amqp.Table{
		"x-dead-letter-exchange": amqpx.DeadLetterExchange, "x-dead-letter-routing-key": queue,
	})
	if err != nil {
		t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}

func TestDeclareTwiceAndPublishConsume(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	ch := dial(t, url)
	for i := range 2 {
		if err := amqpx.Declare(ch, false); err != nil {
			t.Fatalf("Declare #%d: %v", i+1, err)
		}
	}
	p := newPublisher(t, url, nil) // declares a third time
	ctx := context.Background()

	// Wire properties, checked with a plain basic.get.
	if err := p.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{ID: "props-1", Body: []byte(`{"a":1}`)}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	d := getOne(t, ch, amqpx.SlotReleasedQueue, 5*time.Second)
	got := []any{d.MessageId, d.ContentType, d.DeliveryMode, d.Timestamp.IsZero(), string(d.Body)}
	if diff := cmp.Diff([]any{"props-1", "application/json", amqp.Persistent, false, `{"a":1}`}, got); diff != "" {
		t.Errorf("published properties (-want +got):\n%s", diff)
	}

	// Through the Consumer.
	recv := make(chan amqpx.Delivery, 1)
	startConsumer(t, url, amqpx.SlotReleasedQueue, func(ctx context.Context, d amqpx.Delivery) error {
		recv <- d
		return nil
	}, amqpx.ConsumeOptions{}, nil)
	if err := p.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{ID: "msg-1", Body: []byte(`{"event_id":"e1"}`)}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	select {
	case d := <-recv:
		if d.MessageID != "msg-1" || string(d.Body) != `{"event_id":"e1"}` || d.RetryCount != 0 {
			t.Errorf("got delivery id=%q body=%s retry=%d", d.MessageID, d.Body, d.RetryCount)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("message not consumed")
	}
}

func TestPublishErrors(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	err := p.Publish(ctx, amqpx.SlotReleasedExchange, "no-such-key", amqpx.Message{Body: []byte(`{}`)})
	if !errors.Is(err, amqpx.ErrUnroutable) {
		t.Errorf("unroutable publish: err = %v, want ErrUnroutable", err)
	}
	err = p.Publish(ctx, "no-such-exchange", "k", amqpx.Message{Body: []byte(`{}`)})
	var ae *amqp.Error
	if !errors.As(err, &ae) || ae.Code != amqp.NotFound {
		t.Errorf("publish to missing exchange: err = %v, want 404 NOT_FOUND", err)
	}
	// The publisher recovers from the channel error.
	if err := p.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{Body: []byte(`{}`)}); err != nil {
		t.Errorf("publish after channel error: %v", err)
	}
}

func TestPublishDelayedNeverEarly(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil)
	type rx struct {
		id string
		at time.Time
	}
	recv := make(chan rx, 10)
	startConsumer(t, url, amqpx.TimeoutQueue, func(ctx context.Context, d amqpx.Delivery) error {
		recv <- rx{d.MessageID, time.Now()}
		return nil
	}, amqpx.ConsumeOptions{}, nil)

	ctx := context.Background()
	delays := map[string]time.Duration{"long": 2 * time.Second, "short": 450 * time.Millisecond}
	sent := map[string]time.Time{}
	for _, id := range []string{"long", "short"} { // long first
		sent[id] = time.Now()
		if err := p.PublishDelayed(ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, amqpx.Message{ID: id, Body: []byte(`{}`)}, delays[id]); err != nil {
			t.Fatalf("PublishDelayed %s: %v", id, err)
		}
	}
	var order []string
	for range 2 {
		select {
		case r := <-recv:
			order = append(order, r.id)
			late := r.at.Sub(sent[r.id].Add(delays[r.id]))
			t.Logf("%s: delay %v, late by %v", r.id, delays[r.id], late)
			if late < 0 {
				t.Errorf("%s arrived %v early", r.id, -late)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("delayed messages missing; got %v", order)
		}
	}
	if diff := cmp.Diff([]string{"short", "long"}, order); diff != "" {
		t.Errorf("arrival order (-want +got):\n%s", diff)
	}
	// The wait queues exist with the documented names.
	ch := dial(t, url)
	for _, d := range []time.Duration{2 * time.Second, 500 * time.Millisecond} {
		name := amqpx.WaitQueueName(amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, d)
		if _, err := ch.QueueDeclarePassive(name, true, false, false, false, nil); err != nil {
			t.Errorf("wait queue %s: %v", name, err)
			ch = dial(t, url)
		}
	}
}

func TestRoundDelay(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, 0},
		{time.Millisecond, 100 * time.Millisecond},
		{450 * time.Millisecond, 500 * time.Millisecond},
		{10 * time.Second, 10 * time.Second},
		{10*time.Second + time.Millisecond, 11 * time.Second},
		{10 * time.Minute, 10 * time.Minute},
		{10*time.Minute + time.Second, 10*time.Minute + 10*time.Second},
	} {
		if got := amqpx.RoundDelay(tc.in); got != tc.want || got < tc.in {
			t.Errorf("RoundDelay(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := amqpx.WaitQueueName(amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, 10*time.Minute); got != "timeout-delay.600000" {
		t.Errorf("WaitQueueName = %q", got)
	}
}

func TestConsumerFailures(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name         string
		handler      func(attempt int) error // attempt is 1-based
		wantAttempts int
		wantDead     string // x-dead-reason, "" = not dead-lettered
		wantRetries  int32  // x-retry-count on the dead letter
	}{
		{"error retried then dead-lettered", func(int) error { return boom }, 4, amqpx.DeadReasonMaxRetries, 3},
		{"permanent dead-lettered at once", func(int) error { return amqpx.Permanent(boom) }, 1, amqpx.DeadReasonPermanent, 0},
		{"panic recovered and retried", func(a int) error {
			if a == 1 {
				panic("kaboom")
			}
			return nil
		}, 2, "", 0},
		{"error then success", func(a int) error {
			if a < 3 {
				return boom
			}
			return nil
		}, 3, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := amqptest.Vhost(t)
			reg := prometheus.NewRegistry()
			m := amqpx.NewMetrics(reg)
			p := newPublisher(t, url, m)
			var attempts atomic.Int32
			var retryCounts sync.Map
			startConsumer(t, url, amqpx.SlotReleasedQueue, func(ctx context.Context, d amqpx.Delivery) error {
				a := int(attempts.Add(1))
				retryCounts.Store(a, d.RetryCount)
				return tc.handler(a)
			}, amqpx.ConsumeOptions{MaxRetries: 3, RetryMinBackoff: 50 * time.Millisecond, RetryMaxBackoff: 200 * time.Millisecond}, m)
			if err := p.Publish(context.Background(), amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{ID: "m1", Body: []byte(`{}`)}); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			ch := dial(t, url)
			dlq := amqpx.DeadLetterQueue(amqpx.SlotReleasedQueue)
			if tc.wantDead != "" {
				d := getOne(t, ch, dlq, 10*time.Second)
				got := map[string]any{
					"id":     d.MessageId,
					"reason": d.Headers[amqpx.HeaderDeadReason],
					"error":  d.Headers[amqpx.HeaderLastError],
					"count":  d.Headers[amqpx.HeaderRetryCount],
					"queue":  d.Headers[amqpx.HeaderOriginalQueue],
				}
				wantErr := "boom"
				if tc.wantDead == amqpx.DeadReasonPermanent {
					wantErr = "permanent: boom" // retry.Permanent's text
				}
				want := map[string]any{"id": "m1", "reason": tc.wantDead, "error": wantErr, "count": tc.wantRetries, "queue": amqpx.SlotReleasedQueue}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("dead letter (-want +got):\n%s", diff)
				}
				// The counter moves just after the dead letter is confirmed.
				dl := m.DeadLettered.WithLabelValues(amqpx.SlotReleasedQueue, tc.wantDead)
				for wait := time.Now().Add(2 * time.Second); testutil.ToFloat64(dl) < 1 && time.Now().Before(wait); {
					time.Sleep(10 * time.Millisecond)
				}
				if got := testutil.ToFloat64(dl); got != 1 {
					t.Errorf("dead_lettered metric = %v, want 1", got)
				}
			} else {
				deadline := time.Now().Add(10 * time.Second)
				for testutil.ToFloat64(m.Acked.WithLabelValues(amqpx.SlotReleasedQueue)) < 1 && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if got := testutil.ToFloat64(m.Acked.WithLabelValues(amqpx.SlotReleasedQueue)); got != 1 {
					t.Fatalf("acked metric = %v, want 1", got)
				}
			}
			time.Sleep(300 * time.Millisecond) // nothing more may arrive
			if got := int(attempts.Load()); got != tc.wantAttempts {
				t.Errorf("handler attempts = %d, want %d", got, tc.wantAttempts)
			}
			for a := 1; a <= tc.wantAttempts; a++ {
				if rc, _ := retryCounts.Load(a); rc != a-1 {
					t.Errorf("attempt %d saw RetryCount %v, want %d", a, rc, a-1)
				}
			}
			if got := testutil.ToFloat64(m.Retried.WithLabelValues(amqpx.SlotReleasedQueue)); int(got) != tc.wantAttempts-1 {
				t.Errorf("retried metric = %v, want %d", got, tc.wantAttempts-1)
			}
			if n := queueLen(t, ch, dlq); n != 0 {
				t.Errorf("%s holds %d more messages", dlq, n)
			}
		})
	}
}

func TestReconnectAcrossConnectionClose(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	vhost := amqptest.VhostOf(url)
	m := amqpx.NewMetrics(prometheus.NewRegistry())
	p := newPublisher(t, url, m)

	var mu sync.Mutex
	seen := map[string]int{}
	startConsumer(t, url, amqpx.SlotReleasedQueue, func(ctx context.Context, d amqpx.Delivery) error {
		time.Sleep(time.Millisecond)
		mu.Lock()
		seen[d.MessageID]++
		mu.Unlock()
		return nil
	}, amqpx.ConsumeOptions{Workers: 4, Prefetch: 16}, m)

	const n = 600
	ids := make(chan string, n)
	for i := range n {
		ids <- fmt.Sprintf("id-%04d", i)
	}
	close(ids)
	var published atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range 4 {
		wg.Go(func() {
			for id := range ids {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := p.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{ID: id, Body: []byte(`{}`)})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
				}
				published.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	closed := 0
	for _, at := range []int32{n / 4, n / 2} {
		for published.Load() < at {
			time.Sleep(5 * time.Millisecond)
		}
		closed += amqptest.CloseConnections(t, vhost)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("publish: %v", err)
	}
	if closed < 2 {
		t.Errorf("closed %d connections, want at least 2 (publisher and consumer)", closed)
	}

	deadline := time.Now().Add(20 * time.Second)
	var missing []string
	for {
		missing = missing[:0]
		mu.Lock()
		for i := range n {
			if id := fmt.Sprintf("id-%04d", i); seen[id] == 0 {
				missing = append(missing, id)
			}
		}
		dups := 0
		for _, c := range seen {
			dups += c - 1
		}
		mu.Unlock()
		if len(missing) == 0 {
			t.Logf("all %d ids consumed; %d duplicates; %d connections closed", n, dups, closed)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ids never consumed, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, role := range []string{"publisher", "consumer"} {
		if got := testutil.ToFloat64(m.Reconnects.WithLabelValues(role)); got < 1 {
			t.Errorf("%s reconnects = %v, want >= 1", role, got)
		}
	}
}

func TestGracefulDrain(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil)
	started := make(chan struct{}, 10)
	var finished atomic.Int32
	stop := startConsumer(t, url, amqpx.SlotReleasedQueue, func(ctx context.Context, d amqpx.Delivery) error {
		started <- struct{}{}
		time.Sleep(500 * time.Millisecond)
		finished.Add(1)
		return nil
	}, amqpx.ConsumeOptions{Workers: 2, Prefetch: 10}, nil)
	for i := range 6 {
		if err := p.Publish(context.Background(), amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{ID: fmt.Sprint(i), Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	<-started
	if err := stop(); err != nil {
		t.Fatalf("Consume returned %v", err)
	}
	if got := finished.Load(); got != 2 {
		t.Errorf("handlers finished at return = %d, want 2 (in-flight ones drained, no new ones)", got)
	}
	ch := dial(t, url)
	// A quorum queue counts the returned deliveries as ready again only
	// once the closed channel's return went through Raft: poll.
	n := queueLen(t, ch, amqpx.SlotReleasedQueue)
	for deadline := time.Now().Add(10 * time.Second); n < 4 && time.Now().Before(deadline); n = queueLen(t, ch, amqpx.SlotReleasedQueue) {
		time.Sleep(20 * time.Millisecond)
	}
	if n != 4 {
		t.Errorf("queue holds %d messages after drain, want 4 (unstarted ones returned)", n)
	}
}

func TestNotificationsFanout(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil)
	var mu sync.Mutex
	seen := [2]map[string]bool{{}, {}}
	for i := range 2 {
		startConsumer(t, url, "", func(ctx context.Context, d amqpx.Delivery) error {
			mu.Lock()
			seen[i][d.MessageID] = true
			mu.Unlock()
			return nil
		}, amqpx.ConsumeOptions{BindFanout: amqpx.NotificationsExchange}, nil)
	}
	both := func(pred func(id string) bool) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range seen {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(m)), pred) {
				return false
			}
		}
		return true
	}
	// Probe until both per-instance queues are bound (binding is async to
	// NewConsumer), then check one message reaches every instance.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; !both(func(id string) bool { return strings.HasPrefix(id, "probe") }); i++ {
		if time.Now().After(deadline) {
			t.Fatal("fanout consumers never received a probe")
		}
		// Unroutable until the first queue is bound.
		_ = p.Publish(context.Background(), amqpx.NotificationsExchange, "", amqpx.Message{ID: fmt.Sprintf("probe-%d", i), Body: []byte(`{}`)})
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.Publish(context.Background(), amqpx.NotificationsExchange, "", amqpx.Message{ID: "n1", Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for !both(func(id string) bool { return id == "n1" }) {
		if time.Now().After(deadline) {
			t.Fatalf("n1 not received by every instance: %v", seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The request id of the publisher's context reaches the handler's context:
// a consumer's logs name the HTTP request that caused the message.
func TestRequestIDTravels(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	p := newPublisher(t, url, nil)
	got := make(chan string, 2)
	startConsumer(t, url, amqpx.SlotReleasedQueue, func(ctx context.Context, d amqpx.Delivery) error {
		got <- requestid.From(ctx)
		return nil
	}, amqpx.ConsumeOptions{Workers: 1}, nil)
	ctx := requestid.With(context.Background(), "REQ123")
	for _, c := range []context.Context{ctx, context.Background()} {
		if err := p.Publish(c, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey, amqpx.Message{Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for range 2 {
		select {
		case id := <-got:
			ids = append(ids, id)
		case <-time.After(5 * time.Second):
			t.Fatal("message not consumed")
		}
	}
	if !slices.Contains(ids, "REQ123") || !slices.Contains(ids, "") {
		t.Fatalf("request ids seen by the handler: %q", ids)
	}
}

// TestPublishBatch: a batch of immediate and delayed messages is stored
// whole, an unroutable message in it fails alone, and batches published
// while the connection is closed under them lose nothing (the messages
// whose confirm was lost are published again on the new connection).
func TestPublishBatch(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	vhost := amqptest.VhostOf(url)
	p := newPublisher(t, url, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	out := []amqpx.Outgoing{
		{Exchange: amqpx.SlotReleasedExchange, Key: amqpx.SlotReleasedRoutingKey, Msg: amqpx.Message{ID: "now-1", Body: []byte(`{}`)}},
		{Exchange: amqpx.SlotReleasedExchange, Key: "no-such-key", Msg: amqpx.Message{ID: "lost", Body: []byte(`{}`)}},
		{Exchange: amqpx.TimeoutExchange, Key: amqpx.TimeoutRoutingKey, Msg: amqpx.Message{ID: "later", Body: []byte(`{}`)}, Delay: 300 * time.Millisecond},
		{Exchange: amqpx.SlotReleasedExchange, Key: amqpx.SlotReleasedRoutingKey, Msg: amqpx.Message{ID: "now-2", Body: []byte(`{}`)}},
	}
	errs := p.PublishBatch(ctx, out)
	for i, err := range errs {
		if want := out[i].Msg.ID == "lost"; errors.Is(err, amqpx.ErrUnroutable) != want || (err != nil) != want {
			t.Errorf("%s: err = %v", out[i].Msg.ID, err)
		}
	}
	ch := dial(t, url)
	for _, id := range []string{"now-1", "now-2"} {
		if d := getOne(t, ch, amqpx.SlotReleasedQueue, 5*time.Second); d.MessageId != id {
			t.Errorf("got %q, want %q", d.MessageId, id)
		}
	}
	if d := getOne(t, ch, amqpx.TimeoutQueue, 5*time.Second); d.MessageId != "later" {
		t.Errorf("delayed: got %q", d.MessageId)
	}

	// batches of 200 while the connection is closed twice
	const batches, size = 10, 200
	var closed atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2 {
			time.Sleep(30 * time.Millisecond)
			closed.Add(int32(amqptest.CloseConnections(t, vhost)))
		}
	}()
	for b := range batches {
		out := make([]amqpx.Outgoing, size)
		for i := range out {
			out[i] = amqpx.Outgoing{Exchange: amqpx.SlotReleasedExchange, Key: amqpx.SlotReleasedRoutingKey,
				Msg: amqpx.Message{ID: fmt.Sprintf("b%02d-%03d", b, i), Body: []byte(`{}`)}}
		}
		for i, err := range p.PublishBatch(ctx, out) {
			if err != nil {
				t.Fatalf("%s: %v", out[i].Msg.ID, err)
			}
		}
	}
	<-done
	seen := map[string]bool{}
	ch = dial(t, url)
	for len(seen) < batches*size {
		d := getOne(t, ch, amqpx.SlotReleasedQueue, 5*time.Second)
		seen[d.MessageId] = true
	}
	t.Logf("%d messages stored (at least once) across %d closed connections", len(seen), closed.Load())
}

// TestConsumeReturnsNilWhenCancelledMidSession: Consume returns nil on
// cancellation even when the cancellation lands while a session is failing
// (here the broker refusing the queue), not that session's error: a
// service stopping during a broker fault stops cleanly.
func TestConsumeReturnsNilWhenCancelledMidSession(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	// sessions that fail at once, with pauses shorter than a session, so
	// that most cancellations land inside one
	c := amqpx.NewConsumer(url, amqpx.WithReconnectBackoff(time.Microsecond, time.Microsecond))
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond+time.Duration(i)*3*time.Millisecond)
			defer cancel()
			if err := c.Consume(ctx, "no-such-queue", func(context.Context, amqpx.Delivery) error { return nil }, amqpx.ConsumeOptions{}); err != nil {
				t.Errorf("Consume %d: %v, want nil on cancellation", i, err)
			}
		})
	}
	wg.Wait()
}

// TestConsumerPauseGrowsWhileSessionsFail: a session that ends as soon as
// it starts (the broker refuses the queue) is followed by a pause that
// doubles up to the reconnect maximum, not by a reconnect every minimum.
func TestConsumerPauseGrowsWhileSessionsFail(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	m := amqpx.NewMetrics(prometheus.NewRegistry())
	c := amqpx.NewConsumer(url, amqpx.WithReconnectBackoff(10*time.Millisecond, 300*time.Millisecond), amqpx.WithMetrics(m))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err := c.Consume(ctx, "no-such-queue", func(context.Context, amqpx.Delivery) error { return nil }, amqpx.ConsumeOptions{})
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	// 10, 20, 40, 80, 160, 300, 300… ms: about 8 sessions in 1.5 s (at a
	// fixed 10 ms, over 40)
	if got := testutil.ToFloat64(m.Reconnects.WithLabelValues("consumer")); got < 3 || got > 15 {
		t.Errorf("%v reconnects in 1.5 s, want the pauses to grow (3-15)", got)
	}
}

// A Publisher with delay probes measures each wait queue it uses: probes
// come back through the target queue's Consumer (never reaching its
// handler) and the wait queue's overdue gauge settles at 0; while nothing
// comes out at the other end (here the consumer is gone: messages that
// neither expire nor move look the same from the publisher) the gauge
// grows, and it returns to 0 once the delayed messages flow again.
func TestDelayProbes(t *testing.T) {
	t.Parallel()
	url := amqptest.Vhost(t)
	reg := prometheus.NewRegistry()
	m := amqpx.NewMetrics(reg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := amqpx.NewPublisher(ctx, url, append(testOpts(t, m), amqpx.WithDelayProbes(100*time.Millisecond))...)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	defer p.Close()

	const delay = 300 * time.Millisecond
	wq := amqpx.WaitQueueName(amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, delay)
	var mu sync.Mutex
	var got, probes []string
	handler := func(_ context.Context, d amqpx.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		if d.Type == amqpx.ProbeType {
			probes = append(probes, d.MessageID)
		} else {
			got = append(got, d.MessageID)
		}
		return nil
	}
	stop := startConsumer(t, url, amqpx.TimeoutQueue, handler, amqpx.ConsumeOptions{}, nil)
	publish := func(id string) {
		t.Helper()
		if err := p.PublishDelayed(ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey, amqpx.Message{ID: id, Body: []byte(`{}`)}, delay); err != nil {
			t.Fatalf("PublishDelayed %s: %v", id, err)
		}
	}
	overdue := func() float64 { return testutil.ToFloat64(m.DelayOverdue.WithLabelValues(wq)) }
	returned := func() uint64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "boxoffice_amqp_delay_probe_lateness_seconds" {
				for _, mt := range mf.GetMetric() {
					return mt.GetHistogram().GetSampleCount()
				}
			}
		}
		return 0
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20 s (overdue %.2f s, %d probes back)", what, overdue(), returned())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	publish("a")
	waitFor("two probes back", func() bool { return returned() >= 2 })
	waitFor("every probe back", func() bool { return overdue() == 0 })

	if err := stop(); err != nil {
		t.Fatalf("stop consumer: %v", err)
	}
	publish("b")
	waitFor("overdue past one second", func() bool { return overdue() > 1 })

	startConsumer(t, url, amqpx.TimeoutQueue, handler, amqpx.ConsumeOptions{}, nil)
	waitFor("overdue back to 0", func() bool { return overdue() == 0 })

	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("delivered to the handler (-want +got):\n%s", diff)
	}
	if len(probes) > 0 {
		t.Errorf("the handler was given %d probes", len(probes))
	}
}
