// Command wsload measures the notifier under many WebSocket connections.
//
// It creates an event whose booking room (capacity -release) is full, joins
// -n waiting users, opens one WebSocket per waiting user to the notifier
// (spread over the source addresses -sources so that the ephemeral ports of
// one address do not run out), and reads the notifier's memory from its
// /metrics before and after. Then, -rounds times, it releases every slot of
// the room the way the services do — cancel the holders, promote the next
// users (booking.Store.Promote), publish one your_turn per admitted user to
// the notifications fanout with publisher confirms — and measures for each
// admitted user the time from the start of the release to the receipt of
// "your_turn" on its WebSocket. It prints connections held, memory per
// connection and the latency percentiles.
//
// Run it with tools/wsload/run.sh, which builds and starts a notifier with
// a raised file limit; see docs/benchmarks.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"
)

var verbose bool

type options struct {
	wsURL, metricsURL, redisAddr, prefix, amqpURL, secret string
	n, release, rounds, dialers                           int
	sources                                               []string
	settle                                                time.Duration
}

func main() {
	var o options
	var sources string
	flag.StringVar(&o.wsURL, "ws", "ws://127.0.0.1:8082/ws", "notifier WebSocket URL")
	flag.StringVar(&o.metricsURL, "metrics", "http://127.0.0.1:9103/metrics", "notifier admin /metrics URL")
	flag.StringVar(&o.redisAddr, "redis", "127.0.0.1:6379", "Redis address")
	flag.StringVar(&o.prefix, "prefix", "bo", "Redis key prefix (the notifier's REDIS_PREFIX)")
	flag.StringVar(&o.amqpURL, "amqp", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL (the notifier's AMQP_URL)")
	flag.StringVar(&o.secret, "secret", os.Getenv("JWT_SECRET"), "JWT secret (the notifier's JWT_SECRET)")
	flag.IntVar(&o.n, "n", 20000, "WebSocket connections (waiting users)")
	flag.IntVar(&o.release, "release", 100, "room capacity: slots released per round")
	flag.IntVar(&o.rounds, "rounds", 10, "release rounds")
	flag.IntVar(&o.dialers, "dialers", 64, "concurrent dials")
	flag.StringVar(&sources, "sources", "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4", "local source addresses, comma separated")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "pause before reading memory after connecting")
	flag.BoolVar(&verbose, "v", false, "print each round")
	flag.Parse()
	o.sources = strings.Split(sources, ",")
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "wsload:", err)
		os.Exit(1)
	}
}

type client struct {
	user     string
	conn     *websocket.Conn
	gotTurn  atomic.Int64 // unix nanos of the your_turn receipt
	messages atomic.Int64
}

