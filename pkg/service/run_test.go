package service

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestRunAll(t *testing.T) {
	boom := errors.New("boom")
	waitDone := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

	t.Run("first failure cancels the rest", func(t *testing.T) {
		err := RunAll(context.Background(), waitDone, waitDone, func(context.Context) error { return boom })
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want boom", err)
		}
	})
	t.Run("parent cancel is a clean stop", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		if err := RunAll(ctx, waitDone, waitDone); err != nil {
			t.Fatalf("got %v, want nil", err)
		}
	})
	t.Run("nil return does not stop the others", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		stillRunning := false
		err := RunAll(ctx, func(context.Context) error { return nil }, func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(20 * time.Millisecond):
				stillRunning = true
				return nil
			}
		})
		if err != nil || !stillRunning {
			t.Fatalf("err %v, still running %v", err, stillRunning)
		}
	})
}

func TestServeGracefulShutdown(t *testing.T) {
	started := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(100 * time.Millisecond)
		_, _ = w.Write([]byte("done"))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, srv, ln, 5*time.Second) }()

	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = errors.New(resp.Status)
			}
		}
		got <- err
	}()
	<-started
	cancel() // shutdown while the request is in flight: it must still complete
	if err := <-got; err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still accepts after shutdown")
	}
}

func TestServeShutdownTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, srv, ln, 50*time.Millisecond) }()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String()); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	start := time.Now()
	cancel()
	if err := <-served; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Serve with a stuck request: %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
}

func TestMainCode(t *testing.T) {
	t.Setenv("LOG_LEVEL", "fatal")
	if code := mainCode("t", func(context.Context, *zap.Logger) error { return nil }); code != 0 {
		t.Errorf("clean run: exit %d", code)
	}
	if code := mainCode("t", func(context.Context, *zap.Logger) error { return errors.New("x") }); code != 1 {
		t.Errorf("failed run: exit %d", code)
	}
	// context.Canceled without a signal is a failure, not a clean stop
	if code := mainCode("t", func(context.Context, *zap.Logger) error { return context.Canceled }); code != 1 {
		t.Errorf("canceled without signal: exit %d", code)
	}
}

// Main loads the configuration before run: a refused one is exit 1 and
// run never starts; a loaded one is what run is given.
func TestMainLoadsTheConfigFirst(t *testing.T) {
	t.Setenv("LOG_LEVEL", "fatal")
	type config struct {
		Name string `env:"BOXOFFICE_TEST_NAME" required:"true"`
	}
	var got string
	run := func(_ context.Context, cfg *config, _ *zap.Logger) error { got = cfg.Name; return nil }
	t.Setenv("BOXOFFICE_TEST_NAME", "")
	if code := mainCode("t", withConfig(&config{}, run)); code != 1 || got != "" {
		t.Errorf("missing variable: exit %d, run given %q", code, got)
	}
	t.Setenv("BOXOFFICE_TEST_NAME", "box")
	if code := mainCode("t", withConfig(&config{}, run)); code != 0 || got != "box" {
		t.Errorf("loaded: exit %d, run given %q", code, got)
	}
}

func TestSetGCDefault(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)

	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	if got := setGCDefault(); got != DefaultGOGC {
		t.Fatalf("GOGC unset: setGCDefault = %d, want %d", got, DefaultGOGC)
	}
	if p := debug.SetGCPercent(100); p != DefaultGOGC {
		t.Fatalf("GOGC unset: runtime percent %d, want %d", p, DefaultGOGC)
	}

	// GOGC set: the runtime parsed it at start (simulated here) and it wins.
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	if got := setGCDefault(); got != 150 {
		t.Fatalf("GOGC=150: setGCDefault = %d, want 150", got)
	}
	if p := debug.SetGCPercent(100); p != 150 {
		t.Fatalf("GOGC=150: runtime percent %d changed", p)
	}
}
