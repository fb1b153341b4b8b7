package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Report is what an on-sale measured.
type Report struct {
	Config   Config
	Elapsed  time.Duration
	Finished bool // the sale ended (queue empty or sold out) within Duration

	Joined, JoinedActive, Receipts      atomic.Int64
	ProgressPolls, Progress304          atomic.Int64
	Admitted, Paid, Abandoned           atomic.Int64
	SoldOut, TurnLost, ServedButWaiting atomic.Int64
	SeatConflicts, Sockets              atomic.Int64
	Retries                             atomic.Int64 // buyer steps tried again after a 503

	Join, Progress, Position, YourTurn, TurnByPoll hist

	mu             sync.Mutex
	Errors         map[string]int64 // by "step status code"
	start, joinEnd time.Time
	firstAdmission time.Time
	lastAdmission  time.Time

	// Redis over the run (INFO): commands per second, CPU (user+sys
	// seconds per second), and the time per join of the join script.
	RedisOpsPerSec, RedisCPU float64
	RedisCommands            int64
	// RedisMemory is the growth of used_memory over the run (the whole
	// server: the queue, the outbox and whatever else ran).
	RedisMemory int64
	Event       EventCounts

	sim *sim
}

// Refresh reads the event's counts again (Event).
func (r *Report) Refresh() error {
	e, err := r.sim.eventCounts()
	if err == nil {
		r.Event = e
	}
	return err
}

func newReport(c Config) *Report { return &Report{Config: c, Errors: map[string]int64{}} }

// ErrorCount is the number of failed steps.
func (r *Report) ErrorCount() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

func (r *Report) fail(step string, status int, code string, err error) {
	k := step + " " + strconv.Itoa(status)
	if code != "" {
		k += " " + code
	}
	if err != nil {
		msg := err.Error()
		if len(msg) > 60 {
			msg = msg[:60]
		}
		k += " " + msg
	}
	r.mu.Lock()
	r.Errors[k]++
	r.mu.Unlock()
}

func (r *Report) admittedAt(t time.Time) {
	r.mu.Lock()
	if r.firstAdmission.IsZero() {
		r.firstAdmission = t
	}
	r.lastAdmission = t
	r.mu.Unlock()
}

// JoinsPerSec is joins over the time from the start to the last join's
// answer.
func (r *Report) JoinsPerSec() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.joinEnd.IsZero() {
		return 0
	}
	return float64(r.Joined.Load()) / max(time.Millisecond, r.joinEnd.Sub(r.start)).Seconds()
}

// AdmissionsPerSec is admissions over the time from the first to the last.
func (r *Report) AdmissionsPerSec() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.lastAdmission.Sub(r.firstAdmission)
	if d <= 0 {
		return 0
	}
	return float64(r.Admitted.Load()) / d.Seconds()
}

// hist keeps every sample (a few bytes each; a million joins are 8 MB).
type hist struct {
	mu sync.Mutex
	d  []time.Duration
}

func (h *hist) add(d time.Duration) {
	h.mu.Lock()
	h.d = append(h.d, d)
	h.mu.Unlock()
}

// Count is the number of samples.
func (h *hist) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.d)
}

// Pct is the p-th percentile (0 without samples).
func (h *hist) Pct(p float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.d) == 0 {
		return 0
	}
	if !slices.IsSorted(h.d) {
		slices.Sort(h.d)
	}
	return h.d[min(len(h.d)-1, int(p/100*float64(len(h.d))))]
}

// redisInfo reads INFO stats, cpu and commandstats.
func redisInfo(ctx context.Context, addr string) (map[string]string, error) {
	if addr == "" {
		return nil, nil
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	s, err := rdb.Info(ctx, "stats", "cpu", "memory").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{"at": strconv.FormatInt(time.Now().UnixNano(), 10)}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

func (r *Report) redis(before, after map[string]string) {
	if before == nil || after == nil {
		return
	}
	f := func(m map[string]string, k string) float64 { v, _ := strconv.ParseFloat(m[k], 64); return v }
	secs := (f(after, "at") - f(before, "at")) / 1e9
	if secs <= 0 {
		return
	}
	r.RedisCommands = int64(f(after, "total_commands_processed") - f(before, "total_commands_processed"))
	r.RedisOpsPerSec = float64(r.RedisCommands) / secs
	r.RedisMemory = int64(f(after, "used_memory") - f(before, "used_memory"))
	cpu := f(after, "used_cpu_user") + f(after, "used_cpu_sys") - f(before, "used_cpu_user") - f(before, "used_cpu_sys")
	r.RedisCPU = cpu / secs
}

// Print writes the report.
func (r *Report) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "on-sale %s: %d users (seed %d) over %v (spike %.0f%%), %d×%d seats, room %d, hold %v\n",
		c.EventID, c.Users, c.Seed, c.Arrive, c.Spike*100, c.Rows, c.PerRow, c.Capacity, c.Hold)
	fmt.Fprintf(w, "  ran %v (bound %v), finished: %v\n", r.Elapsed.Round(time.Millisecond), c.Duration, r.Finished)
	fmt.Fprintf(w, "  joins        %d ok (%d admitted at once, %d receipts), %.0f/s\n",
		r.Joined.Load(), r.JoinedActive.Load(), r.Receipts.Load(), r.JoinsPerSec())
	fmt.Fprintf(w, "  admissions   %d, %.1f/s; paid %d, abandoned %d, sold out %d, turn lost %d, seat conflicts %d\n",
		r.Admitted.Load(), r.AdmissionsPerSec(), r.Paid.Load(), r.Abandoned.Load(), r.SoldOut.Load(), r.TurnLost.Load(), r.SeatConflicts.Load())
	fmt.Fprintf(w, "  progress     %d polls (%d × 304) by %d pollers every %v; %d WebSockets held\n",
		r.ProgressPolls.Load(), r.Progress304.Load(), c.Pollers, c.PollEvery, r.Sockets.Load())
	fmt.Fprintf(w, "  %-28s %8s %10s %10s\n", "latency", "count", "p50", "p99")
	for _, h := range []struct {
		name string
		h    *hist
	}{{"join", &r.Join}, {"progress", &r.Progress}, {"position (exact)", &r.Position},
		{"your_turn (WebSocket)", &r.YourTurn}, {"turn seen by polling", &r.TurnByPoll}} {
		fmt.Fprintf(w, "  %-28s %8d %10v %10v\n", h.name, h.h.Count(), h.h.Pct(50).Round(10*time.Microsecond), h.h.Pct(99).Round(10*time.Microsecond))
	}
	fmt.Fprintf(w, "  redis        %.0f ops/s, CPU %.0f%% of a core (%d commands), used_memory %+.1f MiB (%.0f B per joined user) (INFO, whole server)\n",
		r.RedisOpsPerSec, r.RedisCPU*100, r.RedisCommands, float64(r.RedisMemory)/(1<<20), float64(r.RedisMemory)/float64(max(1, r.Joined.Load())))
	e := r.Event
	fmt.Fprintf(w, "  event        sold %d/%d, held %d, waiting %d, in the room %d, served up to %d\n", e.Sold, e.Total, e.Held, e.Waiting, e.Active, e.Served)
	r.Calibration().Print(w)
	r.mu.Lock()
	keys := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	slices.Sort(keys)
	fmt.Fprintf(w, "  errors       %d (after %d retries of a buyer's step on a 503)\n", r.ErrorCount(), r.Retries.Load())
	for _, k := range keys {
		fmt.Fprintf(w, "    %6d  %s\n", r.Errors[k], k)
	}
}
