package stacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/segmentio/kafka-go"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// What a test reads from the brokers to check a sale: copies of every
// timeout and notification (Tap), queue depths, a Kafka topic's facts.

// Tap copies every timeout and every notification the services publish
// into queues of its own (bound next to the services' queues, on a
// connection of its own) and counts them per user.
type Tap struct {
	mu        sync.Mutex
	timeouts  map[string]int // event/user/sequence/expire_ms -> copies
	yourTurns map[string]int // event/user/sequence -> copies
	turnAt    map[string]time.Time
}

// NewTap binds the tap's queues on the broker at amqpURL (one node's URL:
// the tap's queues are exclusive, they live and die with that node).
func NewTap(t testing.TB, amqpURL string) *Tap {
	t.Helper()
	conn, err := amqp.Dial(amqpURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	tp := &Tap{timeouts: map[string]int{}, yourTurns: map[string]int{}, turnAt: map[string]time.Time{}}
	for _, b := range []struct{ exchange, key string }{
		{amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey},
		{amqpx.NotificationsExchange, ""},
	} {
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind(q.Name, b.key, b.exchange, false, nil); err != nil {
			t.Fatal(err)
		}
		ds, err := ch.Consume(q.Name, "", true, true, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		timeouts := b.exchange == amqpx.TimeoutExchange
		go func() {
			for d := range ds {
				tp.add(timeouts, d.Body)
			}
		}()
	}
	return tp
}

func (tp *Tap) add(timeout bool, body []byte) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if timeout {
		var m messages.Timeout
		if json.Unmarshal(body, &m) == nil {
			for _, h := range m.Holds() { // a promotion's holds share one message
				tp.timeouts[fmt.Sprintf("%s/%s/%d/%d", m.EventID, h.UserID, h.Sequence, m.ExpireTimeMS)]++
			}
		}
		return
	}
	var n messages.Notification
	if json.Unmarshal(body, &n) == nil && n.Type == messages.NotifyYourTurn {
		k := fmt.Sprintf("%s/%s/%d", n.EventID, n.UserID, n.Sequence)
		if tp.yourTurns[k] == 0 {
			tp.turnAt[k] = time.Now()
		}
		tp.yourTurns[k]++
	}
}

// FirstTurnAfter is when the tap first saw a your_turn for event ev after
// at (zero when none yet).
func (tp *Tap) FirstTurnAfter(ev string, at time.Time) time.Time {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var first time.Time
	for k, when := range tp.turnAt {
		if strings.HasPrefix(k, ev+"/") && when.After(at) && (first.IsZero() || when.Before(first)) {
			first = when
		}
	}
	return first
}

// Counts returns, for event ev: the admissions (user/sequence) that got a
// your_turn, those that got a timeout, and the copies beyond the first of
// each fact.
func (tp *Tap) Counts(ev string) (turns, timeouts map[string]bool, dupTurns, dupTimeouts, maxCopies int) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	turns, timeouts = map[string]bool{}, map[string]bool{}
	for k, n := range tp.yourTurns {
		if rest, ok := strings.CutPrefix(k, ev+"/"); ok {
			turns[rest] = true
			dupTurns += n - 1
			maxCopies = max(maxCopies, n)
		}
	}
	for k, n := range tp.timeouts {
		if rest, ok := strings.CutPrefix(k, ev+"/"); ok {
			timeouts[rest[:strings.LastIndex(rest, "/")]] = true
			dupTimeouts += n - 1
			maxCopies = max(maxCopies, n)
		}
	}
	return turns, timeouts, dupTurns, dupTimeouts, maxCopies
}

// QueueDepth is one queue's ready and unacknowledged messages.
type QueueDepth struct{ Ready, Unacked int }

// Queues lists the queues of a vhost of the local broker made by
// amqptest.Vhost (rabbitmqctl, as the runbook does).
func Queues(t testing.TB, amqpURL string) map[string]QueueDepth {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "-q", "list_queues", "-p", amqptest.VhostOf(amqpURL), "--no-table-headers",
		"name", "messages_ready", "messages_unacknowledged").CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl list_queues: %v: %s", err, out)
	}
	return ParseQueues(string(out))
}

// ParseQueues reads `rabbitmqctl list_queues name messages_ready
// messages_unacknowledged` output.
func ParseQueues(out string) map[string]QueueDepth {
	m := map[string]QueueDepth{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		r, _ := strconv.Atoi(f[1])
		u, _ := strconv.Atoi(f[2])
		m[f[0]] = QueueDepth{r, u}
	}
	return m
}

// ReadTopic reads every message of topic (all partitions) from the start
// and decodes it (a message that does not decode fails the test).
func ReadTopic(t testing.TB, broker, topic string) []events.Event {
	t.Helper()
	var out []events.Event
	for _, m := range ReadTopicMessages(t, broker, topic) {
		e, err := events.Decode(m.Value)
		if err != nil {
			t.Errorf("%s/%d offset %d: %v", topic, m.Partition, m.Offset, err)
			continue
		}
		out = append(out, e)
	}
	return out
}

// ReadTopicMessages reads every message of topic (all partitions) from
// the start, as stored.
func ReadTopicMessages(t testing.TB, broker, topic string) []kafka.Message {
	t.Helper()
	var out []kafka.Message
	for p := range kafkatest.Partitions {
		var conn *kafka.Conn
		var err error
		for range 30 { // Kafka may just be back from an outage
			if conn, err = kafka.DialLeader(context.Background(), "tcp", broker, topic, p); err == nil {
				break
			}
			time.Sleep(time.Second)
		}
		if err != nil {
			t.Fatalf("dial %s/%d: %v", topic, p, err)
		}
		last, err := conn.ReadLastOffset()
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < last; {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Seek(off, kafka.SeekAbsolute); err != nil {
				t.Fatal(err)
			}
			batch := conn.ReadBatch(1, 10<<20)
			for {
				m, err := batch.ReadMessage()
				if err != nil {
					break
				}
				off = m.Offset + 1
				out = append(out, m)
			}
			_ = batch.Close()
		}
		conn.Close()
	}
	return out
}

// Eventually polls cond every 200 ms until it holds or d passes, and
// returns how long it took and whether it held.
func Eventually(d time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > d {
			return time.Since(start), false
		}
		time.Sleep(200 * time.Millisecond)
	}
}
