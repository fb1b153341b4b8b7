package fastserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/requestid"
)

// fastFixture: fast routes /b (POST, Bind), /panic, /fail, /id (GET), and
// a gin engine behind them with /slow (GET).
func fastFixture(m *httpapi.Metrics) fasthttp.RequestHandler { return fastFixtureKeeping(m, nil) }

// fastFixtureKeeping: kept receives the method and X-Keep header of each
// GET /keep.
func fastFixtureKeeping(m *httpapi.Metrics, kept chan<- [2]string) fasthttp.RequestHandler {
	engine := httpapi.New(nil, m)
	engine.GET("/slow", func(c *gin.Context) { c.JSON(200, gin.H{"via": "gin"}) })
	engine.GET("/abort", func(*gin.Context) { panic(http.ErrAbortHandler) })
	engine.GET("/plain", func(c *gin.Context) { _, _ = c.Writer.Write([]byte("<html>hi</html>")) })
	engine.GET("/keep", func(c *gin.Context) {
		kept <- [2]string{c.Request.Method, c.GetHeader("X-Keep")}
		c.Header("X-Out", "1")
		c.Status(204)
	})
	return New(nil, m, engine,
		Route{Method: "POST", Path: "/b", Handle: func(c *Ctx) {
			var b body
			if c.Bind(&b) {
				out, _ := json.Marshal(b)
				c.WriteJSON(200, out)
			}
		}},
		Route{Method: "GET", Path: "/panic", Handle: func(c *Ctx) {
			c.WriteJSON(200, []byte(`{"half":`))
			panic("boom")
		}},
		Route{Method: "GET", Path: "/fail", Handle: func(c *Ctx) { c.Fail(fmt.Errorf("x: %w", booking.ErrSoldOut)) }},
		Route{Method: "GET", Path: "/unavailable", Handle: func(c *Ctx) { c.Fail(errors.New("redis: connection refused")) }},
		Route{Method: "GET", Path: "/id", Handle: func(c *Ctx) {
			c.WriteJSON(200, []byte(`"`+requestid.From(c.Context())+`"`))
		}},
	)
}

func doFast(h fasthttp.RequestHandler, method, path, payload string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(payload))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	ServeRequest(h, w, req)
	return w
}

// Fast routes answer like gin routes: the same binding rules, the same
// JSON errors (a panic is a 500, whatever the handler had written), a 405
// for a fast path with another method; other paths reach the gin engine.
func TestRoutes(t *testing.T) {
	h := fastFixture(httpapi.NewMetrics(nil))
	cases := append(routeCases[:len(routeCases):len(routeCases)],
		routeCase{"GET", "/unavailable", ``, 503, httpapi.CodeUnavailable},
		routeCase{"GET", "/slow", ``, 200, ""},                    // the engine's
		routeCase{"GET", "/abort", ``, 500, httpapi.CodeInternal}, // escaped gin's recovery
	)
	for _, tc := range cases {
		w := doFast(h, tc.method, tc.path, tc.payload)
		var e httpapi.Error
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		tc.check(t, w.Code, e)
		if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, ct)
		}
		if w.Header().Get(httpapi.HeaderRequestID) == "" {
			t.Errorf("%s %s: no %s", tc.method, tc.path, httpapi.HeaderRequestID)
		}
	}
	if w := doFast(h, "GET", "/unavailable", ""); strings.Contains(w.Body.String(), "refused") {
		t.Errorf("a 503 leaks the internal error: %s", w.Body)
	}
}

// The request id of a fast route: the client's when well formed, else a
// new one; echoed, and in the Context handed to the store and publishers.
func TestFastRequestID(t *testing.T) {
	h := fastFixture(httpapi.NewMetrics(nil))
	for _, tc := range []struct{ sent, want string }{
		{"client-id-1", "client-id-1"},
		{"", ""},
		{"bad id with spaces", ""},
		{strings.Repeat("x", 100), ""},
	} {
		w := doFast(h, "GET", "/id", "", httpapi.HeaderRequestID, tc.sent)
		echoed := w.Header().Get(httpapi.HeaderRequestID)
		var inCtx string
		_ = json.Unmarshal(w.Body.Bytes(), &inCtx)
		if echoed == "" || echoed != inCtx || (tc.want != "" && inCtx != tc.want) || (tc.want == "" && inCtx == tc.sent) {
			t.Errorf("sent %q: echoed %q, in context %q", tc.sent, echoed, inCtx)
		}
	}
}

// Fast routes are counted in the same metrics as gin routes, under their
// path, with the status they answered.
func TestFastMetrics(t *testing.T) {
	m := httpapi.NewMetrics(nil)
	h := fastFixture(m)
	doFast(h, "POST", "/b", `{"name":"x"}`)
	doFast(h, "POST", "/b", `{}`)
	doFast(h, "GET", "/b", ``)
	doFast(h, "GET", "/panic", ``)
	doFast(h, "GET", "/slow", ``)
	for _, tc := range []struct {
		route, method, status string
	}{{"/b", "POST", "200"}, {"/b", "POST", "400"}, {"/b", "GET", "405"}, {"/panic", "GET", "500"}, {"/slow", "GET", "200"}} {
		if got := testutil.ToFloat64(m.Requests.WithLabelValues(tc.route, tc.method, tc.status)); got != 1 {
			t.Errorf("requests{%s %s %s} = %v, want 1", tc.route, tc.method, tc.status, got)
		}
	}
}

