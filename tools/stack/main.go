// Command stack runs the whole boxoffice stack for development (what `make
// run` calls after `make infra build`): the embedded Kafka broker
// (bin/kafka-dev on 127.0.0.1:9092, unless a broker already answers there),
// then every service of stacktest.Specs whose binary is in -bin, in start
// order, each on its development ports and waiting for its /readyz before
// the next starts; then it seeds demo events (scripts/seed-dev.sh) and
// prints the URLs.
//
// Each service logs to <-logs>/<service>.log, echoed here prefixed with its
// name. Ctrl-C (SIGINT), SIGTERM or SIGHUP stops the services, then Kafka
// (each runs in a process group of its own, so the terminal's Ctrl-C
// reaches only this command). If a service dies, the stack stops and the
// command exits 1.
//
// Environment given to every service unless already set (development
// values; never use them in production):
//
//	DEV_TOKENS=true LOG_FORMAT=console
//	JWT_SECRET=dev-jwt-secret-not-for-production
//	WEBHOOK_SECRET=dev-webhook-secret
//	PASS_KEYS=dev-pass-1:<a fixed seed> (the admission pass's Ed25519 key)
//	DATABASE_URL=postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable
//	  (the database scripts/ensure-infra.sh creates)
//	AMQP_URL=amqp://guest:guest@127.0.0.1:5672/boxoffice-dev (the vhost is
//	  created with rabbitmqctl when it can be; otherwise the services'
//	  default "/")
//
// The gateway's abuse limits keep their defaults (on); set
// RATE_JOINS_PER_MINUTE_PER_IP or RATE_REQUESTS_PER_SECOND_PER_USER to
// change them.
//
// The public listeners (8080-8083) bind 127.0.0.1: with development tokens
// on, anyone who reaches the gateway can mint an admin token, and the
// development secrets above are public. STACK_LISTEN_HOST opens them
// (STACK_LISTEN_HOST=0.0.0.0 make run: every interface, for a phone or
// another machine on a network you trust); the stack then says out loud
// what it exposes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// devEnv is the development environment of every service (see the package
// comment); a variable already set in the caller's environment wins.
var devEnv = [][2]string{
	{"DEV_TOKENS", "true"},
	{"LOG_FORMAT", "console"},
	{"JWT_SECRET", devJWTSecret},
	{"WEBHOOK_SECRET", "dev-webhook-secret"},
	{"PASS_KEYS", "dev-pass-1:lb3E06HVniHLsVjhSd1bQHPg-Y5kHfQjBsVGW8uUcMo"},
	{"DATABASE_URL", "postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable"},
}

// listenHostVar names the variable that opens the public listeners to
// more than loopback (see the package comment).
const listenHostVar = "STACK_LISTEN_HOST"

// listenHost is the host the public listeners bind: 127.0.0.1 unless
// STACK_LISTEN_HOST names another (0.0.0.0 or :: for every interface).
func listenHost(getenv func(string) string) string {
	if h := getenv(listenHostVar); h != "" {
		return h
	}
	return "127.0.0.1"
}

// serviceEnv is the environment the stack gives service n besides the
// development defaults (devEnv, already in the process's environment):
// its listeners, the public one on host, and the other services'
// addresses (stacktest.Wiring).
func serviceEnv(n string, procs map[string]*stacktest.Service, host string) map[string]string {
	env := stacktest.Wiring(n, procs)
	if p := procs[n]; p.Addr != "" {
		_, port, _ := net.SplitHostPort(p.Addr)
		env["HTTP_ADDR"] = net.JoinHostPort(host, port)
	}
	return env
}

// exposureWarning is what the stack says when its public listeners are
// not on loopback only ("" when they are).
func exposureWarning(host string, getenv func(string) string) string {
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return ""
	}
	w := fmt.Sprintf("the public listeners (8080-8083) bind %s (%s)", host, listenHostVar)
	if getenv("DEV_TOKENS") == "true" {
		w += "; DEV_TOKENS=true: anyone who reaches the gateway can mint an admin token"
	}
	if getenv("JWT_SECRET") == devJWTSecret {
		w += "; JWT_SECRET is the public development secret: anyone can sign an admin token"
	}
	return w
}

