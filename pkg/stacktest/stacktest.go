// Package stacktest runs boxoffice's services as real processes for
// end-to-end tests: [Start] builds the service binaries (once per test
// binary, in parallel), gives the test its own Redis key prefix
// (redistest), RabbitMQ vhost (amqptest) and in-process Kafka (kafkatest),
// starts each requested service on free loopback ports with the environment
// that wires them to each other, and waits until each answers /readyz on its
// admin port before starting the next. Every process logs to a file in a
// per-test directory; when the test fails, the tail of each log is written
// to the test log. The processes are interrupted (then killed) when the test
// ends, before its Redis keys and vhost are deleted.
//
// Start order matters: a consumer must have declared and bound its queue
// before a publisher's first message, or RabbitMQ drops the message as
// unroutable; [Start] keeps the order of [Options.Services] and the default
// order ([Services]) starts consumers before the gateway.
//
// A package that uses stacktest should call [Main] from TestMain so that the
// binaries built for it are deleted when its tests end.
package stacktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/freeport"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// Secrets every service of a test stack shares.
const (
	JWTSecret     = "stacktest-jwt-secret-0123456789"
	WebhookSecret = "stacktest-webhook-secret-0123456789"
	SandboxKey    = "stacktest-sandbox-key"
)

// Options configure [Start]. The zero value starts [Services].
type Options struct {
	// Services to start, in this order. Empty: [Services].
	Services []string
	// Env is added to every service's environment after the stack's own
	// variables, so it may override them (e.g. SAFETY_NET_INTERVAL).
	Env map[string]string
	// ServiceEnv is added to one service's environment, after Env.
	ServiceEnv map[string]map[string]string
	// LogLevel of every service; default "warn".
	LogLevel string
	// LogDir receives one <service>.log per service; default a fresh
	// t.TempDir(). Set it to keep the logs after the test.
	LogDir string
	// ReadyTimeout bounds each service's wait for /readyz; default 30 s.
	ReadyTimeout time.Duration
	// Faults puts fault proxies (toxiproxy) between the services and
	// Redis, RabbitMQ, Kafka and PostgreSQL; see [Stack.Faults].
	Faults bool
}

// Stack is a running set of services and the infrastructure they share.
type Stack struct {
	// Prefix is the Redis key prefix of every service (REDIS_PREFIX).
	Prefix string
	// Redis is a client of the standalone Redis the services use, closed
	// when the test ends.
	Redis redis.UniversalClient
	// AMQPURL is the URL of the test's own RabbitMQ vhost (AMQP_URL).
	AMQPURL string
	// Brokers are the in-process Kafka's addresses (KAFKA_BROKERS).
	Brokers []string
	// DatabaseURL is the ledger's PostgreSQL, a schema of the test's own
	// (DATABASE_URL; pkg/ledger/ledgertest).
	DatabaseURL string
	// LogDir holds <service>.log of every service.
	LogDir string
	// HTTP is a client for the stack's URLs: pooled for many concurrent
	// users, a 20 s timeout, and redirects not followed (so a test sees the
	// payment provider's 303).
	HTTP *http.Client

	auth     *auth.Authority
	services map[string]*Service
	order    []string
	faults   *Faults // nil unless Options.Faults
}

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

