package fault

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// tap copies every timeout and every notification the services publish
// into queues of its own (bound next to the services' queues, on a direct
// connection that no fault touches) and counts them per user.
type tap struct {
	mu        sync.Mutex
	timeouts  map[string]int // event/user/sequence/expire_ms -> copies
	yourTurns map[string]int // event/user/sequence -> copies
}

func newTap(t *testing.T, amqpURL string) *tap {
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
	tp := &tap{timeouts: map[string]int{}, yourTurns: map[string]int{}}
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

func (tp *tap) add(timeout bool, body []byte) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if timeout {
		var m messages.Timeout
		if json.Unmarshal(body, &m) == nil {
			tp.timeouts[fmt.Sprintf("%s/%s/%d/%d", m.EventID, m.UserID, m.Sequence, m.ExpireTimeMS)]++
		}
		return
	}
	var n messages.Notification
	if json.Unmarshal(body, &n) == nil && n.Type == messages.NotifyYourTurn {
		tp.yourTurns[fmt.Sprintf("%s/%s/%d", n.EventID, n.UserID, n.Sequence)]++
	}
}

// counts returns, for event ev: the admissions (user/sequence) that got a
// your_turn, those that got a timeout, and the copies beyond the first of
// each fact.
func (tp *tap) counts(ev string) (turns, timeouts map[string]bool, dupTurns, dupTimeouts, maxCopies int) {
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

// queueDepth is one queue's ready and unacknowledged messages.
type queueDepth struct{ ready, unacked int }

// queues lists the vhost's queues (rabbitmqctl, as the runbook does).
func queues(t *testing.T, amqpURL string) map[string]queueDepth {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "-q", "list_queues", "-p", amqptest.VhostOf(amqpURL), "--no-table-headers",
		"name", "messages_ready", "messages_unacknowledged").CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl list_queues: %v: %s", err, out)
	}
	m := map[string]queueDepth{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		r, _ := strconv.Atoi(f[1])
		u, _ := strconv.Atoi(f[2])
		m[f[0]] = queueDepth{r, u}
	}
	return m
}

// tailOf is the end of a log file.
func tailOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-1500):])
}

// purge empties a queue of the vhost.
func purge(t *testing.T, amqpURL, queue string) {
	t.Helper()
	if out, err := exec.Command("rabbitmqctl", "-q", "purge_queue", "-p", amqptest.VhostOf(amqpURL), queue).CombinedOutput(); err != nil {
		t.Errorf("rabbitmqctl purge_queue %s: %v: %s", queue, err, out)
	}
}

// readTopic reads every message of topic (all partitions) from the start.
func readTopic(t *testing.T, broker, topic string) []events.Event {
	t.Helper()
	var out []events.Event
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
				e, err := events.Decode(m.Value)
				if err != nil {
					t.Errorf("%s offset %d: %v", topic, m.Offset, err)
					continue
				}
				out = append(out, e)
			}
			_ = batch.Close()
		}
		conn.Close()
	}
	return out
}

// eventually polls cond every 200 ms until it holds or d passes, and
// returns how long it took and whether it held.
func eventually(d time.Duration, cond func() bool) (time.Duration, bool) {
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
