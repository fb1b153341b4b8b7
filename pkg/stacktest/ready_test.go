package stacktest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A child that fails to bind its admin port must not pass as ready because
// another process (another test's stack) answers /readyz on that port.
func TestWaitReadyChecksThePID(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok","checks":[],"pid":1}`))
	}))
	defer other.Close()
	dir := t.TempDir()
	bin := filepath.Join(dir, "child")
	// the child lingers briefly, then dies, as a service whose listen failed
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nsleep 0.3\necho 'bind: address already in use'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Service{Name: "child", AdminAddr: strings.TrimPrefix(other.URL, "http://"), Log: filepath.Join(dir, "child.log")}
	if err := p.Launch(bin, nil); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	err := p.WaitReady(3 * time.Second)
	if err == nil {
		t.Fatal("a port served by another process passed as the child's readiness")
	}
	t.Logf("refused as it should: %v", err)
}
