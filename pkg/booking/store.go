// Package booking is the booking engine: events and their seat maps, the
// waiting queue, the capacity-limited booking room, seat holds, payments
// and timeouts, all kept in Redis and changed only by the Lua scripts in
// lua/ (one per operation, each atomic). Store has one typed method per
// script; script reply codes become the sentinel errors in errors.go.
//
// Every key of one event carries the hash tag {eventID} (keys.go), so the
// scripts run unchanged on Redis Cluster. Time is Redis's: every script
// reads it there (TIME) and answers with it where Go needs it, so every
// process judges a hold, a limit or an age by the same clock, whatever
// its own says (docs/booking-engine.md "One clock"; tests move it with
// WithClock). docs/booking-engine.md describes the key layout, the state
// machine and each script's contract.
package booking

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/redisfn"
)

// The operations, functions of one library (lua.Library), loaded once per
// process (Load) and called with FCALL; a call that finds its function
// missing (a restart, a new cluster node) loads the library again.
var (
	scriptCreateEvent     = newScript("create_event")
	scriptUpdateEvent     = newScript("update_event")
	scriptEnqueue         = newScript("enqueue").batchedAs("enqueue_batch", 3)           // user, own, code
	scriptGetPosition     = newScript("get_position").batchedAs("get_position_batch", 1) // user
	scriptPromote         = newScript("promote")
	scriptLockSeat        = newScript("lock_seat")
	scriptInitiatePayment = newScript("initiate_payment")
	scriptPaymentSuccess  = newScript("payment_success")
	scriptPaymentFailure  = newScript("payment_failure")
	scriptHandleTimeout   = newScript("handle_timeout")
	scriptCancel          = newScript("cancel")
	scriptCounts          = newScript("counts")
	scriptAckOutbox       = newScript("ack_outbox")
	scriptTouch           = newScript("touch")
	scriptRateLimit       = newScript("rate_limit")
)

// Defaults for EventConfig fields left zero.
const (
	DefaultCapacity  = 1000
	DefaultHold      = 600 * time.Second
	DefaultGrace     = 120 * time.Second
	DefaultBatchSize = 500
	MaxSeats         = 200_000
)

// Store runs the booking scripts against one Redis (or Redis Cluster).
// It is safe for concurrent use. All booking state is in Redis; the Store
// itself keeps only a cache of key names and the auto-pipelining
// goroutines, which Close stops.
type Store struct {
	pipe   *pipeliner // nil: every call is its own round trip
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time
	// testNow: in a test binary, the clock this Store's scripts read
	// (WithClock; setTestClock); nil: Redis's
	testNow func() time.Time
	keys    sync.Map // event id → *keySet, so hot paths do not rebuild the keys per call
	cached  atomic.Int64

	flushers int
}

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the key prefix (default "bo"); tests use their own.
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// WithAutoPipeline sets how many pipelines of concurrent script calls may
// be in flight at once (default 2); 0 sends every call on its own. See
// pipeline.go: under load, batching the calls of concurrent requests into
// one round trip saves most of the client's and Redis's syscalls.
func WithAutoPipeline(flushers int) Option { return func(s *Store) { s.flushers = flushers } }

// WithClock sets the Store's clock, Now. The scripts read Redis's clock,
// never a process's, so in production it changes no booking decision. In
// a test binary (testing.Testing()) the scripts of this Store's calls read
// it too: before each call the Store writes now() as the event's test
// clock, which only a test binary's library reads (lua.ReadsTestClock,
// docs/booking-engine.md "One clock").
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		s.now, s.testNow = now, nil
		if lua.ReadsTestClock() {
			s.testNow = now
		}
	}
}

// WithProcessClock sets only the Store's process clock, Now, after
// WithClock: a test's store on a host whose clock is off, while its
// scripts read the clock WithClock gave (Redis's in production). Nothing
// the scripts decide depends on it.
func WithProcessClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns a Store over a go-redis client (*redis.Client,
// *redis.ClusterClient or a UniversalClient).
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: "bo", now: time.Now, flushers: 2}
	for _, o := range opts {
		o(s)
	}
	if s.flushers > 0 {
		s.pipe = newPipeliner(rdb, s.flushers)
	}
	return s
}

