package amqptest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/freeport"
)

// rmqBin holds Debian's unwrapped scripts (/usr/sbin/rabbitmq-* switch to
// the rabbitmq user and its cookie; these run as the caller with ours).
const rmqBin = "/usr/lib/rabbitmq/bin"

// Cluster is a RabbitMQ cluster of nodes started by this process on
// loopback, each with its own node name, AMQP and distribution ports, data
// directory and Erlang cookie, beside (never touching) the machine's own
// broker.
type Cluster struct {
	t     testing.TB
	dir   string
	Nodes []*Node
}

// Node is one node of a Cluster.
type Node struct {
	c        *Cluster
	Name     string // e.g. bo-3f2a-1@localhost
	Port     int    // AMQP
	DistPort int
	dir      string
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has ended
}

// URL is the node's AMQP URL (guest/guest, default vhost).
func (n *Node) URL() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.Port) }

// URLs is every node's URL, comma separated (AMQP_URL's form).
func (c *Cluster) URLs() string {
	var u []string
	for _, n := range c.Nodes {
		u = append(u, n.URL())
	}
	return strings.Join(u, ",")
}

// StartCluster starts n nodes and joins them into one cluster; they are
// stopped and their data removed when the test ends. Each node's ports are
// picked just before it starts (a node boots for seconds, and other test
// processes pick ports from the same range meanwhile), and a node that
// finds one taken when it listens is started again on others. It fails
// the test when Debian's rabbitmq-server is not installed
// (scripts/ensure-infra.sh installs it).
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if _, err := os.Stat(filepath.Join(rmqBin, "rabbitmq-server")); err != nil {
		t.Fatalf("amqptest: no %s/rabbitmq-server (scripts/ensure-infra.sh installs it): %v", rmqBin, err)
	}
	dir := t.TempDir()
	c := &Cluster{t: t, dir: dir}
	home := filepath.Join(dir, "home")
	must(t, os.MkdirAll(home, 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".erlang.cookie"), []byte(strings.ToUpper(rand.Text())), 0o400))
	must(t, os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[].\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "rabbitmq-env.conf"), nil, 0o600))
	id := strings.ToLower(rand.Text()[:4])
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{c: c, Name: fmt.Sprintf("bo-%s-%d@localhost", id, i+1),
			dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1))})
	}
	t.Cleanup(func() {
		for _, nd := range c.Nodes {
			nd.kill()
			if t.Failed() {
				nd.logTail(40)
			}
		}
	})
	for _, nd := range c.Nodes {
		nd.startFirst()
	}
	for _, nd := range c.Nodes[1:] {
		nd.ctl("stop_app")
		nd.ctl("join_cluster", c.Nodes[0].Name)
		nd.ctl("start_app")
	}
	return c
}