// Start starts the stack described by o and stops it when the test ends.
// It fails the test when a binary does not build, Redis or RabbitMQ do not
// answer, or a service is not ready in time (showing its log).
func Start(t testing.TB, o Options) *Stack {
	t.Helper()
	names := o.Services
	if len(names) == 0 {
		names = Services
	}
	bin := Build(t, names...)

	s := &Stack{
		Prefix:  redistest.Prefix(t),
		Redis:   redistest.Client(t),
		AMQPURL: amqptest.Vhost(t),
		// the ledger: a PostgreSQL schema of the test's own
		DatabaseURL: ledgertest.URL(t),
		LogDir:      o.LogDir,
		services:    map[string]*Service{},
		order:       slices.Clone(names),
	}
	if o.Faults {
		s.Brokers = s.startFaults(t)
	} else {
		s.Brokers = kafkatest.Start(t)
	}
	s.auth, _ = auth.New([]byte(JWTSecret))
	tr := &http.Transport{MaxIdleConns: 1000, MaxIdleConnsPerHost: 1000, IdleConnTimeout: time.Minute}
	t.Cleanup(tr.CloseIdleConnections)
	s.HTTP = &http.Client{Transport: tr, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if s.LogDir == "" {
		s.LogDir = t.TempDir()
	} else if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := &Service{Name: n, AdminAddr: FreePort(t), Log: filepath.Join(s.LogDir, n+".log")}
		if spec, _ := SpecOf(n); spec.HTTPPort != 0 {
			p.Addr = FreePort(t)
		}
		s.services[n] = p
	}
	// One cleanup stops every process at once (registered before any
	// starts, so it runs after the test's own cleanups and before the
	// Redis, vhost and Kafka cleanups registered above).
	t.Cleanup(func() { s.stopAll(t) })

	readyTimeout := o.ReadyTimeout
	if readyTimeout <= 0 {
		readyTimeout = 30 * time.Second
	}
	logLevel := o.LogLevel
	if logLevel == "" {
		logLevel = "warn"
	}
	started := map[string]bool{}
	for _, n := range names {
		p := s.services[n]
		for attempt := 1; ; attempt++ {
			env := s.env(n, logLevel)
			maps.Copy(env, o.Env)
			maps.Copy(env, o.ServiceEnv[n])
			if err := p.Launch(filepath.Join(bin, n), env); err != nil {
				t.Fatalf("stacktest: start %s: %v", n, err)
			}
			err := p.WaitReady(readyTimeout)
			if err == nil {
				break
			}
			b, _ := os.ReadFile(p.Log)
			// Another process took a port between FreePort and the
			// listen: take others, unless a running service was already
			// told the old address.
			if attempt < 3 && p.Exited() && bytes.Contains(b, []byte("address already in use")) && !slices.ContainsFunc(dependents[n], func(d string) bool { return started[d] }) {
				t.Logf("stacktest: %s: a port was taken meanwhile; retrying on other ports", n)
				p.logf.Close()
				p.AdminAddr = FreePort(t)
				if p.Addr != "" {
					p.Addr = FreePort(t)
				}
				continue
			}
			t.Fatalf("stacktest: %s: %v; log:\n%s", n, err, b)
		}
		started[n] = true
	}
	return s
}

// env is the environment the stack gives service n: shared infrastructure
// and secrets, its own listeners, and the URLs of the other services.
func (s *Stack) env(n, logLevel string) map[string]string {
	env := map[string]string{
		"REDIS_ADDR": redistest.Addr, "REDIS_PREFIX": s.Prefix, "AMQP_URL": s.AMQPURL,
		"KAFKA_BROKERS": strings.Join(s.Brokers, ","), "LOG_LEVEL": logLevel, "LOG_FORMAT": "json",
		"JWT_SECRET": JWTSecret, "WEBHOOK_SECRET": WebhookSecret, "SANDBOX_API_KEY": SandboxKey,
		"DATABASE_URL":        s.DatabaseURL,
		"SAFETY_NET_INTERVAL": "1s", "RECONCILE_INTERVAL": "1s", "OUTBOX_SWEEP_AGE": "2s", "SHUTDOWN_TIMEOUT": "5s",
	}
	maps.Copy(env, Wiring(n, s.services))
	if s.faults != nil {
		s.faults.rewrite(env)
	}
	switch n {
	case PaymentSandbox:
		env["WEBHOOK_RETRY_MIN"], env["WEBHOOK_RETRY_MAX"] = "50ms", "1s"
	case Gateway:
		env["DEV_TOKENS"] = "true"
		// The abuse limits stay on (their checks run in every stack
		// test), sized for a stack whose simulated users all come from
		// 127.0.0.1 and poll faster than a person: the gateway's
		// defaults (120 joins a minute per address, 10 requests a second
		// per user) would refuse most of a sale's joins.
		env["RATE_JOINS_PER_MINUTE_PER_IP"] = stackJoinsPerMinutePerIP
		env["RATE_REQUESTS_PER_SECOND_PER_USER"] = stackRequestsPerSecondPerUser
	}
	return env
}

