package operators_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/segmentio/kafka-go"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// flaky fails the first fails publishes, then publishes to Kafka.
type flaky struct {
	kafka *events.KafkaProducer
	fails atomic.Int32
}

func (f *flaky) Publish(ctx context.Context, evs ...events.Event) error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("kafka: not enough replicas")
	}
	return f.kafka.Publish(ctx, evs...)
}

func producer(t *testing.T, brokers []string) *events.KafkaProducer {
	t.Helper()
	p, err := events.NewKafkaProducer(brokers, events.WithSource("/boxoffice/test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// topicMessages reads every message of topic: the partitions' end offsets
// say how many there are, so none is missed and none counted twice.
func topicMessages(t *testing.T, brokers []string, topic string) []events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []events.Event
	for part := range kafkatest.Partitions {
		conn, err := kafka.DialLeader(ctx, "tcp", brokers[0], topic, part)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		if last == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: part, MaxWait: 100 * time.Millisecond})
		for int64(len(out)) >= 0 {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s/%d: %v", topic, part, err)
			}
			e, err := events.Decode(m.Value)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if string(m.Key) != e.EventID {
				t.Errorf("key %q, event_id %q", m.Key, e.EventID)
			}
			out = append(out, e)
			if m.Offset == last-1 {
				break
			}
		}
		r.Close()
	}
	return out
}

// TestOperatorActionReachesKafkaOnceThoughPublishingIsRetried: an action
// recorded while Kafka refuses writes stays in the outbox; the next sweep
// publishes it; later sweeps publish nothing more. The fact carries the
// record as it was written.
func TestOperatorActionReachesKafkaOnceThoughPublishingIsRetried(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	brokers := kafkatest.Start(t)
	k := &flaky{kafka: producer(t, brokers)}
	k.fails.Store(2)
	pub := &operators.Publisher{Store: s, Kafka: k, Age: time.Nanosecond}

	a, err := s.Record(ctx, operators.Action{Actor: "alice", Via: operators.ViaSession, Role: operators.Operator,
		Action: operators.ActionEventUpdate, EventID: "e1", RemoteAddr: "203.0.113.9", RequestID: "req-1",
		Before: operators.Object(map[string]any{"capacity": 10}), After: operators.Object(map[string]any{"capacity": 20})})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, a.ID); err == nil {
		t.Fatal("the first publish should fail")
	}
	if n, err := pub.Sweep(ctx); err == nil || n != 0 {
		t.Fatalf("second try: %d %v, want a failure", n, err)
	}
	if n, err := pub.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("third try: %d %v, want 1 published", n, err)
	}
	for range 3 {
		if n, err := pub.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("a later sweep: %d %v", n, err)
		}
		if err := pub.Publish(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM operator_action_outbox`).Scan(&left); err != nil || left != 0 {
		t.Errorf("outbox: %d %v", left, err)
	}
	got := topicMessages(t, brokers, events.TopicOperatorAction)
	if len(got) != 1 {
		t.Fatalf("%d operator_action messages, want 1: %+v", len(got), got)
	}
	want := a.Fact()
	want.Source = "/boxoffice/test"
	// the envelope compacts the record's JSON (PostgreSQL's jsonb spells it
	// with spaces); every copy compacts it alike
	want.Before, want.After = compact(t, want.Before), compact(t, want.After)
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("fact (-want +got):\n%s", diff)
	}
	if got[0].UserID != "alice" || got[0].Sequence != a.ID || got[0].Action != "event.update" || string(got[0].After) != `{"capacity":20}` {
		t.Errorf("fact %+v", got[0])
	}
}

// TestConcurrentPublishersPublishEachActionOnce: requests publishing
// their own records while two gateways sweep: every record reaches Kafka
// exactly once.
func TestConcurrentPublishersPublishEachActionOnce(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	brokers := kafkatest.Start(t)
	k := producer(t, brokers)
	pub := &operators.Publisher{Store: s, Kafka: k, Age: time.Nanosecond}
	const n = 40
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 { // two gateways' sweeps
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := pub.Sweep(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var reqs sync.WaitGroup
	for i := range n {
		reqs.Go(func() {
			a, err := s.Record(ctx, operators.Action{Actor: fmt.Sprintf("op%d", i%3), Via: operators.ViaToken, Role: operators.Admin,
				Action: operators.ActionEventUpdate, EventID: fmt.Sprintf("e%d", i%4)})
			if err != nil {
				t.Error(err)
				return
			}
			if err := pub.Publish(ctx, a.ID); err != nil {
				t.Error(err)
			}
		})
	}
	reqs.Wait()
	close(stop)
	wg.Wait()
	if _, err := pub.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	got := topicMessages(t, brokers, events.TopicOperatorAction)
	seen := map[int64]int{}
	for _, e := range got {
		seen[e.Sequence]++
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("%d messages for %d distinct records, want %d each once: %v", len(got), len(seen), n, seen)
	}
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
