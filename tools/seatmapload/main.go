// Command seatmapload measures the seat map under load: -readers clients
// read GET /api/seats/available of one -seats event as fast as they can
// (full answers, no If-None-Match: the worst case for the gateway) for
// -duration, while one bystander, a user waiting in the queue of another
// event, polls GET /api/booking/position back to back. It runs one phase
// with the bystander alone, then one with the readers per -encodings:
// "plain" readers send no Accept-Encoding, "gzip" readers send
// Accept-Encoding: gzip and keep the compressed bytes (as a client in a
// tight loop would not bother to decompress). Per phase it prints the
// seat map reads per second (and their ratio to -set-rate, the
// redis-benchmark SET rate measured beside it), the bytes each read
// carried, the bystander's position latency percentiles, and Redis's CPU
// time per seat-map read (INFO cpu before and after, so run it on an
// otherwise idle Redis).
//
// Run it with tools/seatmapload/run.sh, which builds and starts a gateway;
// see docs/benchmarks.md "Seat map".
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/auth"
)

func main() {
	gw := flag.String("gateway", "http://127.0.0.1:18080", "gateway base URL")
	secret := flag.String("secret", os.Getenv("JWT_SECRET"), "the gateway's JWT secret")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis, for INFO cpu")
	seats := flag.Int("seats", 200_000, "seats of the event (rows of 500)")
	readers := flag.Int("readers", 8, "concurrent seat-map readers")
	dur := flag.Duration("duration", 10*time.Second, "how long to read")
	encodings := flag.String("encodings", "plain,gzip", "the reader phases: plain (no Accept-Encoding), gzip (Accept-Encoding: gzip)")
	taken := flag.Float64("taken", 0, "fraction of the map's seats shown held or sold, at random (written into the event's status string: a map mid-sale, which compresses worse than a fresh one)")
	setRate := flag.Float64("set-rate", 0, "redis-benchmark -t set -c 50 requests/s measured beside this run (0: no ratios)")
	flag.IntVar(&gatewayPID, "gateway-pid", 0, "the gateway's process id, for its CPU time per phase (/proc; 0: not measured)")
	flag.StringVar(&prefix, "prefix", "bo", "the gateway's REDIS_PREFIX")
	flag.Parse()
	if err := run(*gw, *secret, *redisAddr, *seats, *readers, *dur, strings.Split(*encodings, ","), *setRate, *taken); err != nil {
		fmt.Fprintln(os.Stderr, "seatmapload:", err)
		os.Exit(1)
	}
}

