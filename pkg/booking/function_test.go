package booking

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

	// Redis lost the library (a restart) under many concurrent callers,
	// pipelined and not: they load it a handful of times, not once each.
	for _, flushers := range []int{0, 4} {
		p := New(r.Client, WithPrefix(redistest.Prefix(t)), WithAutoPipeline(flushers))
		onEveryMaster(func(m *redis.Client) error {
			if err := m.FunctionDelete(ctx, lua.LibraryName()).Err(); err != nil {
				return err
			}
			return m.ConfigResetStat(ctx).Err()
		})
		// every master busy for 300 ms (a script), so the 300 calls all
		// reach Redis while its library is gone, as after a restart
		var wg sync.WaitGroup
		busy := make(chan struct{})
		onEveryMaster(func(m *redis.Client) error {
			wg.Go(func() {
				busy <- struct{}{}
				_ = m.Eval(ctx, `local s = redis.call('TIME')
repeat local n = redis.call('TIME') until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 300000`, nil).Err()
			})
			<-busy
			return nil
		})
		time.Sleep(50 * time.Millisecond)
		for i := range 300 {
			wg.Go(func() {
				if _, err := p.GetEvent(ctx, "herd-"+strconv.Itoa(i%30)); !errors.Is(err, ErrEventNotFound) {
					t.Errorf("flushers %d, call %d: %v", flushers, i, err)
				}
			})
		}
		wg.Wait()
		p.Close()
		onEveryMaster(func(m *redis.Client) error {
			stats, err := m.Info(ctx, "commandstats").Result()
			loads := 0
			if i := strings.Index(stats, "cmdstat_function|load:calls="); i >= 0 {
				loads, _ = strconv.Atoi(strings.SplitN(stats[i+len("cmdstat_function|load:calls="):], ",", 2)[0])
			}
			if loads < 1 || loads > 10 {
				t.Errorf("flushers %d: %s loaded the library %d times for 300 callers, want 1 to 10", flushers, m.Options().Addr, loads)
			}
			return err
		})
	}
}
