package notifier

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
)

const testSecret = "notifier-test-secret"

// testAuth verifies HS256 tokens like the gateway does (sub = user id).
func testAuth(tok string) (string, error) {
	claims := jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(tok, &claims, func(*jwt.Token) (any, error) { return []byte(testSecret), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired())
	if err != nil {
		return "", err
	}
	return claims.Subject, nil
}

func sign(t testing.TB, user string, ttl time.Duration, secret string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Subject: user, ExpiresAt: jwt.NewNumericDate(time.Now().Add(ttl)),
	}).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// newStore returns a booking store on the local Redis under a fresh prefix,
// removed when the test ends.
func newStore(t testing.TB, opts ...booking.Option) *booking.Store {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Skipf("redis not reachable: %v", err)
	}
	prefix := "nt" + strings.ToLower(rand.Text()[:10])
	t.Cleanup(func() {
		iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	return booking.New(rdb, append([]booking.Option{booking.WithPrefix(prefix)}, opts...)...)
}

func newEvent(t testing.TB, s *booking.Store, cfg booking.EventConfig) string {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = "ev-" + strings.ToLower(rand.Text()[:8])
	}
	if cfg.Rows == 0 && len(cfg.Seats) == 0 {
		cfg.Rows, cfg.SeatsPerRow = 2, 5
	}
	if _, err := s.CreateEvent(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.ID
}

type instance struct {
	srv *Server
	url string // ws://host:port/ws
	m   *Metrics
}

// startInstance runs a notifier instance; when amqpURL is set it consumes
// its own queue bound to the notifications fanout.
func startInstance(t testing.TB, store Store, cfg Config, amqpURL string) *instance {
	t.Helper()
	m := NewMetrics(nil)
	s := NewServer(cfg, store, testAuth, m, nil)
	hs := httptest.NewServer(s.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if amqpURL != "" {
		c := amqpx.NewConsumer(amqpURL)
		wg.Go(func() {
			_ = c.Consume(ctx, "", s.HandleNotification, amqpx.ConsumeOptions{
				BindFanout: amqpx.NotificationsExchange, Prefetch: 64, MaxRetries: -1})
		})
	}
	t.Cleanup(func() {
		cancel()
		s.Shutdown()
		hs.Close()
		wg.Wait()
	})
	return &instance{srv: s, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", m: m}
}

// tab is one test WebSocket client; msgs receives every message read.
type tab struct {
	conn *websocket.Conn
	msgs chan map[string]any
}

func dial(t testing.TB, in *instance, event, user string) *tab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u := fmt.Sprintf("%s?event_id=%s&token=%s", in.url, event, sign(t, user, time.Hour, testSecret))
	conn, resp, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s as %s: %v (status %d)", event, user, err, status)
	}
	tb := &tab{conn: conn, msgs: make(chan map[string]any, 1024)}
	go func() {
		defer close(tb.msgs)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				panic(err)
			}
			tb.msgs <- m
		}
	}()
	t.Cleanup(func() { conn.CloseNow() })
	return tb
}

// next returns the next message or fails after timeout.
func (tb *tab) next(t testing.TB, timeout time.Duration) map[string]any {
	t.Helper()
	select {
	case m, ok := <-tb.msgs:
		if !ok {
			t.Fatal("connection closed while waiting for a message")
		}
		return m
	case <-time.After(timeout):
		t.Fatalf("no message within %v", timeout)
	}
	return nil
}

// until returns the messages read up to and including the first that
// matches pred.
func (tb *tab) until(t testing.TB, timeout time.Duration, pred func(map[string]any) bool) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen []map[string]any
	for {
		m := tb.next(t, time.Until(deadline))
		seen = append(seen, m)
		if pred(m) {
			return seen
		}
	}
}

// publish publishes a notification; before any notifier queue is bound the
// broker returns it as unroutable, which is harmless (nobody is connected).
func publish(t testing.TB, p *amqpx.Publisher, n messages.Notification) {
	t.Helper()
	n.Timestamp = time.Now().Unix()
	b, _ := json.Marshal(n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Publish(ctx, amqpx.NotificationsExchange, "", amqpx.Message{Type: n.Type, Body: b}); err != nil && !errors.Is(err, amqpx.ErrUnroutable) {
		t.Fatal(err)
	}
}

func reasonIs(r string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["reason"] == r }
}

func TestNotificationReachesUserTabsOnEveryInstance(t *testing.T) {
	store := newStore(t)
	event := newEvent(t, store, booking.EventConfig{Capacity: 10})
	url := amqptest.Vhost(t)
	a := startInstance(t, store, Config{}, url)
	b := startInstance(t, store, Config{}, url)
	pub, err := amqpx.NewPublisher(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	u1a, u1b := dial(t, a, event, "u1"), dial(t, b, event, "u1")
	u2a, u2b := dial(t, a, event, "u2"), dial(t, b, event, "u2")
	tabs := []*tab{u1a, u1b, u2a, u2b}
	for _, tb := range tabs {
		if m := tb.next(t, 5*time.Second); m["type"] != TypeState || m["state"] != StateNone {
			t.Fatalf("initial message = %v, want state none", m)
		}
	}

	// Both instances' queues are bound once a broadcast reaches every tab.
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		r := fmt.Sprintf("fence-%d", i)
		publish(t, pub, messages.Notification{Type: messages.NotifySeatsChanged, EventID: event, Reason: r})
		ok := true
		for _, tb := range tabs {
			select {
			case m := <-tb.msgs:
				if m["reason"] != r {
					ok = false
				}
			case <-time.After(300 * time.Millisecond):
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("notification queues of both instances not bound in time")
		}
		for _, tb := range tabs { // drain stragglers of earlier fences
			for len(tb.msgs) > 0 {
				<-tb.msgs
			}
		}
		time.Sleep(200 * time.Millisecond)
	}

	publish(t, pub, messages.Notification{Type: messages.NotifyYourTurn, EventID: event, UserID: "u1",
		Sequence: 1, ExpireTime: 1_900_000_000, Reason: "turn"})
	publish(t, pub, messages.Notification{Type: messages.NotifySeatsChanged, EventID: event, Reason: "after"})

	for name, tb := range map[string]*tab{"u1 on a": u1a, "u1 on b": u1b} {
		seen := tb.until(t, 5*time.Second, reasonIs("after"))
		var got []string
		for _, m := range seen {
			got = append(got, fmt.Sprint(m["type"], "/", m["reason"]))
		}
		if len(seen) != 2 || seen[0]["type"] != messages.NotifyYourTurn || seen[0]["user_id"] != "u1" ||
			seen[0]["expire_time"] != float64(1_900_000_000) {
			t.Errorf("%s got %v, want your_turn then the broadcast", name, got)
		}
	}
	for name, tb := range map[string]*tab{"u2 on a": u2a, "u2 on b": u2b} {
		seen := tb.until(t, 5*time.Second, reasonIs("after"))
		if len(seen) != 1 {
			t.Errorf("%s received %v before the broadcast; another user's notification leaked", name, seen[:len(seen)-1])
		}
	}
}
