package booking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/testseed"
)

// batchOp is one join or position read of a round.
type batchOp struct {
	position    bool
	event, user string
	code        string // a join's access code digest ("": none)
	at          int64  // unix ms
}

// outcome is what one call answered.
type outcome struct {
	Join     JoinResult
	Position Status
	Err      string
}

// callTogether sends ops through one flush of the pipeliner, as the
// gateway's concurrent requests go (the joins, and the reads, of one event
// with the same limits become one batch call), and also returns the
// order in which they ran (groupCalls). set sets the clock.
func callTogether(t *testing.T, s *Store, set func(int64), ops []batchOp, limits func(string) []Limit) ([]outcome, []int) {
	t.Helper()
	batch := make([]*pcall, len(ops))
	for i, op := range ops {
		set(op.at)
		// (the pipeliner's flush, unlike Store.run, does not write the
		// test clock)
		if err := s.setTestClock(context.Background(), op.event); err != nil {
			t.Fatal(err)
		}
		c := &pcall{ctx: context.Background(), keys: s.eventKeySet(op.event), done: make(chan struct{}, 1)}
		var err error
		if op.position {
			c.sc = scriptGetPosition
			c.extra, c.args, err = s.positionArgs(op.event, op.user, limits(op.user))
		} else {
			c.sc = scriptEnqueue
			c.extra, c.args, err = s.enqueueArgs(op.event, op.user, op.code, limits(op.user))
		}
		if err != nil {
			t.Fatal(err)
		}
		batch[i] = c
	}
	var order []int
	index := map[*pcall]int{}
	for i, c := range batch {
		index[c] = i
	}
	for _, u := range groupCalls(batch) {
		for _, c := range u {
			order = append(order, index[c])
		}
	}
	(&pipeliner{rdb: s.rdb}).flush(batch, nil, nil)
	out := make([]outcome, len(ops))
	for i, c := range batch {
		<-c.done
		r, err := decodeReply(c.res, c.err)
		if ops[i].position {
			out[i].Position, err = positionStatus(r, err)
			var nf *NotFoundError
			if errors.As(err, &nf) {
				out[i].Position = nf.Status
			}
		} else {
			out[i].Join, err = joinResult(r, err, ops[i].user)
		}
		if err != nil {
			out[i].Err = err.Error()
		}
	}
	return out, order
}