// Close stops the auto-pipelining goroutines. It does not close the Redis
// client. Calls after Close still work, one round trip each.
func (s *Store) Close() {
	if s.pipe != nil {
		s.pipe.close()
	}
}

// Prefix returns the key prefix.
func (s *Store) Prefix() string { return s.prefix }

// Now returns the Store's clock reading, the process's: what the scripts
// decided by is Redis's clock (the At of a reply, Clock).
func (s *Store) Now() time.Time { return s.now() }

// Clock returns the time the scripts of eventID read: Redis's clock (TIME
// on the master of the event's keys), or in a test binary the Store's test
// clock (WithClock).
func (s *Store) Clock(ctx context.Context, eventID string) (time.Time, error) {
	if s.testNow != nil {
		return s.testNow(), nil
	}
	var c redis.Cmdable = s.rdb
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, s.eventKeys(eventID)[kConfig])
		if err != nil {
			return time.Time{}, fmt.Errorf("redis: %w", err)
		}
		c = m
	}
	t, err := c.Time(ctx).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("redis: %w", err)
	}
	return t, nil
}

// setTestClock writes the Store's clock as the event's test clock, the
// time a test binary's library reads (lua/lua.go testClockSource), before
// a call of a Store given WithClock in a test binary.
func (s *Store) setTestClock(ctx context.Context, eventID string) error {
	key := s.prefix + ":{" + eventID + "}:clock"
	if err := s.rdb.Set(ctx, key, s.testNow().UnixMilli(), 0).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Load loads every script into Redis (every master on a cluster) so the
// first requests do not pay for EVAL. Optional: Run falls back anyway.
func (s *Store) Load(ctx context.Context) error {
	return redisfn.Load(ctx, s.rdb, true)
}

// run executes a script for an event and decodes its array reply. A Redis
// error is returned wrapped; a script's error code becomes its sentinel.
func (s *Store) run(ctx context.Context, sc *script, eventID string, args ...any) (reply, error) {
	return s.runLimited(ctx, sc, eventID, nil, args...)
}

// runLimited is run with more keys after the event's 19: the abuse-limit
// keys of limitKeys (KEYS[20..]).
func (s *Store) runLimited(ctx context.Context, sc *script, eventID string, extra []string, args ...any) (reply, error) {
	return decodeReply(s.runRaw(ctx, sc, eventID, extra, args))
}

// runRaw is runLimited's call, its result undecoded (a join's may be a
// *joinAnswer: pipeline.go answerJoins).
func (s *Store) runRaw(ctx context.Context, sc *script, eventID string, extra []string, args []any) (any, error) {
	if s.testNow != nil {
		if err := s.setTestClock(ctx, eventID); err != nil {
			return nil, err
		}
	}
	ks := s.eventKeySet(eventID)
	if s.pipe != nil {
		return s.pipe.do(ctx, sc, ks, extra, args)
	}
	return callScript(ctx, s.rdb, sc, ks, extra, args...)
}

// decodeReply turns a script call's result into its reply, and a reply's
// error code into its sentinel.
func decodeReply(v any, err error) (reply, error) {
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	r, err := asReply(v)
	if err != nil {
		return nil, err
	}
	return r, r.err()
}

// eventKeys returns keysFor(prefix, eventID), cached. Callers must not
// modify the slice. Only ids that passed ids.Valid reach here, and unknown
// events are cached too, which is bounded by what clients send: the cache
// is capped to avoid growing without limit on garbage ids.
func (s *Store) eventKeys(eventID string) []string { return s.eventKeySet(eventID).keys }

// keySet is an event's keys as strings and, boxed once, as the arguments
// of a command (a script call on the hot path then boxes only its own
// ARGV, not every key).
type keySet struct {
	event string
	keys  []string
	args  []any
}

func (s *Store) eventKeySet(eventID string) *keySet {
	if k, ok := s.keys.Load(eventID); ok {
		return k.(*keySet)
	}
	ks := &keySet{event: eventID, keys: keysFor(s.prefix, eventID)}
	ks.args = make([]any, len(ks.keys))
	for i, k := range ks.keys {
		ks.args[i] = k
	}
	if s.cached.Add(1) <= maxCachedEvents {
		s.keys.Store(eventID, ks)
	}
	return ks
}

const maxCachedEvents = 10_000
