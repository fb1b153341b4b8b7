package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
	Client  *redis.ClusterClient
	masters int
	nodes   map[string]*redisNode
	created string // what redis-cli --cluster create said
	logged  bool   // the state was logged for a failure of the test
}

// redisNode is one redis-server process of a Replicated.
type redisNode struct {
	addr   string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has ended
	killed bool          // by Kill
}

// NodeTimeout is the replicated cluster's cluster-node-timeout: a master
// unreachable this long is marked failed and its replica elected.
const NodeTimeout = 3 * time.Second

// formTimeout bounds each of the two steps of forming the cluster:
// redis-cli --cluster create, and then waiting for it to be healthy.
const formTimeout = 60 * time.Second

// errNodeExited is the health check's answer when a node's process has
// ended without Kill: the cluster cannot become healthy.
var errNodeExited = errors.New("a node's redis-server has exited")

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

// startNode starts a redis-server with its data in a directory of its own
// under dir and waits until it serves. It tries up to three ports: another
// process may take one between its pick and the server's listen (the
// server then exits, and whatever took it answers there).
func startNode(dir string) (*redisNode, error) {
	var errs []string
	for range 3 {
		port, err := freeport.Pair(10000) // the port and its cluster bus port
		if err != nil {
			return nil, err
		}
		nd := &redisNode{addr: fmt.Sprintf("127.0.0.1:%d", port), dir: filepath.Join(dir, strconv.Itoa(port)), exited: make(chan struct{})}
		if err := os.MkdirAll(nd.dir, 0o700); err != nil {
			return nil, err
		}
		nd.cmd = exec.Command("redis-server", "--cluster-enabled", "yes", "--port", strconv.Itoa(port),
			"--bind", "127.0.0.1", "--dir", nd.dir, "--save", "", "--appendonly", "no",
			"--cluster-node-timeout", strconv.FormatInt(NodeTimeout.Milliseconds(), 10),
			"--repl-diskless-sync-delay", "0", // a replica syncs at once, not after 5 s
			"--logfile", filepath.Join(nd.dir, "redis.log"))
		if err := nd.cmd.Start(); err != nil {
			return nil, err
		}
		go func() { _ = nd.cmd.Wait(); close(nd.exited) }()
		if err := nd.serving(30 * time.Second); err != nil {
			nd.stop()
			errs = append(errs, err.Error())
			continue
		}
		return nd, nil
	}
	return nil, fmt.Errorf("no redis-server started on three ports: %s", strings.Join(errs, "; "))
}

// serving waits until the node's own process answers on its address (its
// INFO's process_id is the node's pid, not another process's that took
// the port).
func (nd *redisNode) serving(d time.Duration) error {
	pid := strconv.Itoa(nd.cmd.Process.Pid)
	deadline := time.Now().Add(d)
	for {
		select {
		case <-nd.exited:
			return fmt.Errorf("redis-server on %s exited before it served (%v): %s", nd.addr, nd.cmd.ProcessState, nd.logTail(3))
		default:
		}
		c := node(nd.addr)
		info, err := c.Info(context.Background(), "server").Result()
		c.Close()
		if err == nil {
			if got := field(info, "process_id"); got != pid {
				return fmt.Errorf("%s is served by another process (pid %s, not redis-server %s)", nd.addr, got, pid)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s does not answer after %v: %v", nd.addr, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop kills the node's process if it runs and waits for it to end.
func (nd *redisNode) stop() {
	_ = nd.cmd.Process.Kill()
	<-nd.exited
}

// stop ends every node.
func (r *Replicated) stop() {
	for _, nd := range r.nodes {
		nd.stop()
	}
}

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

// fields parses INFO's and CLUSTER INFO's "name:value" lines.
func fields(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			m[k] = v
		}
	}
	return m
}

func field(info, name string) string { return fields(info)[name] }

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

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

// logAnswers writes the node's CLUSTER INFO, CLUSTER NODES and replication
// state to b.
func (nd *redisNode) logAnswers(b *strings.Builder) {
	c := node(nd.addr)
	defer c.Close()
	ctx := context.Background()
	if info, err := c.ClusterInfo(ctx).Result(); err != nil {
		fmt.Fprintf(b, "CLUSTER INFO: %v\n", err)
	} else {
		fmt.Fprintf(b, "CLUSTER INFO: %s\n", strings.Join(strings.Fields(info), " "))
	}
	if nodes, err := c.ClusterNodes(ctx).Result(); err != nil {
		fmt.Fprintf(b, "CLUSTER NODES: %v\n", err)
	} else {
		fmt.Fprintf(b, "CLUSTER NODES:\n%s\n", strings.TrimSpace(nodes))
	}
	if repl, err := c.Info(ctx, "replication").Result(); err != nil {
		fmt.Fprintf(b, "INFO replication: %v\n", err)
	} else {
		f := fields(repl)
		fmt.Fprintf(b, "INFO replication: role:%s master_host:%s master_port:%s master_link_status:%s connected_slaves:%s\n",
			f["role"], f["master_host"], f["master_port"], f["master_link_status"], f["connected_slaves"])
	}
}

// logTail is the last n lines of the node's log.
func (nd *redisNode) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(nd.dir, "redis.log"))
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
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