// What fasthttp itself rejects (malformed, headers or body too large) is
// answered in the JSON error format too, over a real connection.
func TestFastServerErrors(t *testing.T) {
	addr := startFast(t, NewServer(fastFixture(httpapi.NewMetrics(nil)), 1<<20))
	// path: the request's path, also when fasthttp could not read its
	// headers (Listener), and empty when there is none (not "/", a path
	// the client never asked for)
	for _, tc := range []struct {
		name, raw string
		code      int
		path      string
	}{
		{"garbage", "NOT HTTP AT ALL\r\n\r\n", 400, ""},
		{"huge header", "GET /b HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 20<<10) + "\r\n\r\n", 431, "/b"},
		{"huge body", "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n" + strings.Repeat("a", 10), 413, "/b"},
		{"fine", "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n{\"name\":\"x\"}", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(conn, tc.raw); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, tc.code)
			}
			if resp.Header.Get("Server") != "" {
				t.Errorf("Server header %q", resp.Header.Get("Server"))
			}
			if tc.code >= 400 {
				var e httpapi.Error
				if err := json.Unmarshal(b, &e); err != nil || e.StatusCode != tc.code || e.Code != httpapi.CodeInvalidBody || e.Message == "" {
					t.Errorf("not the JSON error format: %s", b)
				}
				if e.Path != tc.path {
					t.Errorf("path %q, want %q: %s", e.Path, tc.path, b)
				}
			}
		})
	}
}

// Serve lets a request in flight finish after ctx is done, and closes
// the listener.
func TestServeGracefulShutdown(t *testing.T) {
	started := make(chan struct{})
	h := func(rc *fasthttp.RequestCtx) {
		close(started)
		time.Sleep(100 * time.Millisecond)
		rc.SetBodyString("done")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, NewServer(h, httpapi.MaxBody), httpapi.Listener(ln), 5*time.Second)
	}()
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String())
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "done" {
				err = fmt.Errorf("%s %q", resp.Status, b)
			}
		}
		got <- err
	}()
	<-started
	cancel()
	if err := <-got; err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("listener still accepts after shutdown")
	}
}

// Requests reaching the gin engine get copies of fasthttp's bytes: a value
// a handler keeps (here past the next request on the same keep-alive
// connection, whose bytes reuse the buffer) stays what was sent. Headers
// and a sniffed Content-Type come back as net/http would send them.
func TestNetHTTPCopies(t *testing.T) {
	kept := make(chan [2]string, 2)
	addr := startFast(t, NewServer(fastFixtureKeeping(httpapi.NewMetrics(nil), kept), httpapi.MaxBody))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for _, v := range []string{"first-value", "other-value"} {
		if _, err := fmt.Fprintf(conn, "GET /keep HTTP/1.1\r\nHost: x\r\nX-Keep: %s\r\n\r\n", v); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 204 || resp.Header.Get("X-Out") != "1" || resp.Header.Get(httpapi.HeaderRequestID) == "" {
			t.Fatalf("%s %v", resp.Status, resp.Header)
		}
	}
	first, second := <-kept, <-kept
	if first != [2]string{"GET", "first-value"} || second != [2]string{"GET", "other-value"} {
		t.Fatalf("kept %q then %q", first, second)
	}
	resp, err := http.Get("http://" + addr + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "<html>hi</html>" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%q %v", b, resp.Header)
	}
}

// startFast serves srv on a free loopback port until the test ends, and
// fails the test if serving or shutting down fails.
func startFast(t *testing.T, srv *fasthttp.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, srv, httpapi.Listener(ln), time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestBodyBuffer: answers appended to the response's own buffer arrive
// whole on one keep-alive connection, a short one after a long one with
// nothing of the long one left over, and an error written after taking
// the buffer is the error alone.
func TestBodyBuffer(t *testing.T) {
	h := New(nil, httpapi.NewMetrics(nil), httpapi.New(nil, nil),
		Route{Method: "GET", Path: "/n", Handle: func(c *Ctx) {
			n, _ := strconv.Atoi(c.Query("n"))
			b := append(c.BodyBuffer(), '"')
			b = append(b, strings.Repeat("x", n)...)
			c.WriteJSONBuffer(200, append(b, '"'))
		}},
		Route{Method: "GET", Path: "/taken", Handle: func(c *Ctx) {
			_ = append(c.BodyBuffer(), "lost"...)
			c.Abort(http.StatusNotFound, httpapi.CodeNotFound, "taken")
		}},
	)
	addr := startFast(t, NewServer(h, httpapi.MaxBody))
	client := &fasthttp.HostClient{Addr: addr, MaxConns: 1}
	for i, n := range []int{5000, 3, 0, 700, 1, 5000, 2} {
		status, body, err := client.Get(nil, fmt.Sprintf("http://%s/n?n=%d", addr, n))
		if want := `"` + strings.Repeat("x", n) + `"`; err != nil || status != 200 || string(body) != want {
			t.Fatalf("request %d (n=%d): %d %.40q… %v, want %d bytes", i, n, status, body, err, len(want))
		}
		status, body, err = client.Get(nil, "http://"+addr+"/taken")
		var e httpapi.Error
		if err != nil || status != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e.Code != httpapi.CodeNotFound || strings.Contains(string(body), "lost") {
			t.Fatalf("request %d, the error: %d %q %v", i, status, body, err)
		}
	}
}

// BenchmarkBodyBuffer: an answer of 180 bytes built in a slice from nil
// (what the gateway's hot routes did) against BodyBuffer's pooled buffer.
func BenchmarkBodyBuffer(b *testing.B) {
	answer := func(buf []byte) []byte {
		for range 6 {
			buf = append(buf, `"waiting":912345,"served":1000000,`...)
		}
		return buf
	}
	var rc fasthttp.RequestCtx
	c := &Ctx{RequestCtx: &rc}
	b.Run("nil", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.WriteJSON(200, answer(nil))
			rc.Response.Reset()
		}
	})
	b.Run("BodyBuffer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.WriteJSONBuffer(200, answer(c.BodyBuffer()))
			rc.Response.Reset()
		}
	})
}
