package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/auth"
)

// Config is one on-sale.
type Config struct {
	Gateway  string // base URL
	Notifier string // WebSocket URL; "" for no WebSocket sample
	Redis    string // address for INFO; "" for none
	Secret   string // the stack's JWT_SECRET
	EventID  string
	Create   bool // create the event (Rows × PerRow seats, Capacity, Hold)
	Rows     int
	PerRow   int
	Capacity int
	Hold     time.Duration

	Users int
	Seed  uint64
	// Arrive is the arrival window; Spike the share of users arriving in
	// its first twentieth or so (exponential, mean Arrive/20), the others
	// uniformly over the window.
	Arrive   time.Duration
	Spike    float64
	Duration time.Duration // the run ends after this, finished or not
	Conns    int           // concurrent joins
	// Pollers poll the progress document every PollEvery, standing for
	// the waiting crowd (whose polls a CDN would absorb): every waiting
	// user compares its sequence with what they see.
	Pollers   int
	PollEvery time.Duration
	// WSSample users who queue hold a notifier WebSocket: every WSEvery-th
	// user, from the start (so that they are admitted within the run).
	WSSample int
	WSEvery  int
	Buyers   int     // admitted users served at once
	PayShare float64 // share of admitted users who pay; the others abandon
	Think    time.Duration
	// FreeSeats: a buyer whose seat was taken picks the next among the
	// seats the seat map shows available, as the page does (otherwise at
	// random among all, so that the last few seats may stay unsold).
	FreeSeats bool
}

// DefaultConfig is a small on-sale.
func DefaultConfig() Config {
	return Config{Rows: 20, PerRow: 50, Capacity: 200, Hold: 2 * time.Minute, Users: 10_000, Seed: 1,
		Arrive: 30 * time.Second, Spike: 0.6, Duration: 5 * time.Minute, Conns: 64, Pollers: 8,
		PollEvery: time.Second, WSSample: 20, WSEvery: 20, Buyers: 64, PayShare: 0.7, Think: 500 * time.Millisecond}
}

// Schedule is each user's arrival after the start, sorted: a spike
// (exponential with mean arrive/20, capped at arrive) for a spike share
// of them, uniform over arrive for the rest. The same seed gives the same
// schedule.
func Schedule(users int, arrive time.Duration, spike float64, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]time.Duration, users)
	for i := range out {
		if rng.Float64() < spike {
			out[i] = min(arrive, time.Duration(rng.ExpFloat64()*float64(arrive)/20))
		} else {
			out[i] = time.Duration(rng.Float64() * float64(arrive))
		}
	}
	slices.Sort(out)
	return out
}

// sim is one run's state.
type sim struct {
	c     Config
	hc    *fasthttp.Client
	auth  *auth.Authority
	start time.Time
	seats []string
	r     *Report

	seqs       []atomic.Int64 // by user
	bySeq      []atomic.Int32 // user+1 by join sequence
	dispatched []atomic.Bool  // by user: handed to a buyer
	cursor     atomic.Int64   // every sequence up to it was looked at
	served     atomic.Int64   // the highest served seen in a progress document
	soldOut    atomic.Bool
	waiting    atomic.Int64
	joinsDone  atomic.Bool
	busy       atomic.Int64 // users handed to buyers and not finished
	exact      chan int
	cal        *calibration
}

// Run plays the on-sale and returns its report.
func Run(ctx context.Context, c Config) (*Report, error) {
	a, err := auth.New([]byte(c.Secret))
	if err != nil {
		return nil, fmt.Errorf("jwt secret: %w", err)
	}
	conns := c.Conns + c.Pollers + c.Buyers + 8
	s := &sim{c: c, auth: a, r: newReport(c),
		hc: &fasthttp.Client{MaxConnsPerHost: conns, ReadTimeout: 30 * time.Second, WriteTimeout: 10 * time.Second,
			MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true},
		seqs: make([]atomic.Int64, c.Users), bySeq: make([]atomic.Int32, c.Users+1),
		dispatched: make([]atomic.Bool, c.Users), exact: make(chan int, c.Users), cal: newCalibration(c.Users)}
	s.r.sim = s
	if c.Create {
		if err := s.createEvent(); err != nil {
			return nil, err
		}
	}
	if s.seats, err = s.seatIDs(); err != nil {
		return nil, err
	}
	sched := Schedule(c.Users, c.Arrive, c.Spike, c.Seed)
	before, _ := redisInfo(ctx, c.Redis)

	ctx, cancel := context.WithTimeout(ctx, c.Duration)
	defer cancel()
	s.start = time.Now()
	s.r.start = s.start
	var wg sync.WaitGroup
	var next atomic.Int64
	var joiners sync.WaitGroup
	var sockets atomic.Int64
	for range c.Conns {
		joiners.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= c.Users || ctx.Err() != nil {
					return
				}
				if d := time.Until(s.start.Add(sched[i])); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				if s.join(i) == "queued" && c.Notifier != "" && i%max(1, c.WSEvery) == 0 && sockets.Add(1) <= int64(c.WSSample) {
					wg.Go(func() { s.holdSocket(ctx, i) })
				}
			}
		})
	}
	go func() {
		joiners.Wait()
		s.r.mu.Lock()
		s.r.joinEnd = time.Now()
		s.r.mu.Unlock()
		s.joinsDone.Store(true)
	}()
	for range c.Pollers {
		wg.Go(func() { s.poll(ctx) })
	}
	wg.Go(func() { s.dispatch(ctx) })
	for w := range c.Buyers {
		wg.Go(func() { s.buy(ctx, rand.New(rand.NewPCG(c.Seed+1, uint64(w)))) })
	}
	// The sale is over when every user joined, nobody is being served,
	// and the queue is empty or sold out.
	for ctx.Err() == nil {
		if s.joinsDone.Load() && s.busy.Load() == 0 && len(s.exact) == 0 && s.served.Load() > 0 &&
			(s.soldOut.Load() || (s.waiting.Load() == 0 && s.cursor.Load() >= s.served.Load())) {
			s.r.Finished = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	joiners.Wait()
	wg.Wait()
	s.r.Elapsed = time.Since(s.start)
	after, _ := redisInfo(context.Background(), c.Redis)
	s.r.redis(before, after)
	s.r.Event, _ = s.eventCounts()
	return s.r, nil
}

func (s *sim) token(i int) string {
	t, _ := s.auth.Issue(s.user(i), "", 24*time.Hour)
	return t
}

func (s *sim) user(i int) string {
	return "onsale-" + strconv.FormatUint(s.c.Seed, 10) + "-" + strconv.Itoa(i)
}