// The abuse limits the stack gives its gateway (Options.Env or ServiceEnv
// override them): on, but far above what one loopback address carrying
// every simulated user, and a Buyer polling every 150-300 ms, send.
const (
	stackJoinsPerMinutePerIP      = "100000000"
	stackRequestsPerSecondPerUser = "100"
)

// Service returns the named service, nil when the stack does not run it.
func (s *Stack) Service(name string) *Service { return s.services[name] }

// URL is the named service's base URL (http://127.0.0.1:port). It panics
// when the stack does not run the service or the service has no listener.
func (s *Stack) URL(name string) string {
	p := s.services[name]
	if p == nil || p.Addr == "" {
		panic(fmt.Sprintf("stacktest: the stack has no HTTP listener for %q", name))
	}
	return p.URL()
}

// GatewayURL is the gateway's base URL.
func (s *Stack) GatewayURL() string { return s.URL(Gateway) }

// NotifierWS is the notifier's WebSocket endpoint, ws://127.0.0.1:port/ws.
func (s *Stack) NotifierWS() string { return "ws://" + s.services[Notifier].Addr + "/ws" }

// DevToken returns a JWT for user with role ("" or auth.RoleAdmin), valid
// for an hour, signed with the stack's secret.
func (s *Stack) DevToken(t testing.TB, user, role string) string {
	t.Helper()
	tok, err := s.auth.Issue(user, role, time.Hour)
	if err != nil {
		t.Fatalf("stacktest: token for %q: %v", user, err)
	}
	return tok
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
// d passes.
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

// stopAll stops every process at once and, when the test failed, logs the
// tail of each log. A process that died during a passing test fails it.
func (s *Stack) stopAll(t testing.TB) {
	var wg sync.WaitGroup
	for _, p := range s.services {
		if p.cmd == nil {
			continue
		}
		if p.Exited() && !p.killed && !t.Failed() {
			t.Errorf("stacktest: %s exited during the test (%v)", p.Name, p.cmd.ProcessState)
		}
		wg.Go(func() { p.Stop(10 * time.Second) })
	}
	wg.Wait()
	for _, n := range s.order {
		p := s.services[n]
		if p.logf != nil {
			p.logf.Close()
		}
		if t.Failed() && p.cmd != nil {
			t.Logf("--- %s log (tail) ---\n%s", n, tail(p.Log, 4000))
		}
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

// Build compiles the named services into a directory of this test binary
// and returns it: one "go build -o <dir>/ ./services/<name>..." from the
// repository root for every service not built yet (one go command shares
// its work across the binaries; on a small machine that is much faster
// than one command per service). Each service is built once per test
// binary; concurrent and later calls reuse it. [Main] deletes the
// directory when the tests end.
func Build(t testing.TB, names ...string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "stacktest-bin-")
		if err != nil {
			builds.mu.Unlock()
			t.Fatal(err)
		}
		builds.dir = dir
	}
	dir := builds.dir
	var missing []string
	b := &build{done: make(chan struct{})}
	waits := map[*build]bool{}
	for _, n := range names {
		if builds.of[n] == nil {
			builds.of[n] = b
			missing = append(missing, n)
		}
		waits[builds.of[n]] = true
	}
	builds.mu.Unlock()
	if len(missing) > 0 {
		b.run(dir, missing)
	}
	var errs []error
	for w := range waits {
		<-w.done
		errs = append(errs, w.err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("stacktest: %v", err)
	}
	return dir
}

// build is one go build of one or more services.
type build struct {
	done chan struct{} // closed when it has finished
	err  error
}

var builds = struct {
	mu  sync.Mutex
	dir string
	of  map[string]*build
}{of: map[string]*build{}}

func (b *build) run(dir string, names []string) {
	defer close(b.done)
	root, err := redistest.RepoRoot()
	if err != nil {
		b.err = err
		return
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(root, "services", n, "main.go")); err != nil {
			b.err = fmt.Errorf("%s has no main.go: %w", n, err)
			return
		}
		args = append(args, "./services/"+n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Main runs the tests of a package that uses stacktest and deletes the
// binaries [Build] made for them. Call it from TestMain:
//
//	func TestMain(m *testing.M) { stacktest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	builds.mu.Lock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
	builds.mu.Unlock()
	os.Exit(code)
}
