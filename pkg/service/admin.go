package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// CheckTimeout bounds each readiness check of /readyz.
const CheckTimeout = 2 * time.Second

// adminShutdownTimeout bounds the admin server's own graceful shutdown.
const adminShutdownTimeout = 5 * time.Second

// Admin is the operations listener of a service: /metrics (Prometheus, the
// given registry plus Go and process collectors), /healthz (200 while the
// process runs) and /readyz (200 only when every readiness check passes,
// 503 otherwise, with a JSON body listing each check). Keep it off the
// public listener: it is not authenticated.
type Admin struct {
	addr string
	log  *zap.Logger
	reg  *prometheus.Registry
	mux  *http.ServeMux

	mu     sync.Mutex
	checks []namedCheck
	ln     net.Listener
}

type namedCheck struct {
	name string
	fn   func(context.Context) error
}

// CheckResult is one entry of the /readyz body.
type CheckResult struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// ReadyReport is the /readyz body.
type ReadyReport struct {
	Status string        `json:"status"` // "ok" or "unavailable"
	Checks []CheckResult `json:"checks"`
	// PID identifies the process that answered (which instance, and for
	// test harnesses: that the port is really this process's).
	PID int `json:"pid"`
}

// NewAdmin returns an admin server for addr serving reg (a new registry
// when nil). It registers the Go and process collectors on reg unless they
// are there already.
func NewAdmin(addr string, log *zap.Logger, reg *prometheus.Registry) *Admin {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if log == nil {
		log = zap.NewNop()
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			if !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
				log.Warn("admin: register collector", zap.Error(err))
			}
		}
	}
	a := &Admin{addr: addr, log: log, reg: reg, mux: http.NewServeMux()}
	a.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	a.mux.HandleFunc("GET /readyz", a.readyz)
	return a
}

// NewAdminFor is NewAdmin for a service's Common settings: ADMIN_ADDR,
// and /debug/pprof when ADMIN_PPROF is on.
func NewAdminFor(c Common, log *zap.Logger, reg *prometheus.Registry) *Admin {
	a := NewAdmin(c.AdminAddr, log, reg)
	if c.AdminPprof {
		a.EnablePprof()
	}
	return a
}

// EnablePprof serves Go's profiles at /debug/pprof/ (ADMIN_PPROF): CPU
// and heap profiles of a live on-sale are how a slow gateway or a
// notifier's memory per connection gets explained. Off by default: a
// profile or trace costs the process CPU and shows its internals to
// whoever reaches the listener.
func (a *Admin) EnablePprof() {
	a.mux.HandleFunc("/debug/pprof/", pprof.Index)
	a.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	a.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// Registry is the registry /metrics serves.
func (a *Admin) Registry() *prometheus.Registry { return a.reg }

// AddCheck adds a readiness check; /readyz runs every check concurrently,
// each with [CheckTimeout], on every request.
func (a *Admin) AddCheck(name string, fn func(context.Context) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.checks = append(a.checks, namedCheck{name, fn})
}

// Handle adds a handler to the admin mux (for example a debug endpoint).
func (a *Admin) Handle(pattern string, h http.Handler) { a.mux.Handle(pattern, h) }

// Handler is the admin mux, for tests or to mount elsewhere.
func (a *Admin) Handler() http.Handler { return a.mux }

// Ready runs every check and reports the outcome.
func (a *Admin) Ready(ctx context.Context) ReadyReport {
	a.mu.Lock()
	checks := append([]namedCheck(nil), a.checks...)
	a.mu.Unlock()
	rep := ReadyReport{Status: "ok", Checks: make([]CheckResult, len(checks)), PID: os.Getpid()}
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
			defer cancel()
			res := CheckResult{Name: c.name, OK: true}
			if err := runCheck(ctx, c.fn); err != nil {
				res.OK, res.Error = false, err.Error()
			}
			rep.Checks[i] = res
		})
	}
	wg.Wait()
	for _, c := range rep.Checks {
		if !c.OK {
			rep.Status = "unavailable"
		}
	}
	return rep
}

// runCheck turns a panicking check into a failed one.
func runCheck(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx)
}

func (a *Admin) readyz(w http.ResponseWriter, r *http.Request) {
	rep := a.Ready(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if rep.Status != "ok" {
		for _, c := range rep.Checks {
			if !c.OK {
				a.log.Warn("readiness check failed", zap.String("check", c.Name), zap.String("error", c.Error))
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rep)
}

// Listen binds the admin address now (Run does it otherwise), so that a
// caller can learn the port of ":0" from Addr before Run.
func (a *Admin) Listen() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", a.addr)
	if err != nil {
		return fmt.Errorf("admin listen %s: %w", a.addr, err)
	}
	a.ln = ln
	return nil
}

// Close releases the listener bound by Listen, for a caller that fails
// before Run (Run closes it itself on shutdown).
func (a *Admin) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln == nil {
		return nil
	}
	return a.ln.Close()
}

// Addr is the bound address after Listen or Run, or nil.
func (a *Admin) Addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln == nil {
		return nil
	}
	return a.ln.Addr()
}

// Run serves until ctx is done, then shuts down gracefully. It returns nil
// after a clean shutdown and the error when the listener fails.
func (a *Admin) Run(ctx context.Context) error {
	if err := a.Listen(); err != nil {
		return err
	}
	a.mu.Lock()
	ln := a.ln
	a.mu.Unlock()
	lim := DefaultHTTPLimits
	lim.WriteTimeout = 0 // a CPU profile or trace runs as long as asked
	srv := lim.Server("", a.mux)
	a.log.Info("admin listening", zap.String("addr", ln.Addr().String()))
	return Serve(ctx, srv, ln, adminShutdownTimeout)
}
