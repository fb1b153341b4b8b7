package lua

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestLibraryLoads: Redis accepts the library and it registers one
// function per operation, under the names Function gives (the booking
// operations and the counters of pkg/popularity and pkg/report), and none
// for lib.lua.
func TestLibraryLoads(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	if err := rdb.FunctionLoadReplace(ctx, Library()).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v", err)
	}
	libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: LibraryName()}).Result()
	if err != nil || len(libs) != 1 {
		t.Fatalf("FUNCTION LIST %s: %v %v", LibraryName(), libs, err)
	}
	var got, want []string
	for _, f := range libs[0].Functions {
		got = append(got, f.Name)
	}
	for _, op := range Operations() {
		want = append(want, Function(op))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(want) < 18 {
		t.Errorf("functions %v, want %v", got, want)
	}
	for _, op := range []string{"enqueue", "get_position", "promote", "restore_event", "seat_status", "popularity_count", "report_count"} {
		if !slices.Contains(Operations(), op) {
			t.Errorf("operation %s missing", op)
		}
	}
	if slices.Contains(Operations(), "lib") {
		t.Errorf("lib is not an operation")
	}
	if !strings.HasPrefix(Function("enqueue"), "enqueue_") || !strings.HasSuffix(LibraryName(), strings.TrimPrefix(Function("enqueue"), "enqueue_")) {
		t.Errorf("function %s and library %s do not share a version", Function("enqueue"), LibraryName())
	}
}
