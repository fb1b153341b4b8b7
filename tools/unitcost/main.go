// Command unitcost measures what one join and one position request cost
// inside Redis, and what a waiting user costs in Redis memory, through the
// booking package (the same scripts and pipelining the gateway uses).
//
// Point it at a Redis of its own (a fresh redis-server on a spare port):
// the per-call times come from INFO commandstats, compared before and
// after each phase, so any other client's traffic would be counted too.
//
//	redis-server --port 16390 --save '' --appendonly no --daemonize yes
//	go run ./unitcost -redis 127.0.0.1:16390 -n 200000 -waiting 1000000
//	go run ./unitcost -redis 127.0.0.1:16390 -n 200000 -waiting 0 -limits   # abuse limits on
//	go run ./unitcost -redis 127.0.0.1:16390 -n 100000 -waiting 0 -codes    # joins with an access code
//	go run ./unitcost -redis 127.0.0.1:16390 -n 1 -waiting 0 -best 20000     # best available
//
// Phases: join (n new users join an event whose room is full: every join
// queues, the common case under load), position (n polls of those users),
// with -admit admit (the room grows to hold them all and promotion admits
// them, 500 a call: what an admission costs, the admission log included),
// select-best (-best n: best-available calls on a map of 50-seat rows),
// memory (waiting users join a fresh event; MEMORY USAGE of each key kind,
// exact, divided by the users, before and after the join facts leave the
// outbox). Every key it wrote is deleted at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ratelimit"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:16390", "Redis address (use one of its own)")
	n := flag.Int("n", 200000, "joins and position polls to measure")
	waiting := flag.Int("waiting", 1000000, "waiting users for the memory phase (0: skip)")
	conc := flag.Int("c", 50, "concurrent callers")
	abandon := flag.Bool("abandon", false, "events with abandonment on (a presence entry per waiting user)")
	limits := flag.Bool("limits", false, "joins and polls with both abuse limits on (per IP, all joins from one address, and per user), as the gateway checks them inside the scripts")
	admit := flag.Bool("admit", false, "then promote the n waiting users in calls of 500 (the admission phase: each admission writes the room, the outbox and the admission log)")
	prequeue := flag.Bool("prequeue", false, "joins in the pre-queue (the sale starts in an hour and its pre-queue is open): each waits by its draw key")
	codes := flag.Bool("codes", false, "then joins with an access code (each user its own single-use code) beside joins without, both batched by the pipeliner as the gateway sends them")
	best := flag.Int("best", 0, "best-available calls of 1 to 6 seats, each by its own admitted user, on a map of 50-seat rows big enough for all (0: skip)")
	flag.Parse()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: *conc})
	defer rdb.Close()
	prefix := fmt.Sprintf("unitcost%d", os.Getpid())
	s := booking.New(rdb, booking.WithPrefix(prefix))
	defer s.Close()
	defer cleanup(ctx, rdb, prefix)
	atFail = func() { cleanup(ctx, rdb, prefix) }
	if err := s.Load(ctx); err != nil {
		fail(err)
	}
	cfg := func(id string) booking.EventConfig {
		c := booking.EventConfig{ID: id, Rows: 100, SeatsPerRow: 100, Capacity: 1}
		if *abandon {
			c.Abandon = 10 * time.Minute
		}
		if *prequeue {
			c.SalesStart, c.EarlyJoin = time.Now().Add(time.Hour), 2*time.Hour
		}
		return c
	}
	if _, err := s.CreateEvent(ctx, cfg("cost")); err != nil {
		fail(err)
	}
	if _, err := s.Enqueue(ctx, "cost", "first"); err != nil { // fills the room
		fail(err)
	}
	user := func(i int64) string { return "u" + strconv.FormatInt(1e11+i, 10) }

	// the gateway's policy (pkg/ratelimit) with limits no caller reaches
	var policy ratelimit.Config
	if *limits {
		policy = ratelimit.Config{JoinsPerMinutePerIP: 1e8, RequestsPerSecondPerUser: 100}
	}
	ip := netip.MustParseAddr("198.51.100.7")
	phase(ctx, rdb, "join", *n, *conc, func(i int64) error {
		u := user(i)
		_, err := s.Enqueue(ctx, "cost", u, policy.IP(ip), policy.User(u))
		return err
	})
	phase(ctx, rdb, "position", *n, *conc, func(i int64) error {
		u := user(i % int64(*n))
		_, err := s.Position(ctx, "cost", u, policy.User(u))
		return err
	})

	if *admit {
		// an event with a seat for everyone and a room of one, filled
		adm := booking.EventConfig{ID: "admit", Rows: *n/100 + 1, SeatsPerRow: 100, Capacity: 1}
		if _, err := s.CreateEvent(ctx, adm); err != nil {
			fail(err)
		}
		run(*n+1, *conc, func(i int64) error {
			_, err := s.Enqueue(ctx, "admit", user(i))
			return err
		})
		capacity := *n + 1
		if _, err := s.UpdateEvent(ctx, "admit", booking.EventUpdate{Capacity: &capacity}); err != nil {
			fail(err)
		}
		const batch = 500
		phase(ctx, rdb, "admit (one op: a promotion of 500 users)", *n/batch, 1, func(int64) error {
			_, err := s.Promote(ctx, "admit", batch)
			return err
		})
	}

	if *codes {
		codeJoins(ctx, rdb, prefix, cfg, *n, *conc, policy, ip)
	}
	if *best > 0 {
		bestAvailable(ctx, rdb, s, *best, *conc)
	}

	if *waiting <= 0 {
		return
	}
	if _, err := s.CreateEvent(ctx, cfg("mem")); err != nil {
		fail(err)
	}
	if _, err := s.Enqueue(ctx, "mem", "first"); err != nil {
		fail(err)
	}
	before := usedMemory(ctx, rdb)
	start := time.Now()
	run(*waiting, *conc, func(i int64) error {
		_, err := s.Enqueue(ctx, "mem", user(i))
		return err
	})
	fmt.Printf("\nmemory: %d users joined in %v\n", *waiting, time.Since(start).Round(time.Millisecond))
	report := func(title string) {
		fmt.Printf("%s (MEMORY USAGE SAMPLES 0, bytes per waiting user; used_memory delta %.1f B/user)\n",
			title, float64(usedMemory(ctx, rdb)-before)/float64(*waiting))
		fmt.Println("| key | type | entries | bytes | per waiting user |")
		fmt.Println("|---|---|---|---|---|")
		var total float64
		for _, k := range eventMemory(ctx, rdb, prefix, "mem") {
			per := float64(k.Bytes) / float64(*waiting)
			if per < 0.05 {
				continue
			}
			total += per
			fmt.Printf("| %s | %s | %d | %d | %.1f |\n", k.Name, k.Type, k.Entries, k.Bytes, per)
		}
		fmt.Printf("| total | | | | %.1f |\n", total)
	}
	report("with the join facts still in the outbox")
	out, err := s.Outbox(ctx, "mem", 0)
	for err == nil && len(out) > 0 {
		if err = s.AckOutbox(ctx, "mem", out...); err == nil {
			out, err = s.Outbox(ctx, "mem", 0)
		}
	}
	if err != nil {
		fail(err)
	}
	report("after the relay acknowledged them")
}

