package booking

import (
	"context"
	"errors"
	"fmt"
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

// TestPipelineJoinsHook: a Store's JoinsHook sees every join that
// succeeded once, of its own event, with the answer its caller gets, and
// what it attaches is in that caller's JoinResult; a join that failed
// (an event that does not exist) is not given to it and its caller gets
// the error as without a hook. Concurrent joins share round trips, so
// the hook sees batches.
func TestPipelineJoinsHook(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "hooked", Capacity: 1})
	var mu sync.Mutex
	seen := map[string]int{}
	calls := 0
	f.s.OnJoins(func(eventID string, users []string, joins []*JoinResult) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if len(users) != len(joins) || len(joins) == 0 {
			t.Errorf("hook: %d users, %d joins", len(users), len(joins))
		}
		for i, j := range joins {
			if eventID != "hooked" {
				t.Errorf("hook: event %q", eventID)
			}
			seen[users[i]]++
			j.Attached = fmt.Sprintf("%s/%d/%s", users[i], j.Sequence, j.State)
		}
	})
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			user := fmt.Sprintf("u%d", i)
			r, err := f.s.Enqueue(f.ctx, "hooked", user)
			if err != nil {
				t.Errorf("join %s: %v", user, err)
				return
			}
			if want := fmt.Sprintf("%s/%d/%s", user, r.Sequence, r.State); r.Attached != want {
				t.Errorf("join %s: attached %v, want %s", user, r.Attached, want)
			}
			if _, err := f.s.Enqueue(f.ctx, "no-such-event", user); !errors.Is(err, ErrEventNotFound) {
				t.Errorf("join %s of no event: %v", user, err)
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("the hook saw %d users, want %d", len(seen), n)
	}
	for u, k := range seen {
		if k != 1 {
			t.Errorf("the hook saw %s %d times", u, k)
		}
	}
	t.Logf("%d joins in %d hook calls", n, calls)
	// without a hook, nothing is attached
	f.s.OnJoins(nil)
	if r := f.join("hooked", "after"); r.Attached != nil {
		t.Fatalf("attached without a hook: %v", r.Attached)
	}
}
