package stacktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// Target is a piece of infrastructure behind a fault proxy.
type Target string

// The targets of [Faults]: every connection a service of a stack started
// with [Options.Faults] makes to one of them goes through the proxy.
const (
	TargetRedis    Target = "redis"
	TargetRabbitMQ Target = "rabbitmq"
	TargetKafka    Target = "kafka"
	TargetPostgres Target = "postgres"
	// TargetProvider is the payment provider (the payment-sandbox's HTTP
	// listener) as the gateway calls it, TargetWebhooks the
	// payment-webhook as the provider calls it: cutting both is a
	// provider outage.
	TargetProvider Target = "provider"
	TargetWebhooks Target = "webhooks"
)

// Targets lists every [Target].
var Targets = []Target{TargetRedis, TargetRabbitMQ, TargetKafka, TargetPostgres, TargetProvider, TargetWebhooks}

// Faults are in-process Shopify toxiproxy proxies between a stack's service
// processes and Redis, RabbitMQ, the embedded Kafka and PostgreSQL, and
// between the gateway and the payment provider and the provider and the
// payment-webhook. Only the
// stack's own processes connect through them (the test's [Stack.Redis] and
// any client it opens with the real addresses do not), so a fault never
// touches the shared brokers other tests use.
//
// Kafka: the broker advertises the proxy's address in its metadata (its
// listener reports the proxy's address as its own), so every connection of
// a Kafka client, not only the bootstrap one, goes through the proxy.
type Faults struct {
	t       testing.TB // the stack's test: proxies of services start late
	server  *toxiproxy.ApiServer
	proxies map[Target]*toxiproxy.Proxy
	mu      sync.Mutex
	n       int // toxics added, for unique names
}

// Faults returns the stack's fault proxies; nil unless the stack was
// started with [Options.Faults].
func (s *Stack) Faults() *Faults { return s.faults }

// startFaults starts the proxies of Redis, RabbitMQ and PostgreSQL and the
// embedded Kafka behind its proxy, and returns the brokers' addresses (the
// proxy's). Everything is closed when the test ends.
func (s *Stack) startFaults(t testing.TB) []string {
	t.Helper()
	// toxics log through zerolog's global logger (trace lines per chunk)
	zerolog.SetGlobalLevel(zerolog.Disabled)
	f := &Faults{
		t:       t,
		server:  toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop()),
		proxies: map[Target]*toxiproxy.Proxy{},
	}
	s.faults = f
	add := func(tg Target, upstream string) {
		p := toxiproxy.NewProxy(f.server, string(tg), FreePort(t), upstream)
		if err := p.Start(); err != nil {
			t.Fatalf("stacktest: fault proxy %s: %v", tg, err)
		}
		t.Cleanup(p.Stop)
		f.proxies[tg] = p
	}
	add(TargetRedis, redistest.Addr)
	u, err := url.Parse(s.AMQPURL)
	if err != nil {
		t.Fatal(err)
	}
	add(TargetRabbitMQ, u.Host)
	u, err = url.Parse(s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	add(TargetPostgres, u.Host)

	// Kafka: the proxy's address is chosen first, the broker listens on a
	// port of its own and advertises the proxy's.
	kafkaProxy := FreePort(t)
	var real string
	kafkatest.NewCluster(t, kfake.ListenFn(func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		if real == "" {
			real = ln.Addr().String()
		}
		return advertised{ln, kafkaProxy}, nil
	}))
	p := toxiproxy.NewProxy(f.server, string(TargetKafka), kafkaProxy, real)
	if err := p.Start(); err != nil {
		t.Fatalf("stacktest: fault proxy kafka: %v", err)
	}
	t.Cleanup(p.Stop)
	f.proxies[TargetKafka] = p
	return []string{kafkaProxy}
}

// advertised is a listener that reports another address as its own.
type advertised struct {
	net.Listener
	addr string
}

func (a advertised) Addr() net.Addr {
	ta, err := net.ResolveTCPAddr("tcp", a.addr)
	if err != nil {
		return a.Listener.Addr()
	}
	return ta
}