// devJWTSecret is JWT_SECRET's development value (public: it is here).
const devJWTSecret = "dev-jwt-secret-not-for-production"

// devVhost is the development stack's RabbitMQ vhost: the services declare
// quorum queues, and "/" of a machine that ran an older stack may hold
// classic queues of the same names (a queue cannot change type; the
// declare would fail with PRECONDITION_FAILED, docs/runbook.md).
const devVhost = "boxoffice-dev"

// The development admin account (never in production: anyone reading
// this file knows its password).
const (
	devAdmin         = "dev-admin"
	devAdminPassword = "dev-admin-password"
)

func main() {
	bin := flag.String("bin", "bin", "directory of the service binaries (make build)")
	logs := flag.String("logs", ".run", "directory of the services' logs")
	wait := flag.Duration("wait", 60*time.Second, "how long each service may take to be ready")
	stopWait := flag.Duration("stop-wait", 20*time.Second, "how long a stopping service may take before SIGKILL")
	seed := flag.String("seed", "scripts/seed-dev.sh", "script run once the stack is up (\"\" for none)")
	flag.Parse()

	stopWithParent()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if err := run(ctx, *bin, *logs, *wait, *stopWait, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "stack:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Printf("stack: "+format+"\n", args...) }

func run(ctx context.Context, bin, logs string, wait, stopWait time.Duration, seed string) error {
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	for _, kv := range devEnv {
		if os.Getenv(kv[0]) == "" {
			os.Setenv(kv[0], kv[1])
		}
	}
	host := listenHost(os.Getenv)
	if w := exposureWarning(host, os.Getenv); w != "" {
		say("WARNING: %s", w)
	}
	if os.Getenv("AMQP_URL") == "" {
		if err := ensureVhost(devVhost); err != nil {
			say("RabbitMQ vhost %s: %v; using the services' default vhost", devVhost, err)
		} else {
			os.Setenv("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"+devVhost)
		}
	}

	// The services that are built, on their development ports.
	procs := map[string]*stacktest.Service{}
	var order []string
	for _, s := range stacktest.Specs {
		if _, err := os.Stat(filepath.Join(bin, s.Name)); err != nil {
			say("%s: not built, skipped", s.Name)
			continue
		}
		// Refuse to start next to a running stack: the services would
		// fail to bind their ports.
		for _, addr := range []string{s.AdminAddr(), s.Addr()} {
			if addr != "" && portOpen(addr) {
				return fmt.Errorf("%s (%s) is in use: is the stack already running?", addr, s.Name)
			}
		}
		procs[s.Name] = &stacktest.Service{Name: s.Name, AdminAddr: s.AdminAddr(), Addr: s.Addr(),
			Log: filepath.Join(logs, s.Name+".log"), Echo: os.Stdout, OwnGroup: true}
		order = append(order, s.Name)
	}

	var kafka *stacktest.Service
	var started []*stacktest.Service
	defer func() { stopAll(started, kafka, stopWait, logs) }()

	if portOpen(stacktest.KafkaDevAddr) {
		say("kafka: a broker already answers on %s; using it", stacktest.KafkaDevAddr)
	} else {
		say("starting %s (%s)", stacktest.KafkaDev, stacktest.KafkaDevAddr)
		kafka = &stacktest.Service{Name: stacktest.KafkaDev, Log: filepath.Join(logs, stacktest.KafkaDev+".log"), Echo: os.Stdout, OwnGroup: true}
		if err := kafka.Launch(filepath.Join(bin, stacktest.KafkaDev), map[string]string{"KAFKA_DEV_ADDR": stacktest.KafkaDevAddr}); err != nil {
			return fmt.Errorf("%s: %w (build the services first: make build)", stacktest.KafkaDev, err)
		}
		if err := awaitPort(ctx, kafka, stacktest.KafkaDevAddr, wait); err != nil {
			return err
		}
	}

	for _, n := range order {
		p := procs[n]
		say("starting %s (admin %s)", n, p.AdminAddr)
		if err := p.Launch(filepath.Join(bin, n), serviceEnv(n, procs, host)); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		started = append(started, p)
		if err := ready(ctx, p, wait); err != nil {
			return err
		}
	}

	if seed != "" && procs[stacktest.Gateway] != nil {
		say("seeding development data (%s)", seed)
		cmd := exec.CommandContext(ctx, seed)
		cmd.Env = append(os.Environ(), "GATEWAY_URL="+procs[stacktest.Gateway].URL())
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil && ctx.Err() == nil {
			say("%s failed (%v); the stack keeps running", seed, err)
		}
	}

	signIn := ""
	if gw := procs[stacktest.Gateway]; gw != nil {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, stacktest.Gateway), "operators", "add", "-name", devAdmin, "-role", "admin",
			"-password-stdin", "-reset")
		cmd.Stdin = strings.NewReader(devAdminPassword + "\n")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil && ctx.Err() == nil {
			say("development admin account not made (%v); the stack keeps running", err)
		} else {
			signIn = fmt.Sprintf("operators: the console at %s/admin/ (sign in as %s, password %s; development only)",
				strings.Replace(gw.URL(), "127.0.0.1", "localhost", 1), devAdmin, devAdminPassword)
		}
	}

	fmt.Println()
	say("stack is up. Open:")
	byPort := slices.SortedFunc(slices.Values(stacktest.Specs), func(a, b stacktest.Spec) int { return a.HTTPPort - b.HTTPPort })
	for _, s := range byPort {
		if p := procs[s.Name]; p != nil && s.HTTPPort != 0 {
			fmt.Printf("    http://localhost:%d  %s\n", s.HTTPPort, s.Purpose)
		}
	}
	if signIn != "" {
		say("%s", signIn)
	}
	say("logs in %s/; Ctrl-C stops everything", logs)
	fmt.Println()

	// Block until a signal, or until a process exits.
	exited := make(chan *stacktest.Service, len(started)+1)
	for _, p := range append(slices.Clone(started), kafka) {
		if p != nil {
			go func() { <-p.Done(); exited <- p }()
		}
	}
	select {
	case <-ctx.Done():
		return nil
	case p := <-exited:
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s exited; stopping the stack (its log: %s)", p.Name, p.Log)
	}
}

