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
	"fmt"
	"maps"
	"net/http"
	"os"
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
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
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
		"ORDER_FACT_SWEEP_INTERVAL": "1s", "ORDER_FACT_SWEEP_AGE": "5s",
	}
	maps.Copy(env, Wiring(n, s.services))
	if s.faults != nil {
		s.faults.rewrite(env)
	}
	switch n {
	case PaymentSandbox:
		// retries at most a second apart, and enough of them to outlast
		// the longest outage a fault round makes (Kafka's 30 s): as in
		// production, where the defaults retry for minutes, a webhook
		// answered 503 through an outage is delivered after it
		env["WEBHOOK_RETRY_MIN"], env["WEBHOOK_RETRY_MAX"], env["WEBHOOK_RETRY_ATTEMPTS"] = "50ms", "1s", "90"
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
