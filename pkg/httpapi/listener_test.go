package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// One header limit on both kinds of server (the gateway's fastserver has
// the same tests for fasthttp): exactly 16 KiB of request line and headers
// is read, a byte more is a 431 in the JSON error format
// naming the path, however the path or the connection got there.
func TestHeaderLimitOnEveryServer(t *testing.T) {
	ct := contracttest.Load(t)
	slow := contracttest.ServeNetHTTP(t, New(nil, nil), Listener)
	for name, addr := range map[string]string{"net/http": slow} {
		t.Run(name, func(t *testing.T) {
			ct.HeaderLimit(addr, "/b")
			ct.HeaderLimit(addr, "/api/events/e%201")
			// a request line over the limit: its path as far as it came
			resp, body := contracttest.Exchange(t, addr, "GET /c?q="+strings.Repeat("q", 20<<10)+" HTTP/1.1\r\nHost: x\r\n\r\n")
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("long request line: %d %s", resp.StatusCode, body)
			}
			ct.CheckErrorAnswer("long request line", resp, body, "/c")
		})
	}
	ct.Report()
}

// The second request of a keep-alive connection, sent after the answer
// to the first (whose body does not end a line), is named in its own 431.
func TestHeaderLimitNamesTheRequestOfTheConnection(t *testing.T) {
	ct := contracttest.Load(t)
	slow := contracttest.ServeNetHTTP(t, New(nil, nil), Listener)
	for name, addr := range map[string]string{"net/http": slow} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			_, _ = io.WriteString(conn, "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n{\"name\":\"x\"}")
			first, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, first.Body)
			first.Body.Close()
			go func() { _, _ = io.WriteString(conn, contracttest.Head("/second", contracttest.MaxHeaderBytes+1)) }()
			second, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer second.Body.Close()
			body, _ := io.ReadAll(second.Body)
			if second.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("second request: %d %s", second.StatusCode, body)
			}
			ct.CheckErrorAnswer("second request", second, body, "/second")
		})
	}
	ct.Report()
}

func TestListenBadAddr(t *testing.T) {
	if _, err := Listen("256.0.0.1:1"); err == nil {
		t.Fatal("no error for a bad address")
	}
}

// scanAll runs a fresh watchedConn's scan over in, cut into reads of at
// most step bytes: whether it refused, the path it names and its state.
func scanAll(in []byte, step int) (bool, string, uint8, int) {
	var c watchedConn
	for len(in) > 0 {
		n := min(step, len(in))
		if c.scan(in[:n]) {
			return true, c.path(), c.state, c.head
		}
		in = in[n:]
	}
	return false, c.path(), c.state, c.head
}

// How a request arrives in reads changes nothing the watch decides, and
// no input makes it panic: the bytes come from anyone.
func FuzzWatchedConnScan(f *testing.F) {
	for _, s := range []string{
		"GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /b?x=1 HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
		"\r\nGET http://h/c HTTP/1.1\r\n\n",
		"NOT HTTP AT ALL\r\n\r\n",
		"get /lower HTTP/1.1\r\n\r\n",
		"GET /e%20f HTTP/1.1\r\nX: " + strings.Repeat("a", 17<<10) + "\r\n\r\n",
		"GET /" + strings.Repeat("p", 600) + " HTTP/1.1\r\n\r\n",
	} {
		f.Add([]byte(s), uint8(7))
	}
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		r1, p1, s1, h1 := scanAll(in, len(in)+1)
		r2, p2, s2, h2 := scanAll(in, int(step)+1)
		if r1 != r2 || p1 != p2 || !r1 && (s1 != s2 || h1 != h2) { // a refusal stops where it is
			t.Fatalf("in one read: refused %v, path %q, state %d, head %d; in reads of %d: %v, %q, %d, %d",
				r1, p1, s1, h1, int(step)+1, r2, p2, s2, h2)
		}
		if r1 && (h1 <= service.MaxHeaderBytes || h2 <= service.MaxHeaderBytes) {
			t.Fatalf("refused a head of %d bytes", h1)
		}
	})
}

// BenchmarkWatchedConnScan: what watching costs a typical join on the
// gateway's fasthttp server (one request line and headers, one body).
func BenchmarkWatchedConnScan(b *testing.B) {
	req := []byte("POST /api/booking/request HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: wrk\r\n" +
		"Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxODAwMDAzNjAwfQ.c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0\r\n" +
		"Content-Type: application/json\r\nContent-Length: 19\r\n\r\n{\"event_id\":\"demo\"}")
	var c watchedConn
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		c.state = atRequest
		c.scan(req)
	}
}

// Write's JSON answer says X-Content-Type-Options: nosniff, like every
// other (the gateway's fastserver checks its own and the bridge's).
func TestWriteSaysNoSniff(t *testing.T) {
	w := httptest.NewRecorder()
	Write(w, http.StatusNotFound, CodeNotFound, "no", "/x")
	if w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("Write: headers %v", w.Header())
	}
}

// Only an answer's status line starts a new request: after a 101 the
// connection speaks WebSocket, and nothing the client sends then is
// taken for a request line, however it looks.
func TestWatchAfterAnUpgrade(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := &watchedConn{Conn: server}
	go func() { _, _ = io.Copy(io.Discard, client) }()
	c.scan([]byte("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n"))
	if _, err := c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	for _, frame := range [][]byte{{0x81, 0x05, 'h', 'e', 'l', 'l', 'o'}, []byte("\x89\x00")} {
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	if c.scan([]byte("\nGET /fake HTTP/1.1\r\nX: " + strings.Repeat("a", 20<<10))) {
		t.Fatal("a WebSocket message was taken for a request over the header limit")
	}
	if c.path() != "/ws" {
		t.Fatalf("path %q after the upgrade, want /ws", c.path())
	}
}
