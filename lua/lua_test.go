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
// for lib/'s files.
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

// TestFunctionKeys: a booking function takes the event keys ops.go
// declares for it, in EventKey order (a join: 16 of the 25); the counters
// take keys of their own.
func TestFunctionKeys(t *testing.T) {
	names := EventKeyNames()
	if len(names) != 26 || names[Config] != "config" || names[Runs] != "runs" || names[Offers] != "offers" {
		t.Fatalf("event keys %v", names)
	}
	byName := func(idx []int) string {
		var out []string
		for _, i := range idx {
			out = append(out, names[i])
		}
		return strings.Join(out, ",")
	}
	for op, want := range map[string]string{
		"enqueue":      "config,waiting,active,seq,seen,outbox,rate,state,useq,useat,upay,ugrace,alog,codes,pq,pqdraw",
		"get_position": "config,waiting,active,seen,rate,state,useq,useat,upay,pq",
		"rate_limit":   "config",
		"ack_outbox":   "outbox",
	} {
		idx, ok := FunctionKeys(op)
		if got := byName(idx); !ok || got != want {
			t.Errorf("%s: keys %s (%v), want %s", op, got, ok, want)
		}
	}
	for _, op := range []string{"popularity_count", "report_count"} {
		if _, ok := FunctionKeys(op); ok {
			t.Errorf("%s takes event keys", op)
		}
	}
	for _, op := range Operations() {
		if idx, ok := FunctionKeys(op); ok && (len(idx) == 0 || !slices.IsSorted(idx)) {
			t.Errorf("%s: keys %v, want some, in order", op, idx)
		}
	}
}
