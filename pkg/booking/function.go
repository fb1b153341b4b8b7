package booking

import (
	"context"
	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/redisfn"
)

// script is a booking operation: a function of the library lua.Library(),
// called with FCALL (pkg/redisfn).
type script struct {
	fn string // the name FCALL calls, lua.Function(op)
}

// newScript is the operation op, its file's name (e.g. "enqueue").
func newScript(op string) *script { return &script{fn: lua.Function(op)} }

// callScript runs sc on its own (not pipelined), loading the library
// again when the server lost it (redisfn.Call).
func callScript(ctx context.Context, rdb redis.UniversalClient, sc *script, keys []string, args ...any) (any, error) {
	return redisfn.Call(ctx, rdb, sc.fn, keys, args...).Result()
}