func (n *Node) env() []string {
	d := n.c.dir
	return append(os.Environ(),
		"HOME="+filepath.Join(d, "home"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(d, "rabbitmq-env.conf"),
		"RABBITMQ_NODENAME="+n.Name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		fmt.Sprintf("RABBITMQ_NODE_PORT=%d", n.Port),
		fmt.Sprintf("RABBITMQ_DIST_PORT=%d", n.DistPort),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(n.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(n.dir, "log"),
		"RABBITMQ_PID_FILE="+filepath.Join(n.dir, "pid"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(d, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(n.dir, "rabbitmq.conf"),
		"ERL_EPMD_ADDRESS=127.0.0.1",
	)
}

// startFirst picks the node's ports, writes its configuration and starts
// it. When the node could not listen on one of its ports because another
// process took it after the pick (its log says eaddrinuse or
// dist_port_already_used), it starts it again, with an empty data
// directory, on other ports; three tries.
func (n *Node) startFirst() {
	t := n.c.t
	t.Helper()
	for try := 1; ; try++ {
		port, err := freeport.Pair(10000) // AMQP, and the distribution port
		must(t, err)
		n.Port, n.DistPort = port, port+10000
		must(t, os.RemoveAll(n.dir))
		must(t, os.MkdirAll(n.dir, 0o700))
		conf := fmt.Sprintf("listeners.tcp.default = %d\nloopback_users = none\n", n.Port)
		must(t, os.WriteFile(filepath.Join(n.dir, "rabbitmq.conf"), []byte(conf), 0o600))
		err = n.start()
		if err == nil {
			return
		}
		n.kill()
		if !n.portTaken() || try == 3 {
			t.Fatal(err) // the cleanup logs the end of each node's log
		}
		t.Logf("amqptest: %s could not listen on port %d or %d, which another process took after they were picked (%v); starting it again on other ports",
			n.Name, n.Port, n.DistPort, err)
	}
}

// Start starts the node (again, after Stop, with its data) and waits until
// it serves.
func (n *Node) Start() {
	n.c.t.Helper()
	if err := n.start(); err != nil {
		n.c.t.Fatal(err) // the cleanup logs the end of each node's log
	}
}

// start starts the node and waits until it has booted, or its process has
// ended.
func (n *Node) start() error {
	pidFile := filepath.Join(n.dir, "pid")
	_ = os.Remove(pidFile) // a stale one would make `wait` watch a dead pid
	out, err := os.OpenFile(filepath.Join(n.dir, "server.out"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	n.cmd = exec.Command(filepath.Join(rmqBin, "rabbitmq-server"))
	n.cmd.Env, n.cmd.Dir, n.cmd.Stdout, n.cmd.Stderr = n.env(), n.dir, out, out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		out.Close()
		return err
	}
	exited := make(chan struct{})
	n.exited = exited
	go func(cmd *exec.Cmd, f *os.File) { _ = cmd.Wait(); f.Close(); close(exited) }(n.cmd, out)
	// `wait` waits for the pid file, then for the node to boot. A node that
	// dies before it writes the pid file (its distribution port taken)
	// leaves it waiting for the whole timeout: its process's end is
	// watched too.
	wait := exec.Command(filepath.Join(rmqBin, "rabbitmqctl"), "-q", "-n", n.Name, "--timeout", "180", "wait", pidFile)
	var said bytes.Buffer
	wait.Env, wait.Stdout, wait.Stderr = n.env(), &said, &said
	if err := wait.Start(); err != nil {
		return err
	}
	waited := make(chan error, 1)
	go func() { waited <- wait.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			return fmt.Errorf("rabbitmqctl -n %s wait: %v: %s", n.Name, err, said.String())
		}
		return nil
	case <-exited:
		_ = wait.Process.Kill()
		<-waited
		return fmt.Errorf("%s: rabbitmq-server ended while the node booted (%v): %s", n.Name, n.cmd.ProcessState, n.serverOutTail(5))
	}
}

// portTaken reports whether the node's log or output says that a port it
// was to listen on was in use.
func (n *Node) portTaken() bool {
	for _, f := range []string{filepath.Join(n.dir, "log", n.Name+".log"), filepath.Join(n.dir, "server.out")} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("eaddrinuse")) || bytes.Contains(b, []byte("dist_port_already_used")) {
			return true
		}
	}
	return false
}

// serverOutTail is the last lines of what rabbitmq-server wrote to its
// standard output and error.
func (n *Node) serverOutTail(lines int) string {
	s, _ := lastLines(filepath.Join(n.dir, "server.out"), lines)
	return s
}

// lastLines is the last n lines of the file at path.
func lastLines(path string, n int) (string, error) {
	b, err := os.ReadFile(path)
	all := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(all[max(0, len(all)-n):], "\n"), err
}

// Stop halts the node's Erlang VM (`rabbitmqctl stop`), as a crash or a
// host going down would; its data stays for Start.
func (n *Node) Stop() {
	n.c.t.Helper()
	n.ctl("stop")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.Port), time.Second); err != nil {
			return
		} else {
			c.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	n.c.t.Fatalf("%s still listens after stop", n.Name)
}

// Kill ends the node's Erlang VM with SIGKILL (a crash: nothing flushed,
// no goodbye to its peers or clients) and waits until its port is closed;
// its data stays for Start.
func (n *Node) Kill() {
	n.c.t.Helper()
	if n.cmd == nil || n.cmd.Process == nil {
		n.c.t.Fatalf("%s was not started", n.Name)
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.Port), time.Second)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
	n.c.t.Fatalf("%s still listens after SIGKILL", n.Name)
}

// kill stops the node if it runs (cleanup, or a failed start): politely,
// then its process group, and waits up to 30 s for its process to end.
func (n *Node) kill() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.Port), time.Second); err == nil {
		c.Close()
		cmd := exec.Command(filepath.Join(rmqBin, "rabbitmqctl"), "-n", n.Name, "stop")
		cmd.Env = n.env()
		_ = cmd.Run()
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
	}
}

// Ctl runs rabbitmqctl against the node and returns its output.
func (n *Node) Ctl(args ...string) string { n.c.t.Helper(); return n.ctl(args...) }

func (n *Node) ctl(args ...string) string {
	n.c.t.Helper()
	cmd := exec.Command(filepath.Join(rmqBin, "rabbitmqctl"), append([]string{"-q", "-n", n.Name}, args...)...)
	cmd.Env = n.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		n.c.t.Fatalf("rabbitmqctl -n %s %s: %v: %s", n.Name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// logTail logs the last lines of the node's log, for a failed test.
func (n *Node) logTail(lines int) {
	s, err := lastLines(filepath.Join(n.dir, "log", n.Name+".log"), lines)
	if err != nil {
		n.c.t.Logf("%s: no log: %v", n.Name, err)
		return
	}
	n.c.t.Logf("%s: last %d log lines:\n%s", n.Name, lines, s)
}

// StaleDeadLetterCheckout registers, through this node's member of the
// quorum queue (vhost "/"), a process that ends at once as the queue's
// at-least-once dead-letter consumer, and returns what the broker
// answered. It is what RabbitMQ 3.10.8 commits when a member that led the
// queue for a moment registers its dead-letter worker after leadership
// moved on: the registration lands on the new leader and replaces that
// leader's own worker, so dead-lettered messages are handed to a process
// that no longer exists, and stay in the queue (neither ready nor
// unacknowledged) until its next leader election
// (https://github.com/rabbitmq/rabbitmq-server/pull/16203). A queue that
// dead-letters at-most-once ignores the command.
func (n *Node) StaleDeadLetterCheckout(queue string) string {
	n.c.t.Helper()
	return strings.TrimSpace(n.ctl("eval", fmt.Sprintf(`QRef = rabbit_misc:r(<<"/">>, queue, <<%q>>),
{ok, Q} = rabbit_amqqueue:lookup(QRef),
{Name, _} = amqqueue:get_pid(Q),
rabbit_fifo_dlx_client:checkout(QRef, {Name, node()}, 32).`, queue)))
}