// rewrite points a service's environment at the proxies: the brokers',
// and the provider's and the webhooks' (started with the first service
// that calls them, when their address is known).
func (f *Faults) rewrite(env map[string]string) {
	env["REDIS_ADDR"] = f.Addr(TargetRedis)
	for _, k := range []string{"AMQP_URL", "DATABASE_URL", "PAYMENT_PROVIDER_URL", "WEBHOOK_URL"} {
		tg := map[string]Target{"AMQP_URL": TargetRabbitMQ, "DATABASE_URL": TargetPostgres,
			"PAYMENT_PROVIDER_URL": TargetProvider, "WEBHOOK_URL": TargetWebhooks}[k]
		if u, err := url.Parse(env[k]); err == nil && env[k] != "" {
			u.Host = f.proxy(tg, u.Host)
			env[k] = u.String()
		}
	}
}

// proxy returns the listen address of tg's proxy, starting it towards
// upstream if it has not started.
func (f *Faults) proxy(tg Target, upstream string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.proxies[tg]; p != nil {
		return p.Listen
	}
	p := toxiproxy.NewProxy(f.server, string(tg), FreePort(f.t), upstream)
	if err := p.Start(); err != nil {
		f.t.Fatalf("stacktest: fault proxy %s: %v", tg, err)
	}
	f.t.Cleanup(p.Stop)
	f.proxies[tg] = p
	return p.Listen
}

// Addr is the proxy's listen address for tg.
func (f *Faults) Addr(tg Target) string { return f.get(tg).Listen }

func (f *Faults) get(tg Target) *toxiproxy.Proxy {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.proxies[tg]
	if p == nil {
		f.t.Fatalf("stacktest: no fault proxy %s (its service is not in the stack)", tg)
	}
	return p
}

// Down cuts tg off: the proxy stops listening (new connections are
// refused) and closes every connection through it.
func (f *Faults) Down(tg Target) { f.get(tg).Stop() }

// Up lets connections to tg through again after [Faults.Down].
func (f *Faults) Up(t testing.TB, tg Target) {
	t.Helper()
	// the listener's port was just freed: retry a bind that races with the
	// kernel's cleanup
	var err error
	for range 50 {
		if err = f.get(tg).Start(); err == nil || err == toxiproxy.ErrProxyAlreadyStarted {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("stacktest: fault proxy %s back up: %v", tg, err)
}

// Outage cuts tg off for d (a timed outage), then lets it back.
func (f *Faults) Outage(t testing.TB, tg Target, d time.Duration) {
	t.Helper()
	f.Down(tg)
	time.Sleep(d)
	f.Up(t, tg)
}

// Toxic adds a toxiproxy toxic of type typ ("latency", "bandwidth",
// "reset_peer", "timeout", "slow_close", "limit_data", "slicer") with attrs
// on stream ("upstream": towards the server, "downstream": towards the
// services) of tg, and returns the function that removes it.
func (f *Faults) Toxic(t testing.TB, tg Target, typ, stream string, attrs map[string]any) (remove func()) {
	t.Helper()
	f.mu.Lock()
	f.n++
	name := fmt.Sprintf("%s-%s-%d", typ, stream, f.n)
	f.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": maps.Clone(attrs)})
	p := f.get(tg)
	if _, err := p.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
		t.Fatalf("stacktest: toxic %s on %s: %v", typ, tg, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := p.Toxics.RemoveToxic(t.Context(), name); err != nil {
				t.Errorf("stacktest: remove toxic %s: %v", name, err)
			}
		})
	}
}

// Latency delays every chunk of data from tg to the services by d (plus a
// little jitter) until the returned function is called.
func (f *Faults) Latency(t testing.TB, tg Target, d time.Duration) (remove func()) {
	return f.Toxic(t, tg, "latency", "downstream", map[string]any{"latency": d.Milliseconds(), "jitter": d.Milliseconds() / 10})
}

// Bandwidth limits the data from tg to the services to kbps KB/s until the
// returned function is called.
func (f *Faults) Bandwidth(t testing.TB, tg Target, kbps int) (remove func()) {
	return f.Toxic(t, tg, "bandwidth", "downstream", map[string]any{"rate": kbps})
}

// Reset resets (TCP RST) every connection to tg that carries data during
// d: the services see "connection reset by peer" and reconnect.
func (f *Faults) Reset(t testing.TB, tg Target, d time.Duration) {
	up := f.Toxic(t, tg, "reset_peer", "upstream", map[string]any{"timeout": 0})
	down := f.Toxic(t, tg, "reset_peer", "downstream", map[string]any{"timeout": 0})
	time.Sleep(d)
	up()
	down()
}