func run(gw, secret, redisAddr string, seats, readers int, dur time.Duration, encodings []string, setRate, taken float64) error {
	for _, e := range encodings {
		if e != "plain" && e != "gzip" {
			return fmt.Errorf("-encodings: %q is neither plain nor gzip", e)
		}
	}
	a, err := auth.New([]byte(secret))
	if err != nil {
		return err
	}
	admin, _ := a.Issue("bench-admin", auth.RoleAdmin, time.Hour)
	by, _ := a.Issue("bystander", "", time.Hour)
	// no transparent decompression: a reader asks for gzip explicitly
	// and reads the bytes as sent
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: readers + 4, DisableCompression: true}}
	do := func(method, path, tok, body string, header ...string) (int, []byte, error) {
		req, _ := http.NewRequest(method, gw+path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	big, queue := "map"+stamp, "queue"+stamp
	for _, ev := range []string{
		fmt.Sprintf(`{"id":%q,"rows":%d,"seats_per_row":500}`, big, seats/500),
		fmt.Sprintf(`{"id":%q,"rows":1,"seats_per_row":10,"capacity":1}`, queue),
	} {
		if code, b, err := do("POST", "/api/admin/events", admin, ev); err != nil || code != 201 {
			return fmt.Errorf("create event: %d %s %v", code, b, err)
		}
	}
	// the room of 1 is taken by a holder, so the bystander waits
	holder, _ := a.Issue("holder", "", time.Hour)
	for _, tok := range []string{holder, by} {
		if code, b, err := do("POST", "/api/booking/request", tok, `{"event_id":"`+queue+`"}`); err != nil || code != 200 {
			return fmt.Errorf("join: %d %s %v", code, b, err)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	if taken > 0 {
		if err := takeSeats(rdb, prefix+":{"+big+"}:status", seats/500*500, taken); err != nil {
			return err
		}
	}
	// phase 0: the bystander alone (Redis's CPU without the readers, which
	// on a shared Redis includes whatever else runs); then one phase with
	// the readers per encoding
	var base phase
	if err := measure(rdb, do, 0, "", big, queue, by, dur, &base); err != nil {
		return err
	}
	fmt.Printf("seats %d, readers %d, %s per phase", seats, readers, dur)
	if setRate > 0 {
		fmt.Printf(", redis-benchmark SET %.0f/s", setRate)
	}
	fmt.Println()
	fmt.Printf("bystander position alone:  %d polls, p50 %s, p99 %s\n", len(base.lat), ms(base.pct(0.50)), ms(base.pct(0.99)))
	var reads int64
	var elapsed time.Duration
	for _, enc := range encodings {
		var p phase
		if err := measure(rdb, do, readers, enc, big, queue, by, dur, &p); err != nil {
			return err
		}
		rate := float64(p.reads) / p.elapsed.Seconds()
		fmt.Printf("%-5s readers: %d reads (%.0f/s", enc, p.reads, rate)
		if setRate > 0 {
			fmt.Printf(", %.3f× SET", rate/setRate)
		}
		fmt.Printf("), %.1f KB each on the wire, failed %d; bystander beside them: %d polls, p50 %s, p99 %s, max %s; Redis CPU %.3f s (alone: %.3f s)",
			float64(p.bytes)/float64(max(p.reads, 1))/1024, p.failed, len(p.lat), ms(p.pct(0.50)), ms(p.pct(0.99)), ms(p.pct(1)), p.cpu, base.cpu)
		if gatewayPID > 0 {
			fmt.Printf("; gateway CPU %.2f s (%.2f cores)", p.gwCPU, p.gwCPU/p.elapsed.Seconds())
		}
		fmt.Printf("; this tool's CPU %.2f s (%.2f cores)", p.selfCPU, p.selfCPU/p.elapsed.Seconds())
		fmt.Println()
		reads += p.reads
		elapsed += p.elapsed
	}
	// The gateway reads Redis about once a second per event, whatever the
	// readers do; what one such read costs Redis is measured here directly
	// (commandstats usec of 50 GETs of the status string; on a shared Redis
	// other clients' GETs add to it, so it is an upper bound).
	key := prefix + ":{" + big + "}:status"
	usec, err := getUsec(rdb, key, 50)
	if err != nil {
		return err
	}
	perRead := usec * elapsed.Seconds() / float64(max(reads, 1))
	fmt.Printf("Redis: GET of the status string %.0f µs; at one GET per second: %.3f µs of Redis CPU per seat-map read\n", usec, perRead)
	return nil
}

type phase struct {
	elapsed              time.Duration
	reads, bytes, failed int64
	lat                  []time.Duration
	cpu, gwCPU, selfCPU  float64 // Redis's, the gateway's and this tool's CPU seconds
}

func (p *phase) pct(q float64) time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	return p.lat[min(len(p.lat)-1, int(q*float64(len(p.lat))))]
}

// takeSeats marks a random fraction of the map's seats held or sold in
// its status string, as a sale in progress leaves it (the seat map shows
// the string; the booking state behind it is not changed, so this is for
// a benchmark's own event only).
func takeSeats(rdb *redis.Client, key string, seats int, fraction float64) error {
	status := make([]byte, seats)
	for i := range status {
		status[i] = 'a'
		if rand.Float64() < fraction {
			status[i] = "hs"[rand.IntN(2)]
		}
	}
	if err := rdb.Set(context.Background(), key, status, 0).Err(); err != nil {
		return fmt.Errorf("set %s: %w", key, err)
	}
	return nil
}

// ms is d in milliseconds, two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func measure(rdb *redis.Client, do func(method, path, tok, body string, header ...string) (int, []byte, error),
	readers int, encoding, big, queue, by string, dur time.Duration, p *phase) error {
	cpu0, err := redisCPU(rdb)
	if err != nil {
		return err
	}
	gw0, self0 := processCPU(gatewayPID), processCPU(os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var reads, bytesRead, failed atomic.Int64
	var wg sync.WaitGroup
	accept := ""
	if encoding == "gzip" {
		accept = "gzip"
	}
	for range readers {
		wg.Go(func() {
			for ctx.Err() == nil {
				code, b, err := do("GET", "/api/seats/available?event_id="+big, "", "", "Accept-Encoding", accept)
				if err != nil || code != 200 {
					failed.Add(1)
					continue
				}
				reads.Add(1)
				bytesRead.Add(int64(len(b)))
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			t := time.Now()
			code, _, err := do("GET", "/api/booking/position?event_id="+queue, by, "")
			if err != nil || code != 200 {
				failed.Add(1)
				continue
			}
			p.lat = append(p.lat, time.Since(t))
		}
	})
	start := time.Now()
	wg.Wait()
	p.elapsed = time.Since(start)
	cpu1, err := redisCPU(rdb)
	if err != nil {
		return err
	}
	slices.Sort(p.lat)
	p.reads, p.bytes, p.failed, p.cpu = reads.Load(), bytesRead.Load(), failed.Load(), cpu1-cpu0
	p.gwCPU, p.selfCPU = processCPU(gatewayPID)-gw0, processCPU(os.Getpid())-self0
	return nil
}

var (
	prefix     string
	gatewayPID int
)

// processCPU is a process's user and system CPU so far, in seconds (0
// when pid is 0 or unreadable): /proc/<pid>/stat's utime and stime, in
// clock ticks of 10 ms.
func processCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// the fields after the command name, which is in parentheses
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}

// getUsec is the server-side time of one GET of key, from INFO
// commandstats around n GETs.
func getUsec(rdb *redis.Client, key string, n int) (float64, error) {
	ctx := context.Background()
	read := func() (float64, error) {
		info, err := rdb.Info(ctx, "commandstats").Result()
		if err != nil {
			return 0, err
		}
		for _, l := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_get:"); ok {
				for _, f := range strings.Split(rest, ",") {
					if v, ok := strings.CutPrefix(f, "usec="); ok {
						return strconv.ParseFloat(v, 64)
					}
				}
			}
		}
		return 0, nil
	}
	u0, err := read()
	if err != nil {
		return 0, err
	}
	for range n {
		if err := rdb.Get(ctx, key).Err(); err != nil {
			return 0, fmt.Errorf("get %s: %w", key, err)
		}
	}
	u1, err := read()
	return (u1 - u0) / float64(n), err
}

// redisCPU is Redis's used_cpu_sys + used_cpu_user, in seconds.
func redisCPU(rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, l := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
	}
	return sum, nil
}