// codeJoins measures n joins with an access code of their own against n
// joins without, on two events whose room is full, through a Store that
// batches concurrent joins as the gateway's does (the joins with a code
// together, the others together), and the codes hash's memory per code.
func codeJoins(ctx context.Context, rdb *redis.Client, prefix string, cfg func(string) booking.EventConfig, n, conc int,
	policy ratelimit.Config, ip netip.Addr) {
	s := booking.New(rdb, booking.WithPrefix(prefix))
	defer s.Close()
	key := []byte("unitcost access code key")
	recs := make([]booking.CodeRecord, n)
	for i := range recs {
		recs[i] = booking.CodeRecord{ID: int64(i + 1), Digest: booking.CodeDigest(key, "CODE"+strconv.Itoa(i)), Uses: 1}
	}
	for _, id := range []string{"plain", "coded"} {
		if _, err := s.CreateEvent(ctx, cfg(id)); err != nil {
			fail(err)
		}
		if _, err := s.Enqueue(ctx, id, "first"); err != nil {
			fail(err)
		}
	}
	mem0 := usedMemory(ctx, rdb)
	if err := s.LoadCodes(ctx, "coded", recs); err != nil {
		fail(err)
	}
	fmt.Printf("\ncodes: %d single-use codes loaded, %.1f B per code (used_memory delta)\n", n,
		float64(usedMemory(ctx, rdb)-mem0)/float64(n))
	user := func(i int64) string { return "c" + strconv.FormatInt(1e11+i, 10) }
	plain := func(i int64) error {
		u := user(i)
		_, err := s.Enqueue(ctx, "plain", u, policy.IP(ip), policy.User(u))
		return err
	}
	coded := func(i int64) error {
		u := user(i)
		r, err := s.EnqueueCode(ctx, "coded", u, recs[i].Digest, policy.IP(ip), policy.User(u), policy.CodeTries(ip))
		if err == nil && r.Code == nil {
			err = fmt.Errorf("join of %s did not redeem its code", u)
		}
		return err
	}
	// the two kinds alternate in tenths, so a busy machine slows both
	// alike; FCALL's time inside Redis (commandstats) and Redis's CPU
	var usec, cpu [2]float64
	for r := range 10 {
		for k, fn := range []func(int64) error{plain, coded} {
			from := int64(r * n / 10)
			u0, c0 := commandStats(ctx, rdb)["fcall"].usec, redisCPU(ctx, rdb)
			run(n/10, conc, func(i int64) error { return fn(from + i) })
			usec[k] += float64(commandStats(ctx, rdb)["fcall"].usec - u0)
			cpu[k] += redisCPU(ctx, rdb) - c0
		}
	}
	fmt.Printf("join: FCALL %.2f µs inside Redis, Redis CPU %.2f µs per join\n", usec[0]/float64(n), cpu[0]*1e6/float64(n))
	fmt.Printf("join with a code: FCALL %.2f µs inside Redis, Redis CPU %.2f µs per join\n", usec[1]/float64(n), cpu[1]*1e6/float64(n))
}