// callOneByOne makes ops one call at a time, in order.
func callOneByOne(ctx context.Context, s *Store, set func(int64), ops []batchOp, order []int, limits func(string) []Limit) []outcome {
	out := make([]outcome, len(ops))
	for _, i := range order {
		op := ops[i]
		set(op.at)
		var err error
		if op.position {
			out[i].Position, err = s.Position(ctx, op.event, op.user, limits(op.user)...)
			var nf *NotFoundError
			if errors.As(err, &nf) {
				out[i].Position = nf.Status
			}
		} else if op.code != "" {
			out[i].Join, err = s.EnqueueCode(ctx, op.event, op.user, op.code, limits(op.user)...)
		} else {
			out[i].Join, err = s.Enqueue(ctx, op.event, op.user, limits(op.user)...)
		}
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

// persistLimitKeys takes the abuse-limit keys under prefix out of Redis's
// expiry, which runs on real time: the stores run on the test's clock,
// and one store writes a key some real time after the other, so on a
// slow machine a key of one store could expire before the same key of
// the other (and a later call, or the comparison, see it gone in one
// store only). expireLimitKeys expires them on the test's clock instead.
func persistLimitKeys(t *testing.T, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range rdb.Keys(ctx, prefix+"*:rl:*").Val() {
		if err := rdb.Persist(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// expireLimitKeys deletes the abuse-limit keys under prefix that Redis
// would have expired by now (unix ms, the test's clock): a key holds the
// time its bucket is full again, and the script sets it to expire then,
// rounded up to the ms (lua/lib/limits.lua limits_write: PX ceil(time -
// now) from a whole now).
func expireLimitKeys(t *testing.T, rdb redis.UniversalClient, prefix string, now int64) {
	t.Helper()
	ctx := context.Background()
	for _, k := range rdb.Keys(ctx, prefix+"*:rl:*").Val() {
		v, err := rdb.Get(ctx, k).Float64()
		if err != nil {
			t.Fatal(err)
		}
		if int64(math.Ceil(v)) <= now {
			if err := rdb.Del(ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPropertyBatchEqualsCallsInOrder: joins and position reads sent
// together (the pipeliner's enqueue_batch and get_position_batch) answer
// exactly what the same calls answer one at a time in the order they ran,
// and leave Redis exactly the same: two stores on one Redis, with the same
// events and the same clock, one calling one by one, the other sending a
// round's calls in one pipeline. The joins
// repeat users inside a round, meet the abuse limits (a shared IP's and
// each user's own), fill the room (immediate admissions), and between
// rounds users are promoted, cancel and join again; one event in two has
// abandonment on, one in two a rate cap, and one in three is pre-queued
// before its start; half the joins of the second come with an access
// code (used up, bound to another user, or unknown, too), and in every
// other round the second runs a registered presale for half the users
// while its general sale's own pre-queue opens and closes (a batch may
// be the call that closes it).
func TestPropertyBatchEqualsCallsInOrder(t *testing.T) {
	// what the rounds covered: each kind must have happened
	seen := map[string]int{}
	defer func() {
		for _, k := range []string{"placed", "repeated", "admitted", "rate limited", "waiting read", "not found read", "redeemed", "code refused",
			"phase prequeued"} {
			if seen[k] == 0 && !t.Failed() {
				t.Errorf("no %s call in any round: %v", k, seen)
			}
		}
	}()
	for round := range 6 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			rng := testseed.Rand(t)
			rdb := redistest.Client(t)
			ctx := context.Background()
			clk := newClock()
			clock := clk.Now
			base := redistest.Prefix(t)
			one := New(rdb, WithPrefix(base+"one"), WithClock(clock), WithAutoPipeline(0))
			many := New(rdb, WithPrefix(base+"many"), WithClock(clock), WithAutoPipeline(0))

			events := []string{"a", "b"}
			cfgs := map[string]EventConfig{}
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
				cfgs[id] = cfg
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
			key := []byte("batch test code key")
			var digests []string
			var codes []CodeRecord
			for i := range 4 {
				digests = append(digests, CodeDigest(key, "C"+strconv.Itoa(i)))
				codes = append(codes, CodeRecord{ID: int64(i + 1), Digest: digests[i], Uses: 1 + i%2})
			}
			codes = codes[:3] // the fourth is unknown
			for _, s := range []*Store{one, many} {
				if err := s.LoadCodes(ctx, "b", codes); err != nil {
					t.Fatal(err)
				}
			}
			phased := round%2 == 1
			if phased {
				// a presale for u0-u4 until 8 s from now, then the general
				// sale, whose pre-queue opens 6 s before it
				now := clock()
				cfg := cfgs["b"]
				sch := Schedule{Phases: []Phase{
					{ID: "presale", StartsAt: now.Add(-time.Hour), EndsAt: now.Add(8 * time.Second), Audience: AudienceRegistered},
					{ID: "general", StartsAt: now.Add(8 * time.Second), EndsAt: now.Add(time.Hour), Audience: AudiencePublic,
						EarlyJoinSeconds: intp(6)}}}
				for _, s := range []*Store{one, many} {
					if err := s.SetSchedule(ctx, cfg, sch, 0); err != nil {
						t.Fatal(err)
					}
					if err := s.MarkSelected(ctx, "b", []string{"u0", "u1", "u2", "u3", "u4"}); err != nil {
						t.Fatal(err)
					}
				}
				// the same draw seed on both
				seed := rdb.HMGet(ctx, one.eventKeys("b")[kConfig], "pq_seed:general", "pq_commit:general").Val()
				rdb.HSet(ctx, many.eventKeys("b")[kConfig], "pq_seed:general", seed[0], "pq_commit:general", seed[1])
			}
			applySchedules := func() {
				if !phased {
					return
				}
				for _, s := range []*Store{one, many} {
					if _, err := s.ApplySchedule(ctx, "b", true); err != nil {
						t.Fatal(err)
					}
				}
			}
			applySchedules()
			// (a limit key's expiry is the test's, on the test's clock:
			// persistLimitKeys, expireLimitKeys)
			limits := func(u string) []Limit {
				return []Limit{
					{Subject: "ip:" + strconv.Itoa(int(u[1]-'0')%2), Rate: 12, Period: 24 * time.Second},
					{Subject: UserSubject(u), Rate: 2, Period: 4 * time.Second},
				}
			}
			pool := 6 + rng.IntN(10)
			set := func(ms int64) { clk.Set(time.UnixMilli(ms)) }
			for step := range 12 {
				n := 2 + rng.IntN(14)
				ops := make([]batchOp, n)
				// calls that reach Redis together run at one time, the
				// batch call's (one clock read per call)
				t0 := clock().UnixMilli()
				for i := range ops {
					ops[i] = batchOp{position: rng.IntN(3) == 0, event: events[rng.IntN(len(events))],
						user: "u" + strconv.Itoa(rng.IntN(pool)), at: t0}
					if !ops[i].position && ops[i].event == "b" && rng.IntN(2) == 0 {
						ops[i].code = digests[rng.IntN(len(digests))]
					}
				}
				got, order := callTogether(t, many, set, ops, limits)
				persistLimitKeys(t, rdb, base+"many")
				want := callOneByOne(ctx, one, set, ops, order, limits)
				persistLimitKeys(t, rdb, base+"one")
				for i, o := range got {
					switch {
					case o.Join.Code != nil:
						seen["redeemed"]++
					case ops[i].code != "" && strings.Contains(o.Err, "access code"):
						seen["code refused"]++
					case strings.Contains(o.Err, "rate limited"):
						seen["rate limited"]++
					case ops[i].position && o.Position.State == StateWaiting:
						seen["waiting read"]++
					case ops[i].position && o.Err == ErrNotFound.Error():
						seen["not found read"]++
					case !ops[i].position && o.Join.Created && ops[i].event == "b" && !o.Join.PrequeuedUntil.IsZero():
						seen["phase prequeued"]++
					case !ops[i].position && o.Join.Created && o.Join.State == StateActive:
						seen["admitted"]++
					case !ops[i].position && o.Join.Created:
						seen["placed"]++
					case !ops[i].position && o.Err == "":
						seen["repeated"]++
					}
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("step %d, calls %+v in the order %v: one by one (-) and together (+) differ:\n%s", step, ops, order, d)
				}
				if d := cmp.Diff(keysUnder(t, rdb, base+"one"), keysUnder(t, rdb, base+"many")); d != "" {
					t.Fatalf("step %d: Redis after the calls one by one (-) and together (+) differs:\n%s", step, d)
				}

				// between rounds, on both alike: time passes, someone cancels, the room promotes
				clk.Advance(time.Duration(rng.IntN(2500)) * time.Millisecond)
				expireLimitKeys(t, rdb, base+"one", clock().UnixMilli())
				expireLimitKeys(t, rdb, base+"many", clock().UnixMilli())
				quitter := "u" + strconv.Itoa(rng.IntN(pool))
				if rng.IntN(2) == 0 {
					applySchedules()
				}
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

// TestJoinBatchGroupsByEventAndLimits: joins, and position reads, of
// different events or with different limits do not share a call; a join
// and a read never do; other calls stay where they were.
func TestJoinBatchGroupsByEventAndLimits(t *testing.T) {
	s := New(nil, WithPrefix("x"), WithAutoPipeline(0))
	call := func(sc *script, event string, limits ...Limit) *pcall {
		var lkeys []string
		var args []any
		var err error
		if sc == scriptEnqueue {
			lkeys, args, err = s.enqueueArgs(event, "u1", "", limits)
		} else {
			lkeys, args, err = s.positionArgs(event, "u1", limits)
		}
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
		call(scriptEnqueue, "a", ip), call(scriptEnqueue, "b"), call(scriptGetPosition, "a"),
		call(scriptGetPosition, "a", ip), call(scriptPromote, "a"),
	}
	var got [][]int
	for _, u := range groupCalls(batch) {
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
	want := [][]int{{0, 3}, {1, 8}, {2, 7}, {4, 6}, {5}, {9}, {10}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("units (-want +got):\n%s", d)
	}
}

// TestBatchFailingMidwayGivesNoSequenceTwice: a batch of joins that fails
// after some of its writes (here a presence key of the wrong type, so
// the presence write fails after the waiting entries were written) has
// already advanced the sequence counter, so a later join never gets a
// number a waiting user holds, and has written the join facts of the
// users it left waiting. (Redis does not undo a function's writes when it
// fails part way.)
func TestBatchFailingMidwayGivesNoSequenceTwice(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "e", Capacity: 1, Abandon: time.Minute})
	f.join("e", "first") // admitted: the room is full from now on
	seen := f.s.eventKeys("e")[kSeen]
	if err := f.rdb.Del(f.ctx, seen).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.Set(f.ctx, seen, "not a sorted set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	noLimits := func(string) []Limit { return nil }
	set := func(ms int64) { f.clock.Set(time.UnixMilli(ms)) }
	now := f.clock.Now().UnixMilli()
	ops := []batchOp{{event: "e", user: "a", at: now}, {event: "e", user: "b", at: now}, {event: "e", user: "c", at: now}}
	got, _ := callTogether(t, f.s, set, ops, noLimits)
	for i, o := range got {
		if !strings.Contains(o.Err, "WRONGTYPE") {
			t.Fatalf("join %d of a batch whose presence write fails: %+v", i, o)
		}
	}
	if err := f.rdb.Del(f.ctx, seen).Err(); err != nil {
		t.Fatal(err)
	}
	r := f.join("e", "d")
	held := map[int64]string{}
	for _, z := range f.rdb.ZRangeWithScores(f.ctx, f.s.eventKeys("e")[kWaiting], 0, -1).Val() {
		if u, ok := held[int64(z.Score)]; ok {
			t.Fatalf("sequence %d held by %s and %s (d joined with %d)", int64(z.Score), u, z.Member, r.Sequence)
		}
		held[int64(z.Score)] = z.Member.(string)
	}
	// and whoever the failed batch left waiting has its booking_request
	outbox := f.rdb.HGetAll(f.ctx, f.s.eventKeys("e")[kOutbox]).Val()
	for seq, u := range held {
		if _, ok := outbox["j:"+strconv.FormatInt(seq, 10)]; !ok {
			t.Errorf("%s waits with sequence %d and no join fact in the outbox", u, seq)
		}
	}
}
