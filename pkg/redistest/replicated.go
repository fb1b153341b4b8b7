package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/freeport"
)

// Replicated is a Redis Cluster of masters with one replica each, started
// by [StartReplicated] for one test: its own redis-server processes on free
// loopback ports, its own data directory, all gone when the test ends.
// Unlike [Cluster] (three masters shared by every test, no replicas), it
// can fail a master over.
type Replicated struct {
	// Addrs are every node's address (masters and replicas).
	Addrs []string
	// Client is a cluster client of it, closed when the test ends.
	Client *redis.ClusterClient
	nodes  map[string]*exec.Cmd
}

// NodeTimeout is the replicated cluster's cluster-node-timeout: a master
// unreachable this long is marked failed and its replica elected.
const NodeTimeout = 3 * time.Second

// StartReplicated starts masters masters with one replica each and waits
// until every node sees the whole cluster healthy. It fails the test when
// redis-server or redis-cli is missing.
func StartReplicated(tb testing.TB, masters int) *Replicated {
	tb.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("redistest: %s not found (scripts/ensure-infra.sh installs it): %v", bin, err)
		}
	}
	dir := tb.TempDir()
	r := &Replicated{nodes: map[string]*exec.Cmd{}}
	for len(r.Addrs) < 2*masters {
		port, err := freeport.Pair(10000) // the port and its cluster bus port
		if err != nil {
			tb.Fatal(err)
		}
		nd := filepath.Join(dir, fmt.Sprint(port))
		if err := os.MkdirAll(nd, 0o700); err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command("redis-server", "--cluster-enabled", "yes", "--port", fmt.Sprint(port),
			"--bind", "127.0.0.1", "--dir", nd, "--save", "", "--appendonly", "no",
			"--cluster-node-timeout", fmt.Sprint(NodeTimeout.Milliseconds()), "--logfile", filepath.Join(nd, "redis.log"))
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		r.Addrs = append(r.Addrs, addr)
		r.nodes[addr] = cmd
	}
	for _, a := range r.Addrs {
		waitFor(tb, 10*time.Second, "redis "+a, func() bool {
			c := node(a)
			defer c.Close()
			return c.Ping(context.Background()).Err() == nil
		})
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, r.Addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	r.WaitHealthy(tb, 60*time.Second)
	r.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.Addrs, MaxRedirects: 16})
	tb.Cleanup(func() { r.Client.Close() })
	return r
}

// WaitHealthy waits until every running node reports cluster_state:ok and
// sees each master with a replica and no node failing.
func (r *Replicated) WaitHealthy(tb testing.TB, d time.Duration) {
	tb.Helper()
	waitFor(tb, d, "a healthy cluster with a replica per master", func() bool {
		for _, a := range r.Addrs {
			if r.nodes[a] == nil {
				continue
			}
			c := node(a)
			info, _ := c.ClusterInfo(context.Background()).Result()
			nodes, _ := c.ClusterNodes(context.Background()).Result()
			c.Close()
			if !strings.Contains(info, "cluster_state:ok") || strings.Count(nodes, "slave") != len(r.Addrs)/2 ||
				strings.Contains(nodes, "fail") || strings.Contains(nodes, "handshake") {
				return false
			}
		}
		return true
	})
}

// MasterOf returns the address of the master that serves key, and of its
// replica ("" when it has none).
func (r *Replicated) MasterOf(ctx context.Context, key string) (master, replica string, err error) {
	m, err := r.Client.MasterForKey(ctx, key)
	if err != nil {
		return "", "", err
	}
	master = m.Options().Addr
	// CLUSTER NODES lines: <id> <ip:port@bus> <flags> <master id> ...
	nodes, err := m.ClusterNodes(ctx).Result()
	if err != nil {
		return "", "", err
	}
	lines := strings.Split(strings.TrimSpace(nodes), "\n")
	var myID string
	for _, l := range lines {
		if fs := strings.Fields(l); len(fs) > 3 && strings.Contains(fs[2], "myself") {
			myID = fs[0]
		}
	}
	for _, l := range lines {
		if fs := strings.Fields(l); len(fs) > 3 && strings.Contains(fs[2], "slave") && fs[3] == myID {
			replica = strings.Split(fs[1], "@")[0]
		}
	}
	return master, replica, nil
}

// Kill ends the node at addr with SIGKILL (a crash: no shutdown, nothing
// flushed to its replica) and waits for it to be gone. The cluster marks
// it failed after [NodeTimeout] and elects its replica.
func (r *Replicated) Kill(tb testing.TB, addr string) {
	tb.Helper()
	cmd := r.nodes[addr]
	if cmd == nil {
		tb.Fatalf("redistest: no running node %s", addr)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	r.nodes[addr] = nil
}

// IsMaster reports whether the node at addr answers ROLE with "master".
func IsMaster(ctx context.Context, addr string) bool {
	c := node(addr)
	defer c.Close()
	s, err := c.Do(ctx, "ROLE").Slice()
	return err == nil && len(s) > 0 && s[0] == "master"
}

// node is a short-lived client of one node, closed by the caller.
func node(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
}

func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
