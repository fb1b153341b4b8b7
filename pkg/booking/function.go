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
	fn   string // the name FCALL calls, lua.Function(op)
	keys []int  // the event keys it takes, indexes into keysFor's (declared in lua/ops.go)
	// batch, when set, takes many calls of this script for one event in
	// one call (pipeline.go groupCalls); head is how many of a call's
	// args come before its limits' intervals and bursts.
	batch *script
	head  int
}

// batchedAs sets sc's batch variant, the operation op, and the number of
// sc's own args before the limits' (head).
func (sc *script) batchedAs(op string, head int) *script {
	sc.batch, sc.head = newScript(op), head
	return sc
}

// newScript is the operation op, its file's name (e.g. "enqueue").
func newScript(op string) *script {
	idx, ok := lua.FunctionKeys(op)
	if !ok {
		panic("booking: " + op + " takes no event keys")
	}
	return &script{fn: lua.Function(op), keys: idx}
}

// keysOf is sc's KEYS for the event of ks: the event keys it takes, then
// extra (the abuse limits').
func (sc *script) keysOf(ks *keySet, extra []string) []string {
	out := make([]string, 0, len(sc.keys)+len(extra))
	for _, i := range sc.keys {
		out = append(out, ks.keys[i])
	}
	return append(out, extra...)
}

// callScript runs sc on its own (not pipelined), loading the library
// again when the server lost it (redisfn.Call).
func callScript(ctx context.Context, rdb redis.UniversalClient, sc *script, ks *keySet, extra []string, args ...any) (any, error) {
	return redisfn.Call(ctx, rdb, sc.fn, sc.keysOf(ks, extra), args...).Result()
}
