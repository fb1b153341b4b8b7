package booking

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice/lua"
)

// script is a booking operation: a function of the library lua.Library(),
// called with FCALL.
type script struct {
	fn string // the name FCALL calls, lua.Function(op)
}

// newScript is the operation op, its file's name (e.g. "enqueue").
func newScript(op string) *script { return &script{fn: lua.Function(op)} }

// loadLibrary loads the function library into Redis (every master of a
// cluster), replacing a library of the same name. With prune (a process's
// start, Store.Load) it also deletes the libraries of other versions
// (other lua.LibraryPrefix names): a process still running another version finds its
// functions gone and loads its own library again, without prune
// (callScript), so versions in use are deleted only once per process
// start and do not take turns deleting each other.
func loadLibrary(ctx context.Context, rdb redis.UniversalClient, prune bool) error {
	load := func(ctx context.Context, c redis.Cmdable) error {
		if err := c.FunctionLoadReplace(ctx, lua.Library()).Err(); err != nil {
			return fmt.Errorf("load the function library: %w", err)
		}
		if !prune {
			return nil
		}
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lua.LibraryPrefix + "*"}).Result()
		if err != nil {
			return fmt.Errorf("list function libraries: %w", err)
		}
		for _, l := range libs {
			if l.Name != lua.LibraryName() {
				// another process may have deleted it first
				if err := c.FunctionDelete(ctx, l.Name).Err(); err != nil && !isNoLibrary(err) {
					return fmt.Errorf("delete function library %s: %w", l.Name, err)
				}
			}
		}
		return nil
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return load(ctx, m) })
	}
	return load(ctx, rdb)
}

// callScript runs sc with FCALL on its own (not pipelined). When the
// server does not have the function (a restart, a new cluster node, a
// process of another version deleted the library) it loads the library
// and calls again.
func callScript(ctx context.Context, rdb redis.UniversalClient, sc *script, keys []string, args ...any) (any, error) {
	v, err := rdb.FCall(ctx, sc.fn, keys, args...).Result()
	if isNoFunction(err) {
		if err := reloadLibrary(ctx, rdb); err != nil {
			return nil, err
		}
		v, err = rdb.FCall(ctx, sc.fn, keys, args...).Result()
	}
	return v, err
}

// reloads coalesces the loads of callers that found the library gone at
// the same moment (after a Redis restart every caller does): one
// FUNCTION LOAD (about 2 ms of Redis, which runs nothing else meanwhile)
// for all of them, not one each.
var reloads singleflight.Group

func reloadLibrary(ctx context.Context, rdb redis.UniversalClient) error {
	_, err, _ := reloads.Do("", func() (any, error) { return nil, loadLibrary(ctx, rdb, false) })
	return err
}

// isNoFunction reports the error of an FCALL whose function the server
// does not have.
func isNoFunction(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "ERR Function not found")
}

// isNoLibrary reports the error of a FUNCTION DELETE of a library the
// server does not have.
func isNoLibrary(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "ERR Library not found")
}
