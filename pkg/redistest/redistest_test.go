package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/redis/go-redis/v9"
)

// countKeys counts keys under prefix, on every master of a cluster.
func countKeys(t *testing.T, rdb redis.UniversalClient, prefix string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	count := func(ctx context.Context, c redis.Cmdable) error {
		keys, err := c.Keys(ctx, prefix+"*").Result()
		n += len(keys)
		return err
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return count(ctx, node) })
	} else {
		err = count(ctx, rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writeKeys(t *testing.T, rdb redis.UniversalClient, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if err := rdb.Set(ctx, fmt.Sprintf("%s{k%d}:v", prefix, i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPrefixFormat(t *testing.T) {
	a, b := Prefix(t), Prefix(t)
	if a == b {
		t.Fatalf("two prefixes are equal: %q", a)
	}
	if !regexp.MustCompile(`^t:[0-9a-f]{8}:$`).MatchString(a) {
		t.Fatalf("prefix %q", a)
	}
}

func TestClientCleansItsPrefix(t *testing.T) {
	outer := Client(t)
	if _, ok := outer.(*redis.Client); !ok {
		t.Fatalf("Client is %T, want *redis.Client", outer)
	}
	other := Prefix(t) // survives the subtest
	writeKeys(t, outer, other, 3)

	var inner string
	t.Run("writes", func(t *testing.T) {
		rdb := Client(t)
		inner = Prefix(t)
		writeKeys(t, rdb, inner, 1200) // more than one SCAN page and UNLINK batch
		if n := countKeys(t, rdb, inner); n != 1200 {
			t.Fatalf("%d keys written", n)
		}
	})
	if n := countKeys(t, outer, inner); n != 0 {
		t.Errorf("%d keys left under %s", n, inner)
	}
	if n := countKeys(t, outer, other); n != 3 {
		t.Errorf("cleanup touched another prefix: %d keys of 3 left", n)
	}
}

func TestPrefixWithoutClient(t *testing.T) {
	outer := Client(t)
	var p string
	t.Run("own client", func(t *testing.T) {
		p = Prefix(t)
		rdb := redis.NewClient(&redis.Options{Addr: Addr})
		defer rdb.Close()
		writeKeys(t, rdb, p, 5)
	})
	if n := countKeys(t, outer, p); n != 0 {
		t.Errorf("%d keys left under %s", n, p)
	}
}

func TestDeletePrefixRefusesEmpty(t *testing.T) {
	if err := DeletePrefix(context.Background(), Client(t), ""); err == nil {
		t.Fatal("empty prefix accepted")
	}
}

func TestCluster(t *testing.T) {
	outer := Cluster(t)
	if _, ok := outer.(*redis.ClusterClient); !ok {
		t.Fatalf("Cluster is %T, want *redis.ClusterClient", outer)
	}
	var p string
	t.Run("writes", func(t *testing.T) {
		rdb := Cluster(t)
		p = Prefix(t)
		writeKeys(t, rdb, p, 60)
		masters := 0
		err := rdb.(*redis.ClusterClient).ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
			keys, err := node.Keys(ctx, p+"*").Result()
			if len(keys) > 0 {
				masters++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if masters != 3 {
			t.Fatalf("keys landed on %d masters, want 3", masters)
		}
	})
	if n := countKeys(t, outer, p); n != 0 {
		t.Errorf("%d keys left under %s", n, p)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.work", "scripts/redis-cluster.sh"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("root %q: %v", root, err)
		}
	}
}
