package redisfn

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Counter adds messages to a tally kept by a counting function of the
// library (popularity_count, report_count): the function counts a message
// unless it counted the message's id within the seen TTL, and replies 1
// when it counted, 0 when it had before. The tally's owner says how a
// message becomes the function's keys and arguments (Args).
type Counter[M any] struct {
	rdb     redis.Cmdable
	fn      string
	seenTTL time.Duration
	args    func(m M, seenTTL int64) (keys []string, args []any, err error)
}

// NewCounter returns a counter calling fn (lua.Function) on rdb. args
// turns a message into the function's KEYS and ARGV, given the seen TTL
// in whole seconds (at least 1); its error is returned by Count as it is,
// nothing called.
func NewCounter[M any](rdb redis.Cmdable, fn string, seenTTL time.Duration,
	args func(m M, seenTTL int64) (keys []string, args []any, err error)) *Counter[M] {
	return &Counter[M]{rdb: rdb, fn: fn, seenTTL: seenTTL, args: args}
}

// Count adds m to the tally unless it was counted before; it reports
// whether it counted.
func (c *Counter[M]) Count(ctx context.Context, m M) (bool, error) {
	keys, args, err := c.args(m, max(int64(c.seenTTL/time.Second), 1))
	if err != nil {
		return false, err
	}
	n, err := Call(ctx, c.rdb, c.fn, keys, args...).Int64()
	if err != nil {
		return false, fmt.Errorf("count with %s: %w", c.fn, err)
	}
	return n == 1, nil
}
