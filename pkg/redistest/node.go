package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/freeport"
)

// One redis-server process of a [Replicated] cluster: started on free
// loopback ports, checked to be the process that serves its port, stopped,
// and read for the state log of a failing test.

// redisNode is one redis-server process of a Replicated.
type redisNode struct {
	addr   string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has ended
	killed bool          // by Kill
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
