package stacktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/freeport"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// One service of a stack as an operating-system process: launched with
// its environment and log, waited for until /readyz answers from it, and
// stopped.

// Service is one process of a stack.
type Service struct {
	Name string
	// Addr is the public listener (host:port), "" for a consumer.
	Addr string
	// AdminAddr serves /healthz, /readyz and /metrics.
	AdminAddr string
	// Log is the path of the process's combined stdout and stderr.
	Log string
	// Echo, when set, also receives the process's output, each line
	// prefixed with "[Name] " (tools/stack shows every log on its terminal).
	Echo io.Writer
	// OwnGroup starts the process in a process group of its own, so that
	// a terminal's Ctrl-C reaches only the program that started it, which
	// then stops the services in order; the process gets SIGTERM if that
	// program dies first.
	OwnGroup bool

	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	logf   *os.File
	bin    string            // the binary and environment it was started
	env    map[string]string // with (for Stack.Restart)
	killed bool              // by Stack.Kill: exiting was the test's intent
}

// URL is the service's base URL, "http://" + Addr.
func (p *Service) URL() string { return "http://" + p.Addr }

// Exited reports whether the process has ended.
func (p *Service) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// FreePort returns a loopback address whose port was free a moment ago,
// picked by pkg/freeport below the kernel's ephemeral range (a port of that
// range may be taken by the local end of any outgoing connection before the
// service listens). Another stack may still pick the same port; [Start]
// retries a service whose listen fails with "address already in use".
func FreePort(t testing.TB) string {
	t.Helper()
	p, err := freeport.Pair(0)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// Launch starts bin as this service, with env added to the current
// environment (env wins), its output written to Log (appended to on a
// restart). It returns once the process has started; see [Service.WaitReady].
func (p *Service) Launch(bin string, env map[string]string) error {
	flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if p.cmd != nil {
		flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND // a restart
	}
	f, err := os.OpenFile(p.Log, flag, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin)
	cmd.Env = os.Environ() // later entries win: the stack's values override
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.Stdout, cmd.Stderr = f, f
	if p.Echo != nil {
		w := io.MultiWriter(f, &linePrefixer{w: p.Echo, prefix: "[" + p.Name + "] "})
		cmd.Stdout, cmd.Stderr = w, w
	}
	if p.OwnGroup {
		cmd.SysProcAttr = ownGroup()
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	p.cmd, p.logf, p.done, p.bin, p.env, p.killed = cmd, f, done, bin, env, false
	go func() { _ = cmd.Wait(); close(done) }()
	return nil
}

// WaitReady polls /readyz on the admin port until it answers 200 (from
// this process, not another one holding the port), the process exits, or
// d passes. A service with a public listener must accept connections on
// it by the time it answers 200; one that does not is an error.
func (p *Service) WaitReady(d time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(d)
	for {
		resp, err := hc.Get("http://" + p.AdminAddr + "/readyz")
		if err == nil {
			var rep service.ReadyReport
			derr := json.NewDecoder(resp.Body).Decode(&rep)
			resp.Body.Close()
			switch {
			case derr == nil && rep.PID != p.cmd.Process.Pid:
				// another process (another test's stack) holds the port:
				// this child failed to listen and must not pass as ready
				err = fmt.Errorf("%s is served by pid %d, not %d", p.AdminAddr, rep.PID, p.cmd.Process.Pid)
			case resp.StatusCode == http.StatusOK:
				// ready means serving: a load balancer that trusts /readyz
				// sends requests to the public port at once
				if p.Addr == "" {
					return nil
				}
				c, cerr := net.DialTimeout("tcp", p.Addr, 2*time.Second)
				if cerr != nil {
					return fmt.Errorf("/readyz answered 200 but the public port does not accept: %v", cerr)
				}
				c.Close()
				return nil
			default:
				err = fmt.Errorf("/readyz answered %d", resp.StatusCode)
			}
		}
		if p.Exited() {
			return fmt.Errorf("exited (%v) before it was ready", p.cmd.ProcessState)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready on %s after %v: %v", p.AdminAddr, d, err)
		}
		select {
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Done is closed when the process has exited.
func (p *Service) Done() <-chan struct{} { return p.done }

// Stop interrupts the process and waits for it to exit, killing it after
// timeout. It returns at once when the process has already exited.
func (p *Service) Stop(timeout time.Duration) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// linePrefixer writes whole lines to w, each prefixed; a partial line waits
// for its end.
type linePrefixer struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (l *linePrefixer) Write(b []byte) (int, error) {
	l.buf = append(l.buf, b...)
	i := bytes.LastIndexByte(l.buf, '\n')
	if i < 0 {
		return len(b), nil
	}
	var out []byte
	for line := range bytes.Lines(l.buf[:i+1]) {
		out = append(append(out, l.prefix...), line...)
	}
	l.buf = append(l.buf[:0], l.buf[i+1:]...)
	_, err := l.w.Write(out)
	return len(b), err
}

func tail(path string, n int) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return []byte(err.Error())
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return b
}
