package redistest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// When a [Replicated] cluster is healthy: every slot served by a master
// whose replica follows it, as every running node sees it; and the state
// logged when it is not.

// errNodeExited is the health check's answer when a node's process has
// ended without Kill: the cluster cannot become healthy.
var errNodeExited = errors.New("a node's redis-server has exited")

// WaitHealthy waits until the cluster is healthy, as seen from every node
// that runs (all but the ones Kill ended): its cluster_state is ok, all
// 16384 slots are assigned, it knows every running node (none still in a
// handshake, none failed), as many masters as the cluster was started with
// serve the slots, each with a running replica, every other node is such a
// replica, every replica's link to its master is up, and all nodes agree
// on which master serves which slots. A node some other node has not heard
// from for a while (the transient "fail?" flag of a node starved of CPU)
// does not count against it. On timeout it logs each node's CLUSTER INFO,
// CLUSTER NODES, replication state and the end of its log, and fails the
// test with the last problem seen.
func (r *Replicated) WaitHealthy(tb testing.TB, d time.Duration) {
	tb.Helper()
	if err := r.waitHealthy(d); err != nil {
		r.logState(tb)
		r.logged = true
		tb.Fatalf("redistest: no healthy cluster with a replica per master: %v; each node's state is logged above", err)
	}
}

// waitHealthy waits up to d for health to answer nil, and returns its last
// answer otherwise (at once when a node has exited).
func (r *Replicated) waitHealthy(d time.Duration) error {
	start := time.Now()
	for {
		err := r.health()
		if err == nil {
			return nil
		}
		if errors.Is(err, errNodeExited) {
			return err
		}
		if time.Since(start) > d {
			return fmt.Errorf("timed out after %v waiting for a healthy cluster with a replica per master; last problem: %v", d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// health returns nil when the cluster is healthy (see WaitHealthy), else
// the first problem found.
func (r *Replicated) health() error {
	running := map[string]bool{}
	for _, a := range r.Addrs {
		nd := r.nodes[a]
		if nd.killed {
			continue
		}
		select {
		case <-nd.exited:
			return fmt.Errorf("%w: %s (%v)", errNodeExited, a, nd.cmd.ProcessState)
		default:
		}
		running[a] = true
	}
	var first, slots string
	for _, a := range r.Addrs {
		if !running[a] {
			continue
		}
		v, err := viewOf(a)
		if err != nil {
			return fmt.Errorf("%s: %v", a, err)
		}
		if err := r.check(v, running); err != nil {
			return fmt.Errorf("%s: %v", a, err)
		}
		if first == "" {
			first, slots = a, v.slotOwners()
		} else if v.slotOwners() != slots {
			return fmt.Errorf("%s and %s disagree on which master serves which slots", first, a)
		}
	}
	return nil
}

// check returns the first reason, if any, why the cluster is not healthy
// as one node sees it.
func (r *Replicated) check(v *view, running map[string]bool) error {
	if s := v.info["cluster_state"]; s != "ok" {
		return fmt.Errorf("cluster_state:%s", s)
	}
	if n := v.info["cluster_slots_assigned"]; n != "16384" {
		return fmt.Errorf("%s of 16384 slots assigned", n)
	}
	known := map[string]*nodeLine{}
	for _, n := range v.nodes {
		switch {
		case strings.HasPrefix(n.addr, ":"):
			return fmt.Errorf("does not know the address of node %s yet", n.id)
		case n.flags["handshake"]:
			return fmt.Errorf("still in a handshake with %s", n.addr)
		case n.flags["noaddr"]:
			return fmt.Errorf("knows node %s by no address", n.id)
		case r.nodes[n.addr] == nil:
			return fmt.Errorf("knows %s, which is not one of the cluster's nodes", n.addr)
		case running[n.addr] && n.flags["fail"]:
			return fmt.Errorf("sees %s as failed", n.addr)
		}
		known[n.addr] = n
	}
	for a := range running {
		if known[a] == nil {
			return fmt.Errorf("does not know %s yet", a)
		}
	}
	var serving []*nodeLine
	for _, n := range v.nodes {
		if n.flags["master"] && len(n.slots) > 0 {
			serving = append(serving, n)
		}
	}
	if len(serving) != r.masters {
		return fmt.Errorf("%d masters serve slots, not %d", len(serving), r.masters)
	}
	for _, m := range serving {
		if !running[m.addr] {
			return fmt.Errorf("%s, which is not running, serves slots", m.addr)
		}
		if !slices.ContainsFunc(v.nodes, func(n *nodeLine) bool {
			return n.flags["slave"] && n.master == m.id && running[n.addr]
		}) {
			return fmt.Errorf("master %s has no replica", m.addr)
		}
	}
	for _, n := range v.nodes {
		if running[n.addr] && n.flags["master"] && len(n.slots) == 0 {
			return fmt.Errorf("%s is a master without slots, not a replica", n.addr)
		}
	}
	if v.repl["role"] == "slave" && v.repl["master_link_status"] != "up" {
		return fmt.Errorf("its link to its master %s:%s is %s", v.repl["master_host"], v.repl["master_port"], v.repl["master_link_status"])
	}
	return nil
}

// view is one node's idea of the cluster.
type view struct {
	info  map[string]string // CLUSTER INFO
	nodes []*nodeLine       // CLUSTER NODES
	repl  map[string]string // INFO replication
}

// nodeLine is a line of CLUSTER NODES: <id> <ip:port@cport[,hostname]>
// <flags> <master id or -> <ping sent> <pong received> <config epoch>
// <link state> <slot or range>...
type nodeLine struct {
	id, addr, master string
	flags            map[string]bool
	slots            []string
}

func viewOf(addr string) (*view, error) {
	c := node(addr)
	defer c.Close()
	ctx := context.Background()
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER INFO: %v", err)
	}
	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %v", err)
	}
	repl, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO replication: %v", err)
	}
	v := &view{info: fields(info), repl: fields(repl)}
	for _, l := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 {
			continue
		}
		n := &nodeLine{id: f[0], addr: strings.Split(f[1], "@")[0], master: f[3], flags: map[string]bool{}, slots: f[8:]}
		for _, fl := range strings.Split(f[2], ",") {
			n.flags[fl] = true
		}
		v.nodes = append(v.nodes, n)
	}
	return v, nil
}