// HalfOpen makes every connection to tg half-open until the returned
// function is called: connections are accepted and stay open but no byte
// passes in either direction (a peer that vanished without a FIN), so only
// the services' own timeouts notice.
func (f *Faults) HalfOpen(t testing.TB, tg Target) (remove func()) {
	up := f.Toxic(t, tg, "timeout", "upstream", map[string]any{"timeout": 0})
	down := f.Toxic(t, tg, "timeout", "downstream", map[string]any{"timeout": 0})
	return func() { up(); down() }
}

// Kill ends the named service's process with SIGKILL (no graceful
// shutdown: unacked deliveries, open transactions and buffered writes are
// lost as in a crash) and waits for it to be gone.
func (s *Stack) Kill(t testing.TB, name string) {
	t.Helper()
	p := s.services[name]
	if p == nil || p.cmd == nil {
		t.Fatalf("stacktest: no process %q to kill", name)
	}
	p.killed = true
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Restart starts the named service again, with the same binary, ports and
// environment, after [Stack.Kill] or [Service.Stop], and waits until it is
// ready. Its log is appended to.
func (s *Stack) Restart(t testing.TB, name string) {
	t.Helper()
	p := s.services[name]
	if p == nil || p.cmd == nil || !p.Exited() {
		t.Fatalf("stacktest: %q is not a stopped process", name)
	}
	if p.logf != nil {
		p.logf.Close()
	}
	var err error
	for range 3 { // the admin or HTTP port may linger a moment
		if err = p.Launch(p.bin, p.env); err != nil {
			break
		}
		if err = p.WaitReady(30 * time.Second); err == nil {
			return
		}
		if !p.Exited() {
			break
		}
		time.Sleep(time.Second)
		p.logf.Close()
		if l := string(tail(p.Log, 1000)); strings.Contains(l, "admin listen") && strings.Contains(l, "address already in use") {
			// another test binary took the free-looking admin port while
			// the service was down; nothing else calls a service's admin
			// port, so the service moves to another
			t.Logf("stacktest: %s: its admin port was taken meanwhile; restarting on another", name)
			p.AdminAddr = FreePort(t)
			p.env["ADMIN_ADDR"] = p.AdminAddr
		}
	}
	t.Fatalf("stacktest: restart %s: %v; log:\n%s", name, err, tail(p.Log, 4000))
}

// Setenv sets key to value ("": removes it) in the environment the named
// service gets at its next [Stack.Restart].
func (s *Stack) Setenv(t testing.TB, name, key, value string) {
	t.Helper()
	p := s.services[name]
	if p == nil || p.env == nil {
		t.Fatalf("stacktest: no process %q", name)
	}
	if value == "" {
		delete(p.env, key)
	} else {
		p.env[key] = value
	}
}

// StartInstance starts one more instance of a running service, on ports of
// its own, named name + "#" + the instance's number (2, 3, …), and returns
// it once ready. It runs until the test ends (or [Stack.Kill]).
func (s *Stack) StartInstance(t testing.TB, name string) *Service {
	t.Helper()
	orig := s.services[name]
	if orig == nil || orig.cmd == nil {
		t.Fatalf("stacktest: %q is not running", name)
	}
	id := name
	for i := 2; s.services[id] != nil || id == name; i++ {
		id = fmt.Sprintf("%s#%d", name, i)
	}
	p := &Service{Name: id, AdminAddr: FreePort(t), Log: strings.TrimSuffix(orig.Log, ".log") + "-" + id[len(name)+1:] + ".log"}
	env := maps.Clone(orig.env)
	env["ADMIN_ADDR"] = p.AdminAddr
	if orig.Addr != "" {
		p.Addr = FreePort(t)
		env["HTTP_ADDR"] = p.Addr
	}
	s.services[id] = p
	s.order = append(s.order, id)
	if err := p.Launch(orig.bin, env); err != nil {
		t.Fatalf("stacktest: start %s: %v", id, err)
	}
	if err := p.WaitReady(30 * time.Second); err != nil {
		b, _ := os.ReadFile(p.Log)
		t.Fatalf("stacktest: %s: %v; log:\n%s", id, err, b)
	}
	return p
}

// Killed reports whether the process was ended by [Stack.Kill] (and not
// restarted since).
func (p *Service) Killed() bool { return p.killed }
