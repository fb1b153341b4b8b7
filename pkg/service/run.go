package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

// Main runs a service process: SIGINT and SIGTERM cancel the context given
// to run (a second signal kills the process at once), the logger is built
// from LOG_LEVEL and LOG_FORMAT (info and json when unset or invalid) and
// carries a service field, and cfg, the service's Config preset with the
// defaults it gives in code (its own ADMIN_ADDR), is loaded from the
// environment, validated and logged ([LoadConfig]) before run is given it.
// Main exits 1 when the configuration is refused or run returns an error,
// 0 when run returns nil or context.Canceled after a signal.
func Main[C any](name string, cfg *C, run func(ctx context.Context, cfg *C, log *zap.Logger) error) {
	os.Exit(mainCode(name, withConfig(cfg, run)))
}

// withConfig is run behind [LoadConfig].
func withConfig[C any](cfg *C, run func(context.Context, *C, *zap.Logger) error) func(context.Context, *zap.Logger) error {
	return func(ctx context.Context, log *zap.Logger) error {
		if err := LoadConfig(cfg, log); err != nil {
			return err
		}
		return run(ctx, cfg, log)
	}
}

func mainCode(name string, run func(context.Context, *zap.Logger) error) int {
	log, logErr := NewLogger(envOr("LOG_LEVEL", "info"), envOr("LOG_FORMAT", "json"))
	if logErr != nil {
		log, _ = NewLogger("info", "json")
	}
	log = log.With(zap.String("service", name))
	defer func() { _ = log.Sync() }()
	if logErr != nil {
		log.Warn("bad logging settings, using info/json", zap.Error(logErr))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // restore default handling: a second signal terminates
	}()

	gcPercent := setGCDefault()
	log.Info("starting", zap.Int("pid", os.Getpid()), zap.Int("gogc", gcPercent))
	err := run(ctx, log)
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		log.Error("exiting on error", zap.Error(err))
		return 1
	}
	log.Info("stopped")
	return 0
}

// DefaultGOGC is the garbage collector's target percentage in boxoffice
// services when the GOGC environment variable is not set. The Go default
// of 100 collects more often than these services need: their live heap is
// small (tens of MB) and request garbage dominates, so 400 trades a few MB
// of memory for less CPU per HTTP request (scripts/bench-http.sh;
// docs/benchmarks.md, "What moved the ratios"). GOGC and GOMEMLIMIT set in
// the environment win.
const DefaultGOGC = 400

// setGCDefault applies DefaultGOGC unless GOGC is set, and returns the
// percentage in effect.
func setGCDefault() int {
	if _, ok := os.LookupEnv("GOGC"); ok {
		p := debug.SetGCPercent(100) // read the value the runtime parsed...
		debug.SetGCPercent(p)        // ...and put it back
		return p
	}
	debug.SetGCPercent(DefaultGOGC)
	return DefaultGOGC
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// RunAll runs every fn under one errgroup: the first to fail cancels the
// context of the others, and RunAll returns that error once all returned.
// A fn returning nil does not stop the others. context.Canceled returned
// after ctx itself was cancelled counts as a clean stop (nil).
func RunAll(ctx context.Context, fns ...func(context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, fn := range fns {
		g.Go(func() error { return fn(gctx) })
	}
	err := g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// Server is what Serve runs: an *http.Server, or another server behind
// these three methods (the gateway's fasthttp server, fastserver.Serve).
// Serve returns nil or http.ErrServerClosed once Shutdown was called.
type Server interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
	Close() error
}

// Serve serves srv on ln until ctx is done, then shuts it down gracefully:
// no new connections, requests in flight get up to timeout to finish, after
// which remaining connections are closed and the shutdown error returned.
// A listener failure is returned at once.
func Serve(ctx context.Context, srv Server, ln net.Listener, timeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown %s: %w", ln.Addr(), err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}
