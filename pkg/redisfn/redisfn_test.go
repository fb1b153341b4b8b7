package redisfn_test

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/redisfn"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestCallLoadsMissingLibrary: a call that finds the library gone (a
// Redis restart, a process of another version pruned it) loads it and
// runs; the function then works as its script says (popularity_count:
// 1 counted, 0 the same message again).
func TestCallLoadsMissingLibrary(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	p := redistest.Prefix(t)
	keys := []string{p + ":{popular}:ranking", p + ":{popular}:seen:m1"}
	for i, want := range []int64{1, 0} {
		if err := rdb.FunctionDelete(ctx, lua.LibraryName()).Err(); err != nil && !redisfn.IsNoLibrary(err) {
			t.Fatal(err)
		}
		n, err := redisfn.Call(ctx, rdb, lua.Function("popularity_count"), keys, "concert-1", 60, 2).Int64()
		if err != nil || n != want {
			t.Fatalf("call %d: %v %v, want %d", i, n, err, want)
		}
	}
	if s, err := rdb.ZScore(ctx, keys[0], "concert-1").Result(); err != nil || s != 2 {
		t.Errorf("score %v %v, want 2 (counted once, two seats)", s, err)
	}
	if err := redisfn.Call(ctx, rdb, "no_such_function", nil).Err(); !redisfn.IsNoFunction(err) {
		t.Errorf("unknown function: %v, want Function not found", err)
	}
}
