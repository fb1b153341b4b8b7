package booking

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Limit is an abuse limit that a script checks in the same atomic step as
// the operation it guards, before the operation changes anything: at most
// Rate requests per Period for Subject, in bursts of up to Rate (GCRA,
// lua/lib/limits.lua `limited`). A request that a limit refuses changes nothing
// and is not counted; the call returns a *RateLimitedError.
//
// A limit's key is '<prefix>:{<event_id>}:rl:<Subject>', in the event's
// hash slot (Redis Cluster runs the check inside the event's script), so
// limits count per event: a user who polls two events has a budget in
// each. Every gateway instance shares them. A key expires as soon as its
// bucket is full again, so an idle subject costs nothing.
//
// Why in the script and not a library's limiter (go-redis/redis_rate):
// that is one more round trip and one more script per limit per request,
// which cost the gateway more than the join itself (docs/benchmarks.md,
// "The abuse limits inside the scripts").
type Limit struct {
	// Subject names what is limited, e.g. "u:alice" or "ip:198.51.100.7";
	// it must not contain '{' or '}' (the key's hash tag).
	Subject string
	// Rate is the requests allowed per Period (and the burst); 0 or less
	// turns the limit off.
	Rate   int
	Period time.Duration
}

// UserSubject is the Subject of user's own limit ("u:<user>"). Enqueue
// does not count the join that places a user in the queue against the
// limit of this subject (it would cost every arriving user a new key);
// every other request of the user counts.
func UserSubject(user string) string { return userSubjectPrefix + user }

const userSubjectPrefix = "u:"

// on reports whether the limit limits anything.
func (l Limit) on() bool { return l.Rate > 0 && l.Period > 0 }

// RateLimitedError is ErrRateLimited: a limit refused the request, which
// it would allow after RetryAfter.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%v; retry after %v", ErrRateLimited, e.RetryAfter)
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }

// ErrRateLimited: an abuse limit (Limit) refused the request.
var ErrRateLimited = errors.New("rate limited")

// limitArgs returns the keys of the limits that are on (nil when none
// is) and a script's ARGV: head, then each such limit's interval and
// burst. Joins and polls call it on every request, so it allocates the
// arguments once and takes each limit's two from limitPairs.
func (s *Store) limitArgs(eventID string, limits []Limit, head ...any) (keys []string, args []any, err error) {
	n := 0
	for _, l := range limits {
		if l.on() {
			n++
		}
	}
	args = make([]any, len(head), len(head)+2*n)
	copy(args, head)
	if n == 0 {
		return nil, args, nil
	}
	keys = make([]string, 0, n)
	for _, l := range limits {
		if !l.on() {
			continue
		}
		if l.Subject == "" || strings.ContainsAny(l.Subject, "{}") {
			return nil, nil, &IDError{ID: l.Subject}
		}
		keys = append(keys, s.limitKey(eventID, l.Subject))
		pair := limitPair(l)
		args = append(args, pair[0], pair[1])
	}
	return keys, args, nil
}

// ownLimit is the number, from 1, of user's own limit (UserSubject) among
// the limits that are on; 0 when none of them is the user's.
func ownLimit(limits []Limit, user string) int {
	i := 0
	for _, l := range limits {
		if !l.on() {
			continue
		}
		i++
		if sub, ok := strings.CutPrefix(l.Subject, userSubjectPrefix); ok && sub == user {
			return i
		}
	}
	return 0
}

// limitPairs caches a limit's two script arguments, the interval in ms
// (a decimal) and the burst, boxed, per rate and period: a deployment has
// a handful, and formatting the interval per request cost more than the
// rest of the arguments (BenchmarkLimitArgs). The map is never changed once published (a new
// pair publishes a copy), so a lookup is one atomic load, with no lock
// word for the gateway's cores to pass back and forth.
var limitPairs atomic.Pointer[map[limitRate][2]any]

type limitRate struct {
	rate   int
	period time.Duration
}

func limitPair(l Limit) [2]any {
	k := limitRate{l.Rate, l.Period}
	old := limitPairs.Load()
	if old != nil {
		if p, ok := (*old)[k]; ok {
			return p
		}
	}
	step := float64(l.Period) / float64(time.Millisecond) / float64(l.Rate)
	p := [2]any{strconv.FormatFloat(step, 'f', -1, 64), l.Rate}
	m := map[limitRate][2]any{k: p}
	if old != nil && len(*old) < 64 { // settings changed many times: start over
		maps.Copy(m, *old)
	}
	limitPairs.CompareAndSwap(old, &m) // lost to another: its map serves, this pair is formatted again
	return p
}

// limitKey is the key of subject's limit on eventID.
func (s *Store) limitKey(eventID, subject string) string {
	return s.prefix + ":{" + eventID + "}:rl:" + subject
}

// rateLimited turns a script's {'rate_limited', retry_after_ms} reply into
// its error.
func (r reply) rateLimited() error {
	var ms int64
	r.scan(&ms)
	return &RateLimitedError{RetryAfter: time.Duration(max(ms, 1)) * time.Millisecond}
}

// CheckLimits counts a request against limits on eventID, for requests
// whose operation's script does not check them itself. It returns a
// *RateLimitedError when a limit refuses, nil otherwise; an event that
// does not exist is not limited (the operation itself answers for it).
func (s *Store) CheckLimits(ctx context.Context, eventID string, limits ...Limit) error {
	if err := checkIDs(eventID); err != nil {
		return err
	}
	keys, args, err := s.limitArgs(eventID, limits)
	if err != nil || len(keys) == 0 {
		return err
	}
	_, err = s.runLimited(ctx, scriptRateLimit, eventID, keys, args...)
	if err != nil && !errors.Is(err, ErrRateLimited) {
		return fmt.Errorf("check limits: %w", err)
	}
	return err
}

// RetryAfterSeconds is a RateLimitedError's Retry-After header value:
// whole seconds, at least 1.
func (e *RateLimitedError) RetryAfterSeconds() int64 {
	return max(1, int64(math.Ceil(e.RetryAfter.Seconds())))
}
