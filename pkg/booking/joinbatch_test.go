package booking

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/testseed"
)

// joinOutcome is what one join answered.
type joinOutcome struct {
	Res JoinResult
	Err string
}

// joinTogether sends joins through one flush of the pipeliner, as
// concurrent joins of the gateway go: the joins of one event with the same
// limits become one enqueue_batch call. at[i] is when join i was made.
func joinTogether(t *testing.T, s *Store, at func(int), events, users []string, limits func(string) []Limit) []joinOutcome {
	t.Helper()
	batch := make([]*pcall, len(users))
	nows := make([]int64, len(users))
	for i, u := range users {
		at(i)
		lkeys, args, now, err := s.enqueueArgs(events[i], u, limits(u))
		if err != nil {
			t.Fatal(err)
		}
		nows[i] = now
		batch[i] = &pcall{ctx: context.Background(), sc: scriptEnqueue, keys: s.eventKeySet(events[i]),
			extra: lkeys, args: args, done: make(chan struct{}, 1)}
	}
	distinct := map[string]bool{}
	for _, e := range events {
		distinct[e] = true
	}
	if n := len(groupJoins(batch)); n != len(distinct) {
		t.Fatalf("%d joins of %d events went out as %d calls", len(users), len(distinct), n)
	}
	(&pipeliner{rdb: s.rdb}).flush(batch, nil)
	out := make([]joinOutcome, len(users))
	for i, c := range batch {
		<-c.done
		r, err := decodeReply(c.res, c.err)
		res, err := joinResult(r, err, users[i], nows[i])
		out[i] = joinOutcome{Res: res}
		if err != nil {
			out[i].Err = err.Error()
		}
	}
	return out
}

// keysUnder returns every key under prefix (with the prefix cut off) and
// its value: hashes and sorted sets whole, strings as they are.
func keysUnder(t *testing.T, rdb redis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		var v any
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			v = rdb.Get(ctx, k).Val()
		case "hash":
			v = rdb.HGetAll(ctx, k).Val()
		case "zset":
			v = rdb.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "list":
			v = rdb.LRange(ctx, k, 0, -1).Val()
		default:
			v = typ
		}
		out[strings.TrimPrefix(k, prefix)] = fmt.Sprint(v)
	}
	return out
}