// bestAvailable measures select_best: n admitted users each ask for 1 to
// 6 adjacent seats (i mod 6 + 1) on a map of 50-seat rows with room for
// all of them, the rows filling from the front as in a sale.
func bestAvailable(ctx context.Context, rdb *redis.Client, s *booking.Store, n, conc int) {
	rows := n*5/50 + 1
	if _, err := s.CreateEvent(ctx, booking.EventConfig{ID: "best", Rows: rows, SeatsPerRow: 50,
		Capacity: n, MaxSeatsPerOrder: 6}); err != nil {
		fail(err)
	}
	user := func(i int64) string { return "b" + strconv.FormatInt(1e11+i, 10) }
	run(n, conc, func(i int64) error {
		_, err := s.Enqueue(ctx, "best", user(i))
		return err
	})
	phase(ctx, rdb, fmt.Sprintf("select-best (%d rows of 50)", rows), n, conc, func(i int64) error {
		_, err := s.SelectBest(ctx, "best", user(i), int(i%6)+1, "")
		return err
	})
	// the same selections by seat id (select-seat), on a map alike, for
	// comparison in the same run: the seats are given in map order
	if _, err := s.CreateEvent(ctx, booking.EventConfig{ID: "manual", Rows: rows, SeatsPerRow: 50,
		Capacity: n, MaxSeatsPerOrder: 6}); err != nil {
		fail(err)
	}
	run(n, conc, func(i int64) error {
		_, err := s.Enqueue(ctx, "manual", user(i))
		return err
	})
	ids := booking.SeatIDs(rows, 50)
	picks := make([][]string, n)
	for i, at := 0, 0; i < n; i++ {
		k := i%6 + 1
		if at%50+k > 50 { // whole in one row
			at += 50 - at%50
		}
		picks[i] = ids[at : at+k]
		at += k
	}
	phase(ctx, rdb, "select-seat (the same seats by id)", n, conc, func(i int64) error {
		_, err := s.LockSeats(ctx, "manual", user(i), picks[i])
		return err
	})
}

