package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	Client  *redis.ClusterClient
	masters int
	nodes   map[string]*redisNode
	created string // what redis-cli --cluster create said
	logged  bool   // the state was logged for a failure of the test
}

// NodeTimeout is the replicated cluster's cluster-node-timeout: a master
// unreachable this long is marked failed and its replica elected.
const NodeTimeout = 3 * time.Second

// formTimeout bounds each of the two steps of forming the cluster:
// redis-cli --cluster create, and then waiting for it to be healthy.
const formTimeout = 60 * time.Second

// StartReplicated starts masters masters with one replica each and waits
// until every node sees the whole cluster healthy (see
// [Replicated.WaitHealthy]). Each node is checked to be its own process
// (INFO's process_id) before the cluster is created, and a node whose port
// another process took is started again on another. When the cluster does
// not become healthy, every node's state is logged and it is started once
// more from scratch on fresh ports. It fails the test when redis-server or
// redis-cli is missing or the second attempt fails too.
func StartReplicated(tb testing.TB, masters int) *Replicated {
	tb.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("redistest: %s not found (scripts/ensure-infra.sh installs it): %v", bin, err)
		}
	}
	dir := tb.TempDir() // before the cleanup below, so removed after it
	r := &Replicated{masters: masters}
	tb.Cleanup(func() {
		if tb.Failed() && !r.logged {
			r.logState(tb)
		}
		r.stop()
	})
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := r.form(filepath.Join(dir, strconv.Itoa(attempt)))
		if err == nil {
			break
		}
		r.logState(tb)
		if attempt == 2 {
			r.logged = true
			tb.Fatalf("redistest: no healthy cluster of %d masters with a replica each (attempt %d, %v): %v; each node's state is logged above",
				masters, attempt, time.Since(start).Round(100*time.Millisecond), err)
		}
		tb.Logf("redistest: attempt %d to start a cluster of %d masters with a replica each failed after %v: %v; each node's state is logged above; starting it again on fresh ports",
			attempt, masters, time.Since(start).Round(100*time.Millisecond), err)
		r.stop()
	}
	r.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.Addrs, MaxRedirects: 16})
	tb.Cleanup(func() { r.Client.Close() })
	return r
}

// form starts 2*r.masters nodes with their data under dir, creates the
// cluster and waits until it is healthy.
func (r *Replicated) form(dir string) error {
	r.Addrs, r.nodes, r.created = nil, map[string]*redisNode{}, ""
	for len(r.Addrs) < 2*r.masters {
		nd, err := startNode(dir)
		if err != nil {
			return err
		}
		r.Addrs = append(r.Addrs, nd.addr)
		r.nodes[nd.addr] = nd
	}
	ctx, cancel := context.WithTimeout(context.Background(), formTimeout)
	defer cancel()
	// redis-cli waits for the nodes to agree on the slots without a limit
	out, err := exec.CommandContext(ctx, "redis-cli", append(append([]string{"--cluster", "create"}, r.Addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	r.created = ansi.ReplaceAllString(string(out), "")
	if err != nil {
		return fmt.Errorf("redis-cli --cluster create: %v", err)
	}
	return r.waitHealthy(formTimeout)
}

// stop ends every node.
func (r *Replicated) stop() {
	for _, nd := range r.nodes {
		nd.stop()
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

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
	nd := r.nodes[addr]
	if nd == nil || nd.killed {
		tb.Fatalf("redistest: no running node %s", addr)
	}
	_ = nd.cmd.Process.Signal(syscall.SIGKILL)
	<-nd.exited
	nd.killed = true
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
