package booking

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/redisfn"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestPipelineLoadsMissingLibrary: calls of a function Redis does not
// have (a restart or a new node lost the functions, or a process of
// another version deleted this version's library) fail with "Function not
// found" inside a pipeline and alone, and the pipeliner loads the library
// and answers every caller with its own reply. The library is deleted
// before each phase (other tests' calls meanwhile load it again the same
// way).
func TestPipelineLoadsMissingLibrary(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	ks := &keySet{keys: keysFor(redistest.Prefix(t), "nolib")}
	for _, k := range ks.keys {
		ks.args = append(ks.args, k)
	}
	drop := func() {
		t.Helper()
		if err := rdb.FunctionDelete(ctx, lua.LibraryName()).Err(); err != nil && !redisfn.IsNoLibrary(err) {
			t.Fatalf("FUNCTION DELETE: %v", err)
		}
	}
	for _, flushers := range []int{1, 4} {
		p := newPipeliner(rdb, flushers)
		// a lone call first, then concurrent ones that batch
		drop()
		if v, err := p.do(ctx, scriptCounts, ks, nil, []any{"1"}); err != nil || !isEventNotFound(v) {
			t.Fatalf("lone call: %v %v", v, err)
		}
		drop()
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				if v, err := p.do(ctx, scriptCounts, ks, nil, []any{"1"}); err != nil || !isEventNotFound(v) {
					t.Errorf("call %d: %v %v", i, v, err)
				}
			})
		}
		wg.Wait()
		p.close()
		// after close, calls still work, one round trip each
		drop()
		if v, err := p.do(ctx, scriptCounts, ks, nil, []any{"1"}); err != nil || !isEventNotFound(v) {
			t.Fatalf("after close: %v %v", v, err)
		}
	}
	if n, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lua.LibraryName()}).Result(); err != nil || len(n) != 1 {
		t.Fatalf("library %s after the calls: %v %v", lua.LibraryName(), n, err)
	}
}

func isEventNotFound(v any) bool {
	a, ok := v.([]any)
	return ok && len(a) == 1 && a[0] == "event_not_found"
}