// phase runs n calls of fn on conc goroutines and prints what Redis spent
// per call, from INFO commandstats before and after.
func phase(ctx context.Context, rdb *redis.Client, name string, n, conc int, fn func(int64) error) {
	before, cpu0 := commandStats(ctx, rdb), redisCPU(ctx, rdb)
	start := time.Now()
	run(n, conc, fn)
	el := time.Since(start)
	after, cpu1 := commandStats(ctx, rdb), redisCPU(ctx, rdb)
	fmt.Printf("\n%s: %d calls in %v (%.0f/s); Redis process CPU (INFO cpu, network included) %.2f µs per op\n",
		name, n, el.Round(time.Millisecond), float64(n)/el.Seconds(), (cpu1-cpu0)*1e6/float64(n))
	var cmds []string
	for c := range after {
		if after[c].calls > before[c].calls {
			cmds = append(cmds, c)
		}
	}
	sort.Strings(cmds)
	fmt.Println("| command | calls per op | µs per op (commandstats) |")
	fmt.Println("|---|---|---|")
	for _, c := range cmds {
		d := after[c].calls - before[c].calls
		us := after[c].usec - before[c].usec
		fmt.Printf("| %s | %.2f | %.2f |\n", c, float64(d)/float64(n), float64(us)/float64(n))
	}
}

func run(n, conc int, fn func(int64) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := fn(i); err != nil {
					fail(err)
				}
			}
		})
	}
	wg.Wait()
}

type stat struct{ calls, usec int64 }

func commandStats(ctx context.Context, rdb *redis.Client) map[string]stat {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		fail(err)
	}
	out := map[string]stat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var st stat
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				st.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = st
	}
	return out
}

// redisCPU is the Redis process's CPU time so far (used_cpu_sys +
// used_cpu_user, seconds): unlike commandstats' wall-clock times it does
// not grow when the machine is busy and Redis waits for a core.
func redisCPU(ctx context.Context, rdb *redis.Client) float64 {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		fail(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
	}
	return sum
}

func usedMemory(ctx context.Context, rdb *redis.Client) int64 {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		fail(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// keyMemory is one key of an event in the memory report.
type keyMemory struct {
	Name    string // the key's name in the scripts ("waiting")
	Type    string
	Entries int64
	Bytes   int64 // MEMORY USAGE SAMPLES 0
}

// eventMemory measures every key of eventID that exists
// (booking.EventKeys, every key the scripts write for an event), in
// lua.EventKey order.
func eventMemory(ctx context.Context, rdb redis.Cmdable, prefix, eventID string) []keyMemory {
	// keys[i] is names[i]: both are the scripts' list, in lua.EventKey order
	keys, names := booking.EventKeys(prefix, eventID), lua.EventKeyNames()
	var out []keyMemory
	for i, k := range keys {
		b, err := rdb.MemoryUsage(ctx, k, 0).Result()
		if err == redis.Nil || b == 0 {
			continue
		}
		typ := rdb.Type(ctx, k).Val()
		out = append(out, keyMemory{Name: names[i], Type: typ, Entries: entries(ctx, rdb, typ, k), Bytes: b})
	}
	return out
}

func entries(ctx context.Context, rdb redis.Cmdable, typ, key string) int64 {
	switch typ {
	case "hash":
		return rdb.HLen(ctx, key).Val()
	case "zset":
		return rdb.ZCard(ctx, key).Val()
	case "list":
		return rdb.LLen(ctx, key).Val()
	}
	return 1
}

// cleanup deletes every key under prefix: the events' keys and any other
// the Store wrote (the events' index, abuse limits); what it cannot delete
// is said on stderr.
func cleanup(ctx context.Context, rdb redis.Cmdable, prefix string) {
	it := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	for it.Next(ctx) {
		if err := rdb.Unlink(ctx, it.Val()).Err(); err != nil {
			fmt.Fprintln(os.Stderr, "unitcost: cleanup:", err)
		}
	}
	if err := it.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "unitcost: cleanup: keys under", prefix+":", "may be left:", err)
	}
}

// atFail deletes the keys written so far before fail exits (os.Exit runs
// no deferred call).
var atFail func()

func fail(err error) {
	fmt.Fprintln(os.Stderr, "unitcost:", err)
	if atFail != nil {
		atFail()
	}
	os.Exit(1)
}
