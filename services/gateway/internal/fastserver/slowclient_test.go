package fastserver

import (
	"bytes"
	"io"
	"net"
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
