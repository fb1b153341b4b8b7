// Package redisfn runs the functions of the Lua library (lua.Library: the
// booking operations and the counters of pkg/popularity and pkg/report)
// on Redis: it loads the library, calls a function with FCALL, and loads
// the library again when a call finds its function gone. It is the one
// way the project runs Lua on Redis.
package redisfn

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice/lua"
)

// Load loads the function library into Redis (every master of a cluster),
// replacing a library of the same name. With prune (a process's start,
// booking.Store.Load) it also deletes the libraries of other versions
// (other lua.LibraryPrefix names): a process still running another
// version finds its functions gone and loads its own library again,
// without prune (Call), so versions in use are deleted only once per
// process start and do not take turns deleting each other.
func Load(ctx context.Context, rdb redis.Cmdable, prune bool) error {
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
				if err := c.FunctionDelete(ctx, l.Name).Err(); err != nil && !IsNoLibrary(err) {
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

// Call runs the function fn (lua.Function) with FCALL on its own (not
// pipelined). When the server does not have the function (a restart, a
// new cluster node, a process of another version deleted the library) it
// loads the library (Reload) and calls again.
func Call(ctx context.Context, rdb redis.Cmdable, fn string, keys []string, args ...any) *redis.Cmd {
	cmd := rdb.FCall(ctx, fn, keys, args...)
	if IsNoFunction(cmd.Err()) {
		if err := Reload(ctx, rdb); err != nil {
			return redis.NewCmdResult(nil, err)
		}
		cmd = rdb.FCall(ctx, fn, keys, args...)
	}
	return cmd
}

// reloads coalesces the loads of callers on one client that found the
// library gone at the same moment (after a Redis restart every caller
// does): one FUNCTION LOAD (about 2 ms of Redis, which runs nothing else
// meanwhile) for all of them, not one each.
var reloads singleflight.Group

// Reload loads the library without pruning (Load), once for all the
// callers on rdb that ask at the same time.
func Reload(ctx context.Context, rdb redis.Cmdable) error {
	_, err, _ := reloads.Do(fmt.Sprintf("%p", rdb), func() (any, error) { return nil, Load(ctx, rdb, false) })
	return err
}

// IsNoFunction reports the error of an FCALL whose function the server
// does not have.
func IsNoFunction(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "ERR Function not found")
}

// IsNoLibrary reports the error of a FUNCTION DELETE of a library the
// server does not have.
func IsNoLibrary(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "ERR Library not found")
}