// TestPropertyJoinBatchEqualsJoinsInOrder: joins sent together (the
// pipeliner's enqueue_batch) answer exactly what the same joins answer
// one call at a time in the same order, and leave Redis exactly the same:
// two stores on one Redis, with the same events and the same clock, one
// joining call by call, the other a round's joins at once. The joins
// repeat users inside a round, meet the abuse limits (a shared IP's and
// each user's own), fill the room (immediate admissions), and between
// rounds users are promoted, cancel and join again; one event in two has
// abandonment on, one in two a rate cap, and one in three is pre-queued
// before its start.
func TestPropertyJoinBatchEqualsJoinsInOrder(t *testing.T) {
	for round := range 6 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			rng := testseed.Rand(t)
			rdb := redistest.Client(t)
			ctx := context.Background()
			clk := newClock()
			clock := clk.Now
			setMS := func(ms int64) { clk.Set(time.UnixMilli(ms)) }
			base := redistest.Prefix(t)
			one := New(rdb, WithPrefix(base+"one"), WithClock(clock), WithAutoPipeline(0))
			many := New(rdb, WithPrefix(base+"many"), WithClock(clock), WithAutoPipeline(0))

			events := []string{"a", "b"}
			for i, id := range events {
				cfg := EventConfig{ID: id, Rows: 2, SeatsPerRow: 5, Capacity: 1 + rng.IntN(4), Hold: 5 * time.Second}
				if rng.IntN(2) == 0 {
					cfg.Abandon = 30 * time.Second
				}
				if rng.IntN(2) == 0 {
					cfg.AdmitPerMinute = 1 + rng.IntN(5)
				}
				if i == 0 && rng.IntN(3) == 0 {
					cfg.SalesStart = clock().Add(3 * time.Second)
					cfg.EarlyJoin = time.Minute
				}
				for _, s := range []*Store{one, many} {
					if _, err := s.CreateEvent(ctx, cfg); err != nil {
						t.Fatal(err)
					}
				}
				// the same draw, so both pre-queues order alike
				cfgKey := func(s *Store) string { return s.eventKeys(id)[kConfig] }
				draw := rdb.HMGet(ctx, cfgKey(one), "draw_seed", "draw_commit").Val()
				if draw[0] != nil {
					rdb.HSet(ctx, cfgKey(many), "draw_seed", draw[0], "draw_commit", draw[1])
				}
			}
			limits := func(u string) []Limit {
				return []Limit{
					{Subject: "ip:" + strconv.Itoa(int(u[1]-'0')%2), Rate: 12, Period: time.Second},
					{Subject: UserSubject(u), Rate: 2, Period: time.Second},
				}
			}
			pool := 6 + rng.IntN(10)
			for step := range 12 {
				n := 2 + rng.IntN(14)
				users, evs := make([]string, n), make([]string, n)
				at := make([]int64, n)
				t0 := clock().UnixMilli()
				for i := range n {
					users[i] = "u" + strconv.Itoa(rng.IntN(pool))
					evs[i] = events[rng.IntN(len(events))]
					at[i] = t0 + int64(i)*int64(rng.IntN(40))
				}
				want := make([]joinOutcome, n)
				for i := range n {
					setMS(at[i])
					res, err := one.Enqueue(ctx, evs[i], users[i], limits(users[i])...)
					want[i] = joinOutcome{Res: res}
					if err != nil {
						want[i].Err = err.Error()
					}
				}
				got := joinTogether(t, many, func(i int) { setMS(at[i]) }, evs, users, limits)
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("step %d, joins %v of %v: one by one (-) and together (+) differ:\n%s", step, users, evs, d)
				}
				if d := cmp.Diff(keysUnder(t, rdb, base+"one"), keysUnder(t, rdb, base+"many")); d != "" {
					t.Fatalf("step %d: Redis after the joins one by one (-) and together (+) differs:\n%s", step, d)
				}

				// between rounds, on both alike: time passes, someone cancels, the room promotes
				clk.Advance(time.Duration(rng.IntN(2500)) * time.Millisecond)
				quitter := "u" + strconv.Itoa(rng.IntN(pool))
				for _, s := range []*Store{one, many} {
					for _, e := range events {
						_, _ = s.Cancel(ctx, e, quitter)
						if _, err := s.Promote(ctx, e, 0); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			f := &fixture{t: t, ctx: ctx, rdb: rdb, clock: clk, s: many}
			for _, e := range events {
				f.checkInvariants(e)
			}
		})
	}
}

// TestJoinBatchGroupsByEventAndLimits: joins of different events, or with
// different limits, do not share a call; other calls stay where they were.
func TestJoinBatchGroupsByEventAndLimits(t *testing.T) {
	s := New(nil, WithPrefix("x"), WithAutoPipeline(0))
	call := func(sc *script, event string, limits ...Limit) *pcall {
		lkeys, args, _, err := s.enqueueArgs(event, "u1", limits)
		if err != nil {
			t.Fatal(err)
		}
		return &pcall{sc: sc, keys: s.eventKeySet(event), extra: lkeys, args: args}
	}
	ip := Limit{Subject: "ip:1", Rate: 10, Period: time.Second}
	slower := Limit{Subject: "ip:1", Rate: 5, Period: time.Second}
	batch := []*pcall{
		call(scriptEnqueue, "a"), call(scriptGetPosition, "a"), call(scriptEnqueue, "b"),
		call(scriptEnqueue, "a"), call(scriptEnqueue, "a", ip), call(scriptEnqueue, "a", slower),
		call(scriptEnqueue, "a", ip), call(scriptEnqueue, "b"),
	}
	var got [][]int
	for _, u := range groupJoins(batch) {
		var idx []int
		for _, c := range u {
			for i, b := range batch {
				if b == c {
					idx = append(idx, i)
				}
			}
		}
		got = append(got, idx)
	}
	want := [][]int{{0, 3}, {1}, {2, 7}, {4, 6}, {5}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("units (-want +got):\n%s", d)
	}
}
