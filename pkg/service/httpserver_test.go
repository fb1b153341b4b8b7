package service

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startLimited serves a handler that reads the whole body, with short
// limits, and returns its address.
func startLimited(t *testing.T) string {
	t.Helper()
	lim := DefaultHTTPLimits
	lim.ReadHeaderTimeout, lim.ReadTimeout, lim.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	srv := lim.Server("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "body not received in time", http.StatusRequestTimeout)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// closedByServer reads until the server closes the connection (generous
// bound: it fails only if the server never does).
func closedByServer(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("the server kept the connection open: %v (read %q)", err, b)
	}
	return string(b)
}

// Hostile clients against a net/http server built from HTTPLimits: a body
// that never arrives, an idle keep-alive, a header bomb. Each ends in
// well under a second with the limits above.
func TestHTTPLimitsAgainstHostileClients(t *testing.T) {
	addr := startLimited(t)
	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789")
		closedByServer(t, c)
	})
	t.Run("silent after connect", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		closedByServer(t, c)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("first request: %v %v", resp, err)
		}
		resp.Body.Close()
		closedByServer(t, c)
	})
	t.Run("header bomb", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() { // the server may stop reading before it is all sent
			_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Bomb: "+strings.Repeat("a", 1<<20)+"\r\n\r\n")
		}()
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d, want 431", resp.StatusCode)
		}
	})
}

func TestNewHTTPServerHasTheDefaultLimits(t *testing.T) {
	s := NewHTTPServer(":0", http.NotFoundHandler())
	if s.ReadTimeout == 0 || s.ReadHeaderTimeout == 0 || s.IdleTimeout == 0 || s.WriteTimeout == 0 || s.MaxHeaderBytes != MaxHeaderBytes-netHTTPHeaderSlack {
		t.Fatalf("limits %+v", s)
	}
}

// net/http reads netHTTPHeaderSlack bytes past http.Server.MaxHeaderBytes:
// the first request of a connection may have exactly MaxHeaderBytes of
// line and headers, not a byte more (httpapi.Listener makes it so for
// every later request too).
func TestHTTPHeaderLimitIsExact(t *testing.T) {
	addr := startLimited(t)
	for _, tc := range []struct {
		size int
		want int
	}{{MaxHeaderBytes, http.StatusOK}, {MaxHeaderBytes + 1, http.StatusRequestHeaderFieldsTooLarge}} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		head := "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: "
		go func() {
			_, _ = io.WriteString(c, head+strings.Repeat("a", tc.size-len(head)-4)+"\r\n\r\n")
		}()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes of line and headers: %d, want %d", tc.size, resp.StatusCode, tc.want)
		}
	}
}
