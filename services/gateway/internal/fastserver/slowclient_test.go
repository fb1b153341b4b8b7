package fastserver

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// NewServer writes with the write timeout of every net/http server.
func TestNewServerHasTheDefaultLimits(t *testing.T) {
	s := NewServer(nil, httpapi.MaxBody)
	if s.ReadTimeout != service.DefaultHTTPLimits.ReadTimeout || s.WriteTimeout != service.DefaultHTTPLimits.WriteTimeout ||
		s.IdleTimeout != service.DefaultHTTPLimits.IdleTimeout || s.ReadBufferSize != service.DefaultHTTPLimits.MaxHeaderBytes {
		t.Fatalf("read %v, write %v, idle %v, read buffer %d: not service.DefaultHTTPLimits",
			s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.ReadBufferSize)
	}
	if s.WriteTimeout <= 0 {
		t.Fatal("no write timeout: a client that never reads holds its connection for ever")
	}
}

// A client that asks for an answer larger than the socket buffers and
// never reads it does not hold its connection: once the write timeout
// passes, the server drops it (the client then gets a cut answer), while
// a client that reads keeps getting its answers.
func TestSlowReaderIsDroppedAfterTheWriteTimeout(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	big := bytes.Repeat([]byte("x"), 64<<20) // more than any loopback socket buffers
	srv := NewServer(func(rc *fasthttp.RequestCtx) {
		if string(rc.Path()) == "/big" {
			rc.Response.SetBodyRaw(big)
			return
		}
		rc.SetBodyString("small")
	}, httpapi.MaxBody)
	srv.WriteTimeout = writeTimeout
	addr := startFast(t, srv)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// a reading client is served meanwhile
	resp, body := contracttest.Exchange(t, addr, "GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 200 || string(body) != "small" {
		t.Fatalf("a reading client: %d %q", resp.StatusCode, body)
	}
	// the silent one's connection is closed by the server within a few
	// write timeouts, though the client never read a byte
	start := time.Now()
	for srv.GetOpenConnectionsCount() > 0 {
		if time.Since(start) > 20*writeTimeout {
			t.Fatalf("%d connections still open %v after the silent client asked; the write timeout is %v",
				srv.GetOpenConnectionsCount(), time.Since(start), writeTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	dropped := time.Since(start)
	// what it reads now is at most what the kernel had queued before the
	// drop: a cut answer, never the whole of it
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	n, _ := io.Copy(io.Discard, c)
	if n >= int64(len(big)) {
		t.Fatalf("the silent client got the whole answer (%d bytes)", n)
	}
	t.Logf("dropped %v after the request; the client then read %d of %d bytes", dropped, n, len(big))
}

// timedServer serves "ok" with these timeouts, as the gateway serves
// (Serve, httpapi.Listener), and returns a connection to it that has had
// three answers on it.
func timedServer(t *testing.T, read, write, idle time.Duration) (net.Conn, *bufio.Reader) {
	t.Helper()
	srv := NewServer(func(rc *fasthttp.RequestCtx) { rc.SetBodyString("ok") }, httpapi.MaxBody)
	srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = read, write, idle
	c, err := net.Dial("tcp", startFast(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	for i := 0; i < 3; i++ {
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return c, br
}

// closedWithin waits for the server to close c (br reads it), failing
// the test after 20 s; it returns how long that took and what came first.
func closedWithin(t *testing.T, c net.Conn, br *bufio.Reader) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(20 * time.Second))
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
	return time.Since(start), string(rest)
}

// A keep-alive request that stops partway (a slowloris client) is
// answered 408 and dropped after the read timeout, though the
// connection's idle timeout, set before the request began, is far
// longer.
func TestStalledRequestIsDroppedAfterTheReadTimeout(t *testing.T) {
	const read = 300 * time.Millisecond
	c, br := timedServer(t, read, 30*time.Second, time.Minute)
	if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHo"); err != nil {
		t.Fatal(err)
	}
	took, rest := closedWithin(t, c, br)
	// answered in the JSON error format, naming the request's path
	if !strings.HasPrefix(rest, "HTTP/1.1 408 ") || !strings.Contains(rest, `"statusCode":408`) || !strings.Contains(rest, `"path":"/x"`) {
		t.Fatalf("the stalled request got %q, want the JSON 408", rest)
	}
	if took < read/2 || took > 10*read {
		t.Fatalf("dropped %v after it stalled; the read timeout is %v and the idle timeout a minute", took, read)
	}
}

// An idle keep-alive connection is closed after the idle timeout, not
// the longer read timeout.
func TestIdleConnectionIsClosedAfterTheIdleTimeout(t *testing.T) {
	const idle = 400 * time.Millisecond
	c, br := timedServer(t, time.Minute, 30*time.Second, idle)
	if took, rest := closedWithin(t, c, br); rest != "" || took < idle/2 || took > 10*idle {
		t.Fatalf("closed %v after its last answer (sending %q); the idle timeout is %v and the read timeout a minute", took, rest, idle)
	}
}
