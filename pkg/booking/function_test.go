package booking

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestLoadKeepsOnlyVersionsInUse, on a cluster of its own (three masters,
// so nothing else loads or deletes libraries there): Load puts the
// library on every master and deletes another version's; a call that
// finds the library gone loads it again and deletes nothing, so a process
// of another version that is still running keeps its functions.
func TestLoadKeepsOnlyVersionsInUse(t *testing.T) {
	r := redistest.StartReplicated(t, 3)
	ctx := context.Background()
	const old = "#!lua name=boxoffice_0ld\nredis.register_function('x_0ld', function() return 1 end)"
	libsOnMasters := func() [][]string {
		t.Helper()
		var out [][]string
		err := r.Client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			libs, err := m.FunctionList(ctx, redis.FunctionListQuery{}).Result()
			var names []string
			for _, l := range libs {
				names = append(names, l.Name)
			}
			slices.Sort(names)
			out = append(out, names)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	onEveryMaster := func(f func(m *redis.Client) error) {
		t.Helper()
		if err := r.Client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return f(m) }); err != nil {
			t.Fatal(err)
		}
	}
	onEveryMaster(func(m *redis.Client) error { return m.FunctionLoad(ctx, old).Err() })

	s := New(r.Client, WithPrefix(redistest.Prefix(t)))
	t.Cleanup(s.Close)
	if err := s.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for i, names := range libsOnMasters() {
		if !slices.Equal(names, []string{lua.LibraryName()}) {
			t.Errorf("master %d after Load: libraries %v, want only %s", i, names, lua.LibraryName())
		}
	}

	// another version starts (its Load deleted ours) while we run
	onEveryMaster(func(m *redis.Client) error {
		if err := m.FunctionLoad(ctx, old).Err(); err != nil {
			return err
		}
		return m.FunctionDelete(ctx, lua.LibraryName()).Err()
	})
	if _, err := s.GetEvent(ctx, "no-such-event"); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("GetEvent after the library was deleted: %v, want ErrEventNotFound", err)
	}
	for i, names := range libsOnMasters() {
		if !slices.Contains(names, "boxoffice_0ld") {
			t.Errorf("master %d: the other version's library was deleted by a call: %v", i, names)
		}
	}
	m, err := r.Client.MasterForKey(ctx, keysFor(s.prefix, "no-such-event")[kConfig])
	if err != nil {
		t.Fatal(err)
	}
	if libs, err := m.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lua.LibraryName()}).Result(); err != nil || len(libs) != 1 {
		t.Errorf("the event's master lacks %s after the call: %v %v", lua.LibraryName(), libs, err)
	}
}
