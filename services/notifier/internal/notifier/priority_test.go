package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
)

func TestClientQueueOrder(t *testing.T) {
	m := NewMetrics(nil)
	hub := NewHub(m)
	cfg := Config{}.withDefaults()
	c := newClient(context.Background(), "ev", "u1", &cfg, m, hub)
	defer c.cancel()
	// Not upgraded yet: everything queues, nothing is written.
	for _, o := range []struct {
		msg  string
		lane int
	}{
		{"b1", laneBcast}, {"p1", lanePos}, {"b2", laneBcast}, {"t1", lanePrio},
		{"p2", lanePos}, {"t2", lanePrio}, {"b3", laneBcast},
	} {
		if !c.offer([]byte(o.msg), o.lane) {
			t.Fatalf("offer %s refused", o.msg)
		}
	}
	if got := hub.pendingTargeted.Load(); got != 2 {
		t.Errorf("pending targeted = %d, want 2", got)
	}
	var got []string
	for {
		msg, _ := c.next()
		if msg == nil {
			break
		}
		got = append(got, string(msg))
	}
	// Targeted first in order, then broadcasts in order, then only the
	// newest position.
	if d := cmp.Diff([]string{"t1", "t2", "b1", "b2", "b3", "p2"}, got); d != "" {
		t.Errorf("write order (-want +got)\n%s", d)
	}

	// A connection that ends with targeted messages queued does not leave
	// them counted as pending (which would hold every broadcast back).
	d := newClient(context.Background(), "ev", "u2", &cfg, m, hub)
	defer d.cancel()
	d.offer([]byte("t3"), lanePrio)
	d.discard()
	if d.offer([]byte("t4"), lanePrio) {
		t.Error("offer accepted after discard")
	}
	if got := hub.pendingTargeted.Load(); got != 2 {
		t.Errorf("pending targeted = %d after discard, want 2 (t1, t2 popped but not written)", got)
	}
}

// A client that reads slowly has a backlog of broadcasts queued on the
// server; a your_turn sent then is written before that backlog, and the
// broadcasts still arrive complete and in order.
func TestTargetedOvertakesBroadcastBacklog(t *testing.T) {
	store := newStore(t)
	in := startInstance(t, store, Config{SendQueue: 256, WriteTimeout: time.Minute}, "")
	event := newEvent(t, store, booking.EventConfig{})

	// The client completes the handshake, then does not read until the
	// server's writer is blocked: the messages are large enough to fill the
	// kernel's socket buffers on both sides.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, in.url+"?event_id="+event+"&token="+sign(t, "u1", time.Hour, testSecret), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	waitFor(t, func() bool { return in.srv.Hub().Len() == 1 })
	c := in.srv.Hub().snapshot(event)[0]

	const n = 100
	pad := strings.Repeat("x", 256<<10)
	for i := range n {
		msg := fmt.Sprintf(`{"type":"seats_changed","event_id":%q,"reason":"b%03d","pad":%q}`, event, i, pad)
		if in.srv.Hub().Broadcast(event, []byte(msg)) != 1 {
			t.Fatalf("broadcast %d not queued", i)
		}
	}
	queued := func() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.bcast) }
	// The writer is blocked on the peer once the backlog stops shrinking.
	backlog := queued()
	waitFor(t, func() bool {
		time.Sleep(50 * time.Millisecond)
		b := queued()
		defer func() { backlog = b }()
		return b > 0 && b == backlog
	})
	turn := fmt.Sprintf(`{"type":"your_turn","event_id":%q,"user_id":"u1","reason":"turn"}`, event)
	if in.srv.Hub().SendUser(event, "u1", []byte(turn)) != 1 {
		t.Fatal("your_turn not queued")
	}

	var order []string
	for len(order) < n+2 { // initial state, n broadcasts, your_turn
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d messages: %v", len(order), err)
		}
		var m struct{ Type, Reason string }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		order = append(order, m.Type+"/"+m.Reason)
	}
	var broadcasts []string
	turnAt := -1
	for i, o := range order[1:] {
		if o == messages.NotifyYourTurn+"/turn" {
			turnAt = i
			continue
		}
		broadcasts = append(broadcasts, o)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("%s/b%03d", messages.NotifySeatsChanged, i))
	}
	waitFor(t, func() bool { return in.srv.Hub().pendingTargeted.Load() == 0 })
	if d := cmp.Diff(want, broadcasts); d != "" {
		t.Errorf("broadcasts lost or reordered (-want +got)\n%s", d)
	}
	// Every broadcast still queued when your_turn was sent comes after it.
	if after := n - turnAt; turnAt < 0 || after < backlog {
		t.Errorf("your_turn at %d with %d broadcasts after it; %d were queued behind it", turnAt, after, backlog)
	}
}
