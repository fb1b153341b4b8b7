package contracttest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/service"
)

// MaxHeaderBytes is the documented bound of a request's line and header
// fields, their line ends and the blank line that ends them: 16 KiB on
// every port.
const MaxHeaderBytes = 16 << 10

// Head is a GET of path whose request line and headers are exactly size
// bytes (padded with an X-Pad header).
func Head(path string, size int) string {
	head := "GET " + path + " HTTP/1.1\r\nHost: x\r\nX-Pad: "
	const tail = "\r\n\r\n"
	return head + strings.Repeat("a", max(size-len(head)-len(tail), 0)) + tail
}

// HeaderLimit checks the server at addr against the documented header
// limit: a request of exactly MaxHeaderBytes is read (any answer but
// 431), one byte more is a 431 in the Error format, sent as JSON with
// nosniff, that names the request's path.
func (c *Contract) HeaderLimit(addr, path string) {
	c.t.Helper()
	if resp, _ := Exchange(c.t, addr, Head(path, MaxHeaderBytes)); resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
		c.fail("%s: a request of exactly %d bytes of headers answered 431", addr, MaxHeaderBytes)
	}
	resp, body := Exchange(c.t, addr, Head(path, MaxHeaderBytes+1))
	name := fmt.Sprintf("%s: %d bytes of headers", addr, MaxHeaderBytes+1)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		c.fail("%s → %d %s, want 431", name, resp.StatusCode, body)
		return
	}
	if u, err := url.ParseRequestURI(path); err == nil {
		path = u.Path // as a handler sees it
	}
	c.CheckErrorAnswer(name, resp, body, path)
}

// CheckErrorAnswer checks an error answered outside the document's
// operations (a 431, an unknown path): the Error schema, JSON with
// nosniff, and path as the Error's path.
func (c *Contract) CheckErrorAnswer(name string, resp *http.Response, body []byte, path string) {
	c.t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.fail("%s → %d: Content-Type %q, want JSON", name, resp.StatusCode, ct)
	}
	if v := resp.Header.Get("X-Content-Type-Options"); v != "nosniff" {
		c.fail("%s → %d: X-Content-Type-Options %q, want nosniff", name, resp.StatusCode, v)
	}
	var e struct {
		StatusCode int    `json:"statusCode"`
		Path       string `json:"path"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		c.fail("%s → %d: not JSON: %s", name, resp.StatusCode, body)
		return
	}
	var v any
	_ = json.Unmarshal(body, &v)
	if err := c.doc.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		c.fail("%s → %d: not the Error format: %v", name, resp.StatusCode, err)
	}
	if e.StatusCode != resp.StatusCode || e.Path != path {
		c.fail("%s → %d: statusCode %d, path %q; want %d, %q", name, resp.StatusCode, e.StatusCode, e.Path, resp.StatusCode, path)
	}
}

// Exchange sends raw on a new connection to addr and reads the answer
// (the server may answer and close before reading all of raw).
func Exchange(t testing.TB, addr, raw string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(conn, raw) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: read answer: %v", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// ServeNetHTTP serves h as a net/http service serves its port:
// service.NewHTTPServer, on a loopback listener wrapped by wrap
// (httpapi.Listener; this package cannot import it), until the test ends.
// It returns the address.
func ServeNetHTTP(t testing.TB, h http.Handler, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- service.Serve(ctx, service.NewHTTPServer("", h), wrap(ln), time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}
