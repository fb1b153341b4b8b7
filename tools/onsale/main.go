// Command onsale plays an on-sale against a running boxoffice stack on
// loopback, from a seeded schedule: users arrive along a curve (a spike at
// the sale's start, then a tail), join the queue, wait by polling the
// event's progress document (a sample holds a notifier WebSocket instead),
// are admitted, pick seats, and pay through the payment sandbox or
// abandon. The run is bounded in time and prints a report: joins/s,
// admissions/s, p50/p99 of the join, progress, exact position and
// your_turn, Redis ops/s and CPU (INFO), and the errors.
//
// Against a running stack (make run):
//
//	go run ./onsale -users 20000 -secret "$JWT_SECRET"
//
// `make bench-onsale` starts its own stack (pkg/stacktest) and plays
// 1,000,000 users (BenchmarkOnsale); `make test` plays a few hundred
// (TestOnsaleSmoke) and checks that the report adds up.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"
)

func main() {
	c := DefaultConfig()
	flag.StringVar(&c.Gateway, "gateway", "http://127.0.0.1:8080", "gateway base URL")
	flag.StringVar(&c.Notifier, "ws", "ws://127.0.0.1:8082/ws", "notifier WebSocket URL (\"\": no WebSocket sample)")
	flag.StringVar(&c.Redis, "redis", "127.0.0.1:6379", "Redis address, for INFO (\"\": none)")
	flag.StringVar(&c.Secret, "secret", os.Getenv("JWT_SECRET"), "the stack's JWT_SECRET (user and admin tokens are minted with it)")
	flag.StringVar(&c.EventID, "event", "", "event id (default onsale-<seed>-<time>, created with -rows, -per-row, -capacity, -hold)")
	flag.BoolVar(&c.Create, "create", true, "create the event")
	flag.IntVar(&c.Rows, "rows", c.Rows, "rows of the created event")
	flag.IntVar(&c.PerRow, "per-row", c.PerRow, "seats per row of the created event")
	flag.IntVar(&c.Capacity, "capacity", c.Capacity, "booking room capacity of the created event")
	flag.DurationVar(&c.Hold, "hold", c.Hold, "hold of the created event")
	flag.IntVar(&c.Users, "users", c.Users, "users who arrive")
	flag.Uint64Var(&c.Seed, "seed", c.Seed, "schedule seed")
	flag.DurationVar(&c.Arrive, "arrive", c.Arrive, "arrival window")
	flag.Float64Var(&c.Spike, "spike", c.Spike, "share of the users arriving in the spike at the start")
	flag.DurationVar(&c.Duration, "duration", c.Duration, "bound on the whole run")
	flag.IntVar(&c.Conns, "conns", c.Conns, "concurrent joins")
	flag.IntVar(&c.Pollers, "pollers", c.Pollers, "concurrent progress pollers (the waiting crowd's polls, sampled)")
	flag.DurationVar(&c.PollEvery, "poll-every", c.PollEvery, "each poller's interval")
	flag.IntVar(&c.WSSample, "ws-sample", c.WSSample, "queued users who hold a WebSocket")
	flag.IntVar(&c.WSEvery, "ws-every", c.WSEvery, "every how many users one of the WebSocket sample is")
	flag.IntVar(&c.Buyers, "buyers", c.Buyers, "admitted users served at once")
	flag.Float64Var(&c.PayShare, "pay", c.PayShare, "share of the admitted users who pay (the others abandon)")
	flag.DurationVar(&c.Think, "think", c.Think, "an admitted user's time to pick a seat and pay (up to)")
	flag.BoolVar(&c.FreeSeats, "free-seats", c.FreeSeats, "a buyer whose seat was taken picks among the seat map's available seats")
	flag.Parse()
	if c.EventID == "" {
		c.EventID = fmt.Sprintf("onsale-%d-%d", c.Seed, time.Now().Unix())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := Run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "onsale:", err)
		os.Exit(1)
	}
	r.Print(os.Stdout)
}