// slotOwners is which node serves which slots, in a canonical form.
func (v *view) slotOwners() string {
	var s []string
	for _, n := range v.nodes {
		if n.flags["master"] && len(n.slots) > 0 {
			s = append(s, n.id+" "+strings.Join(n.slots, " "))
		}
	}
	slices.Sort(s)
	return strings.Join(s, "\n")
}

// logState logs, for each node, whether its process runs, its CLUSTER
// INFO, CLUSTER NODES and replication state as it answers them now, and
// the end of its log; then what redis-cli --cluster create said.
func (r *Replicated) logState(tb testing.TB) {
	tb.Helper()
	for _, a := range r.Addrs {
		nd := r.nodes[a]
		state, running := fmt.Sprintf("pid %d, running", nd.cmd.Process.Pid), true
		select {
		case <-nd.exited:
			running = false
			state = fmt.Sprintf("pid %d, ended: %v", nd.cmd.Process.Pid, nd.cmd.ProcessState)
			if nd.killed {
				state = fmt.Sprintf("pid %d, killed by the test", nd.cmd.Process.Pid)
			}
		default:
		}
		var b strings.Builder
		fmt.Fprintf(&b, "redistest: node %s (%s)\n", a, state)
		if running {
			nd.logAnswers(&b)
		}
		fmt.Fprintf(&b, "last lines of %s:\n%s", filepath.Join(nd.dir, "redis.log"), nd.logTail(20))
		tb.Log(b.String())
	}
	if r.created != "" {
		tb.Logf("redistest: redis-cli --cluster create said:\n%s", r.created)
	}
}