// ready waits for p's /readyz, giving up when ctx ends.
func ready(ctx context.Context, p *stacktest.Service, wait time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- p.WaitReady(wait) }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("%s: %w; see %s", p.Name, err, p.Log)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// awaitPort waits until addr accepts connections, failing if p exits.
func awaitPort(ctx context.Context, p *stacktest.Service, addr string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for !portOpen(addr) {
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited during startup; see %s", p.Name, p.Log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not listening on %s after %v; see %s", p.Name, addr, wait, p.Log)
		}
	}
	return nil
}

// stopAll stops the services at once, then Kafka.
func stopAll(started []*stacktest.Service, kafka *stacktest.Service, timeout time.Duration, logs string) {
	if len(started) == 0 && kafka == nil {
		return
	}
	say("stopping...")
	var wg sync.WaitGroup
	for _, p := range started {
		wg.Go(func() { p.Stop(timeout) })
	}
	wg.Wait()
	if kafka != nil {
		kafka.Stop(timeout)
	}
	say("stopped (logs in %s/)", logs)
}

func portOpen(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// ensureVhost creates the RabbitMQ vhost, with every permission for guest,
// unless it exists (rabbitmqctl, as pkg/amqpx/amqptest does).
func ensureVhost(vhost string) error {
	if _, err := exec.LookPath("rabbitmqctl"); err != nil {
		return errors.New("rabbitmqctl not found")
	}
	ctl := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "rabbitmqctl", append([]string{"-q"}, args...)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("rabbitmqctl %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	out, err := ctl("list_vhosts")
	if err != nil {
		return err
	}
	if slices.Contains(strings.Fields(out), vhost) {
		return nil
	}
	if _, err := ctl("add_vhost", vhost); err != nil {
		return err
	}
	_, err = ctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
	return err
}