func run(ctx context.Context, o options) error {
	if o.release*o.rounds > o.n {
		return fmt.Errorf("release×rounds (%d) exceeds n (%d)", o.release*o.rounds, o.n)
	}
	authority, err := auth.New([]byte(o.secret))
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr, PoolSize: 64})
	defer rdb.Close()
	store := booking.New(rdb, booking.WithPrefix(o.prefix))
	pub, err := amqpx.NewPublisher(ctx, o.amqpURL)
	if err != nil {
		return fmt.Errorf("rabbitmq: %w", err)
	}
	defer pub.Close()

	// An event with a full room and n waiting users.
	event := "wsload-" + strings.ToLower(rand.Text()[:8])
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: event, Name: "wsload", Rows: 26,
		SeatsPerRow: 100, Capacity: o.release, Hold: time.Hour, BatchSize: o.release}); err != nil {
		return err
	}
	holders := make([]string, o.release)
	for i := range holders {
		holders[i] = fmt.Sprintf("h%d", i)
	}
	users := make([]string, o.n)
	for i := range users {
		users[i] = fmt.Sprintf("u%06d", i)
	}
	t0 := time.Now()
	for _, h := range holders { // first, so that they fill the room
		if _, err := store.Enqueue(ctx, event, h); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	if err := parallel(32, len(users), func(i int) error {
		_, err := store.Enqueue(ctx, event, users[i])
		return err
	}); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	fmt.Printf("event %s: %d holders, %d waiting users joined in %v\n", event, len(holders), len(users), time.Since(t0).Round(time.Millisecond))

	before, err := scrape(o.metricsURL)
	if err != nil {
		return err
	}

	// One Transport per source address; the connections never return to a
	// pool (they are hijacked), so the Transport only dials.
	transports := make([]*http.Client, len(o.sources))
	for i, src := range o.sources {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
		transports[i] = &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	clients := make([]*client, o.n)
	var connected, initial atomic.Int64
	t0 = time.Now()
	err = parallel(o.dialers, o.n, func(i int) error {
		tok, err := authority.Issue(users[i], "", 24*time.Hour)
		if err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(dctx, o.wsURL+"?event_id="+event+"&token="+tok,
			&websocket.DialOptions{HTTPClient: transports[i%len(transports)]})
		if err != nil {
			return fmt.Errorf("dial %d: %w", i, err)
		}
		c := &client{user: users[i], conn: conn}
		clients[i] = c
		connected.Add(1)
		go c.read(&initial)
		return nil
	})
	if err != nil {
		return fmt.Errorf("connect (after %d): %w", connected.Load(), err)
	}
	connectTime := time.Since(t0)
	for initial.Load() < int64(o.n) && time.Since(t0) < time.Minute {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("connections held: %d (initial state received by %d) in %v\n", connected.Load(), initial.Load(), connectTime.Round(time.Millisecond))
	time.Sleep(o.settle)
	after, err := scrape(o.metricsURL)
	if err != nil {
		return err
	}
	conns := after["boxoffice_notifier_connections"]
	per := func(k string) float64 { return (after[k] - before[k]) / conns / 1024 }
	fmt.Printf("notifier reports %v connections\n", conns)
	fmt.Printf("memory per connection: RSS %.1f KiB, Go heap in use %.1f KiB + stacks %.1f KiB = %.1f KiB\n",
		per("process_resident_memory_bytes"), per("go_memstats_heap_inuse_bytes"), per("go_memstats_stack_inuse_bytes"),
		per("go_memstats_heap_inuse_bytes")+per("go_memstats_stack_inuse_bytes"))

	// Release rounds: the room's holders leave, the next users are admitted
	// and told.
	byUser := make(map[string]*client, len(clients))
	for _, c := range clients {
		byUser[c.user] = c
	}
	room := holders
	var lat []time.Duration
	var missing int
	for r := range o.rounds {
		promoted, start, err := release(ctx, store, pub, event, room)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		released := time.Since(start) // promote and publish
		room = room[:0:0]
		deadline := time.Now().Add(10 * time.Second)
		for _, u := range promoted {
			room = append(room, u)
			c := byUser[u]
			for c.gotTurn.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if at := c.gotTurn.Load(); at != 0 {
				lat = append(lat, time.Unix(0, at).Sub(start))
			} else {
				missing++
			}
		}
		if verbose {
			fmt.Printf("round %d: %d admitted, release took %v\n", r, len(promoted), released.Round(100*time.Microsecond))
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(lat)
	fmt.Printf("your_turn latency over %d admissions in %d rounds of %d (missing %d): p50 %v p90 %v p99 %v max %v\n",
		len(lat), o.rounds, o.release, missing, pct(lat, 50), pct(lat, 90), pct(lat, 99), pct(lat, 100))
	var msgs int64
	for _, c := range clients {
		msgs += c.messages.Load()
	}
	fmt.Printf("messages received by all clients: %d\n", msgs)
	for _, c := range clients {
		c.conn.CloseNow()
	}
	_, _ = store.Cancel(ctx, event, "nobody") // nothing; the event's keys stay for inspection
	return nil
}

// release does what a cancel plus the slot-released consumer do: free the
// room's slots, promote the next users, and publish one confirmed your_turn
// per admitted user.
func release(ctx context.Context, store *booking.Store, pub *amqpx.Publisher, event string, room []string) ([]string, time.Time, error) {
	start := time.Now()
	for _, u := range room {
		if _, err := store.Cancel(ctx, event, u); err != nil {
			return nil, time.Time{}, fmt.Errorf("cancel %s: %w", u, err)
		}
	}
	t0 := time.Now() // the slots are free: latency counts from here
	res, err := store.Promote(ctx, event, 0)
	if err != nil {
		return nil, t0, err
	}
	if verbose {
		fmt.Printf("  cancel %v, promote %v\n", t0.Sub(start).Round(100*time.Microsecond), time.Since(t0).Round(100*time.Microsecond))
	}
	out := make([]string, len(res.Promoted))
	err = parallel(len(res.Promoted), len(res.Promoted), func(i int) error {
		a := res.Promoted[i]
		out[i] = a.UserID
		b, _ := json.Marshal(messages.Notification{Type: messages.NotifyYourTurn, EventID: event, UserID: a.UserID,
			Sequence: a.Sequence, ExpireTime: a.ExpireAt.Unix(), ExpireAtMS: a.ExpireAt.UnixMilli(), Timestamp: time.Now().Unix()})
		return pub.Publish(ctx, amqpx.NotificationsExchange, "", amqpx.Message{Type: messages.NotifyYourTurn, Body: b})
	})
	if err != nil {
		return nil, t0, err
	}
	if err := store.AckOutbox(ctx, event, res.Outbox...); err != nil {
		return nil, t0, err
	}
	return out, t0, nil
}

var yourTurn = []byte(`"type":"` + messages.NotifyYourTurn + `"`)

func (c *client) read(initial *atomic.Int64) {
	first := true
	for {
		_, b, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		now := time.Now().UnixNano()
		c.messages.Add(1)
		if first {
			initial.Add(1)
			first = false
		}
		// A byte search rather than a JSON decode per message: the load
		// generator shares the notifier's CPUs, and every position
		// broadcast wakes all of its readers.
		if bytes.Contains(b, yourTurn) {
			c.gotTurn.CompareAndSwap(0, now)
		}
	}
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(workers, n int, fn func(i int) error) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := (len(d)*p + 99) / 100
	return d[max(0, min(len(d)-1, i-1))].Round(100 * time.Microsecond)
}

// scrape reads the unlabelled samples of a Prometheus text exposition.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New("metrics: " + resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.Contains(line, "{") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}
