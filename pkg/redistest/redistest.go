// Package redistest gives tests a real Redis: [Client] connects to the
// standalone Redis on 127.0.0.1:6379, [Cluster] to a 3-master Redis Cluster
// on ports 7101-7103 that it starts with scripts/redis-cluster.sh, and
// [Prefix] hands each test its own key prefix. Tests share one Redis, so
// they must write only under their prefix: when the test ends, every key
// under each of its prefixes is deleted (SCAN + UNLINK, on every master of a
// cluster) and the clients are closed. Nothing is skipped: when Redis is not
// there the test fails, saying how to start it.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr is the standalone Redis that [Client] connects to.
const Addr = "127.0.0.1:6379"

const pingTimeout = 5 * time.Second

// state is what one test registered: its prefixes and the clients to clean
// them from. One cleanup per test deletes the keys, then closes the clients,
// so the order of Client, Cluster and Prefix calls does not matter.
type state struct {
	mu       sync.Mutex
	prefixes []string
	clients  []redis.UniversalClient
}

var (
	statesMu sync.Mutex
	states   = map[testing.TB]*state{}
)

func stateOf(tb testing.TB) *state {
	statesMu.Lock()
	defer statesMu.Unlock()
	if s, ok := states[tb]; ok {
		return s
	}
	s := &state{}
	states[tb] = s
	tb.Cleanup(func() {
		statesMu.Lock()
		delete(states, tb)
		statesMu.Unlock()
		s.cleanup(tb)
	})
	return s
}

func (s *state) cleanup(tb testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clients := s.clients
	if len(s.prefixes) > 0 && len(clients) == 0 {
		// Prefix without Client: the test used a client of its own on the
		// standalone Redis.
		rdb := redis.NewClient(&redis.Options{Addr: Addr})
		defer rdb.Close()
		clients = []redis.UniversalClient{rdb}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range clients {
		for _, p := range s.prefixes {
			if err := DeletePrefix(ctx, c, p); err != nil {
				tb.Errorf("redistest: delete keys under %q: %v", p, err)
			}
		}
	}
	for _, c := range s.clients {
		_ = c.Close()
	}
}

// Client returns a client of the standalone Redis on 127.0.0.1:6379 (a
// *redis.Client), closed when the test ends. It fails the test when Redis
// does not answer.
func Client(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: Addr})
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		tb.Fatalf("redistest: Redis on %s does not answer (%v); start it with scripts/ensure-infra.sh", Addr, err)
	}
	s := stateOf(tb)
	s.mu.Lock()
	s.clients = append(s.clients, rdb)
	s.mu.Unlock()
	return rdb
}

// Prefix returns a key prefix unique to this call, "t:<8 hex digits>:",
// and deletes every key under it when the test ends (from the clients the
// test got from [Client] and [Cluster], or from the standalone Redis when it
// got none). The prefix holds no glob or hash-tag characters.
func Prefix(tb testing.TB) string {
	tb.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("redistest: random prefix: %v", err)
	}
	p := "t:" + hex.EncodeToString(b[:]) + ":"
	s := stateOf(tb)
	s.mu.Lock()
	s.prefixes = append(s.prefixes, p)
	s.mu.Unlock()
	return p
}

// DeletePrefix deletes every key starting with prefix, on every master when
// rdb is a cluster client. prefix must not contain glob characters.
func DeletePrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("redistest: refusing to delete every key (empty prefix)")
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return deleteOnNode(ctx, node, prefix)
		})
	}
	return deleteOnNode(ctx, rdb, prefix)
}

// deleteOnNode unlinks keys one per command (in a pipeline): on a cluster
// node, a multi-key UNLINK across hash slots fails with CROSSSLOT.
func deleteOnNode(ctx context.Context, rdb redis.Cmdable, prefix string) error {
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		pipe := rdb.Pipeline()
		for _, k := range batch {
			pipe.Unlink(ctx, k)
		}
		batch = batch[:0]
		_, err := pipe.Exec(ctx)
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return flush()
}

var cluster struct {
	once  sync.Once
	addrs []string
	err   error
}

// Cluster makes sure the 3-master Redis Cluster of scripts/redis-cluster.sh
// runs (starting or re-creating it once per test binary) and returns a
// *redis.ClusterClient of it, closed when the test ends. Keys written under
// [Prefix] are deleted from every master.
func Cluster(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	cluster.once.Do(func() { cluster.addrs, cluster.err = startCluster() })
	if cluster.err != nil {
		tb.Fatalf("redistest: %v", cluster.err)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.addrs})
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	err := rdb.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		return node.Ping(ctx).Err()
	})
	if err != nil {
		_ = rdb.Close()
		tb.Fatalf("redistest: Redis Cluster %v does not answer: %v", cluster.addrs, err)
	}
	s := stateOf(tb)
	s.mu.Lock()
	s.clients = append(s.clients, rdb)
	s.mu.Unlock()
	return rdb
}

func startCluster() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(root, "scripts", "redis-cluster.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, script, "start").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s start: %v\n%s", script, err, out)
	}
	out, err := exec.CommandContext(ctx, script, "addrs").Output()
	if err != nil {
		return nil, fmt.Errorf("%s addrs: %v", script, err)
	}
	addrs := strings.Split(strings.TrimSpace(string(out)), ",")
	if len(addrs) == 0 || addrs[0] == "" {
		return nil, fmt.Errorf("%s addrs printed nothing", script)
	}
	return addrs, nil
}

// RepoRoot is the nearest directory at or above the working directory that
// holds go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.work above the working directory")
		}
		dir = parent
	}
}
