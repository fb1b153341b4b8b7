package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/requestid"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// A service's hottest routes (the gateway's join and position poll, which
// every waiting user calls) are served natively on fasthttp: net/http's
// per-request machinery (a background read goroutine per request, header
// maps, a cancelable context) costs more CPU than the route's own work.
// Every other route stays on the gin engine, reached through netHTTP. Both
// kinds answer with the same JSON error format, request id and metrics;
// docs/http-api.md says which routes are fast.

// FastRoute is one route served natively: a path and its method. The
// path is exact, or has one parameter segment written {name}
// ("/api/events/{id}/progress"): it matches one non-empty segment without
// '/', which FastCtx.Param returns. An exact path wins over a pattern.
type FastRoute struct {
	Method, Path string
	Handle       func(c *FastCtx)
}

// FastCtx is a fast route's request: the fasthttp request and response,
// and what New's middleware gives a gin handler (request id, a context
// carrying it, a logger).
type FastCtx struct {
	*fasthttp.RequestCtx
	id    string
	ctx   context.Context
	log   *zap.Logger
	param string
}

// Param is the value of the route's {name} segment ("" for an exact
// route).
func (c *FastCtx) Param() string { return c.param }

// Context carries the request id (requestid.From) to what the request
// publishes. It is not canceled when the client goes away.
func (c *FastCtx) Context() context.Context { return c.ctx }

// RequestID is the request's id (the client's X-Request-ID when well
// formed).
func (c *FastCtx) RequestID() string { return c.id }

// Logger is the request's logger, with its request_id field.
func (c *FastCtx) Logger() *zap.Logger { return c.log.With(zap.String("request_id", c.id)) }

// Header returns a request header.
func (c *FastCtx) Header(name string) string { return string(c.Request.Header.Peek(name)) }

// Query returns a query parameter.
func (c *FastCtx) Query(name string) string { return string(c.QueryArgs().Peek(name)) }

// WriteJSON writes body (a JSON document) with status. The body is
// copied, so it may be shared (a cached document); a hot route that builds
// its answer appends it to BodyBuffer and sends it with WriteJSONBuffer.
func (c *FastCtx) WriteJSON(status int, body []byte) { writeJSON(c.RequestCtx, status, body) }

// BodyBuffer returns the response's own body buffer, empty, for a hot
// route to append its JSON answer to and send with WriteJSONBuffer.
// fasthttp keeps these buffers in a pool, so an answer built this way
// costs no allocation and no copy, where appending to a nil slice grew
// it five or six times (BenchmarkBodyBuffer).
func (c *FastCtx) BodyBuffer() []byte { return c.Response.SwapBody(nil)[:0] }

// WriteJSONBuffer writes body, BodyBuffer's buffer with the answer
// appended, with status. body must not be used afterwards.
func (c *FastCtx) WriteJSONBuffer(status int, body []byte) {
	c.SetStatusCode(status)
	c.SetContentType(jsonContentType)
	c.Response.Header.SetCanonical(noSniffKey, noSniffValue)
	c.Response.SwapBody(body)
}

// Abort writes the JSON error.
func (c *FastCtx) Abort(status int, code, message string) {
	writeJSON(c.RequestCtx, status, errorBody(status, code, message, string(c.Path())))
}

// Fail writes err as the JSON error, as Fail does for gin.
func (c *FastCtx) Fail(err error) {
	status, code, msg := failure(err, c.Logger)
	if s, ok := RetryAfter(err); ok {
		c.Response.Header.Set("Retry-After", s)
	}
	c.Abort(status, code, msg)
}

// Bind decodes and validates the JSON body into v, as Bind does for gin
// (400 on any problem, 413 above MaxBody); false when it answered.
func (c *FastCtx) Bind(v any) bool {
	body := c.PostBody()
	if len(body) > MaxBody {
		c.Abort(http.StatusRequestEntityTooLarge, CodeInvalidBody, tooLarge(MaxBody))
		return false
	}
	if err := DecodeJSON(body, v); err != nil {
		c.Abort(http.StatusBadRequest, CodeInvalidBody, err.Error())
		return false
	}
	return true
}

func writeJSON(rc *fasthttp.RequestCtx, status int, body []byte) {
	rc.SetStatusCode(status)
	rc.SetContentType(jsonContentType)
	rc.Response.Header.SetCanonical(noSniffKey, noSniffValue)
	rc.SetBody(body)
}

const jsonContentType = "application/json; charset=utf-8"

// Every JSON answer says X-Content-Type-Options: nosniff, so that no
// browser reads one as a page or script (NoSniff, writeJSON).
var noSniffKey, noSniffValue = []byte("X-Content-Type-Options"), []byte("nosniff")

// NewFast returns the handler of a service: routes natively, everything
// else through engine (New's gin engine, which has its own middleware). A
// fast route's path asked with another method is a JSON 405.
func NewFast(log *zap.Logger, m *Metrics, engine http.Handler, routes ...FastRoute) fasthttp.RequestHandler {
	if log == nil {
		log = zap.NewNop()
	}
	slow := netHTTP(log, engine)
	byPath := map[string][]FastRoute{}
	var patterns []fastPattern
	for _, r := range routes {
		if p, ok := parsePattern(r.Path); ok {
			if n := len(patterns); n > 0 && patterns[n-1].prefix == p.prefix && patterns[n-1].suffix == p.suffix {
				patterns[n-1].routes = append(patterns[n-1].routes, r)
			} else {
				p.routes = []FastRoute{r}
				patterns = append(patterns, p)
			}
			continue
		}
		byPath[r.Path] = append(byPath[r.Path], r)
	}
	return func(rc *fasthttp.RequestCtx) {
		rs, ok := byPath[string(rc.Path())] // no allocation: map lookup of a converted []byte
		var param string
		if !ok {
			rs, param, ok = matchPattern(patterns, rc.Path())
		}
		if !ok {
			slow(rc)
			return
		}
		start := time.Now()
		method := string(rc.Method())
		c := &FastCtx{RequestCtx: rc, log: log, param: param}
		c.id = string(rc.Request.Header.Peek(HeaderRequestID))
		if !requestid.Valid(c.id) {
			c.id = requestid.New()
		}
		c.ctx = requestid.With(context.Background(), c.id)
		rc.Response.Header.Set(HeaderRequestID, c.id)
		route := rs[0].Path
		handled := false
		for _, r := range rs {
			if r.Method == method {
				serveFast(c, r.Handle)
				handled = true
				break
			}
		}
		if !handled {
			c.Abort(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed on this endpoint")
		}
		if m != nil {
			m.Observe(route, method, rc.Response.StatusCode(), time.Since(start))
		}
	}
}

// fastPattern is the routes of one path with a {name} segment.
type fastPattern struct {
	prefix, suffix string
	routes         []FastRoute
}

// parsePattern splits "/a/{name}/b" into "/a/" and "/b"; false for an
// exact path.
func parsePattern(path string) (fastPattern, bool) {
	open := strings.IndexByte(path, '{')
	if open < 0 {
		return fastPattern{}, false
	}
	end := strings.IndexByte(path[open:], '}')
	if end < 0 {
		panic("httpapi: unclosed { in fast route " + path)
	}
	return fastPattern{prefix: path[:open], suffix: path[open+end+1:]}, true
}

// matchPattern finds the pattern path matches and its parameter segment.
func matchPattern(patterns []fastPattern, path []byte) ([]FastRoute, string, bool) {
	for _, p := range patterns {
		if len(path) <= len(p.prefix)+len(p.suffix) || !bytes.HasPrefix(path, []byte(p.prefix)) || !bytes.HasSuffix(path, []byte(p.suffix)) {
			continue
		}
		seg := path[len(p.prefix) : len(path)-len(p.suffix)]
		if bytes.IndexByte(seg, '/') >= 0 {
			continue
		}
		return p.routes, string(seg), true
	}
	return nil, "", false
}

// serveFast runs h, turning a panic into a logged JSON 500 (the response
// is buffered until h returns, so whatever h wrote is replaced).
func serveFast(c *FastCtx, h func(*FastCtx)) {
	defer func() {
		if v := recover(); v != nil {
			c.Logger().Error("handler panic", zap.String("panic", fmt.Sprint(v)), zap.ByteString("stack", debug.Stack()))
			internalError(c.RequestCtx, c.id, string(c.Path()))
		}
	}()
	h(c)
}

// internalError replaces whatever a panicking handler wrote with a JSON
// 500 that keeps the request id.
func internalError(rc *fasthttp.RequestCtx, requestID, path string) {
	rc.Response.Reset()
	rc.Response.Header.Set(HeaderRequestID, requestID)
	writeJSON(rc, http.StatusInternalServerError, errorBody(http.StatusInternalServerError, CodeInternal, "internal error", path))
}

// FastServer returns the fasthttp server of handler with boxoffice's
// settings: requests in the JSON error format even when fasthttp itself
// rejects them (malformed, headers too large, body too large), no Server
// header, and service.DefaultHTTPLimits like every net/http server:
// request line and headers up to 16 KiB (its read buffer: one byte more
// is a 431), 10 s to read a request, 2 minutes for an idle
// keep-alive connection; bodies up to maxBody (the largest any route
// accepts; each route bounds its own lower).
func FastServer(handler fasthttp.RequestHandler, maxBody int) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:               handler,
		ErrorHandler:          fastError,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true, // a bodiless net/http answer has none
		ReadBufferSize:        service.DefaultHTTPLimits.MaxHeaderBytes,
		MaxRequestBodySize:    maxBody,
		ReadTimeout:           service.DefaultHTTPLimits.ReadTimeout,
		IdleTimeout:           service.DefaultHTTPLimits.IdleTimeout,
		CloseOnShutdown:       true,
	}
}

// fastError answers a request fasthttp could not read.
func fastError(rc *fasthttp.RequestCtx, err error) {
	status, msg := http.StatusBadRequest, "malformed HTTP request"
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.As(err, &small):
		status, msg = http.StatusRequestHeaderFieldsTooLarge, headersTooLarge
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status, msg = http.StatusRequestEntityTooLarge, "request body too large"
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			status, msg = http.StatusRequestTimeout, "request not received in time"
		}
	}
	// a request whose headers fasthttp could not read has no path of its
	// own (rc.Path would say "/"): the connection's latest request line
	// names it (Listener)
	path := ""
	if len(rc.Request.Header.RawHeaders()) > 0 {
		path = string(rc.Path())
	} else if c, ok := rc.Conn().(*watchedConn); ok {
		path = c.path()
	}
	writeJSON(rc, status, errorBody(status, CodeInvalidBody, msg, path))
}

// ServeFast serves srv on addr until ctx is done, then shuts it down
// gracefully as service.Serve does for net/http: requests in flight get up
// to timeout to finish.
func ServeFast(ctx context.Context, srv *fasthttp.Server, addr string, timeout time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	return service.Serve(ctx, fastServer{srv}, Listener(ln), timeout)
}

// fastServer is a fasthttp server as service.Serve runs it.
type fastServer struct{ *fasthttp.Server }

func (s fastServer) Shutdown(ctx context.Context) error { return s.ShutdownWithContext(ctx) }

// Close: fasthttp cannot cut the connections of requests still running;
// the process exits after Serve returns.
func (s fastServer) Close() error { return nil }

// ServeRequest serves one net/http request through a fasthttp handler in
// process and writes the response to w: tests drive a service's real
// handler with httptest requests and recorders this way.
func ServeRequest(h fasthttp.RequestHandler, w http.ResponseWriter, r *http.Request) {
	var req fasthttp.Request
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.URL.RequestURI())
	req.SetHost(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		req.SetBody(body)
	}
	var rc fasthttp.RequestCtx
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	h(&rc)
	for k, v := range rc.Response.Header.All() {
		w.Header().Add(string(k), string(v))
	}
	w.WriteHeader(rc.Response.StatusCode())
	_, _ = w.Write(rc.Response.Body())
}

// netHTTP serves fasthttp requests with a net/http handler. Unlike
// fasthttpadaptor, whose strings point into fasthttp's reused buffers (a
// method kept as a metric label, or a request id kept by a background
// publisher, would change under its holder), it copies what it hands on. A
// panic that escapes h (gin's recovery re-panics http.ErrAbortHandler)
// becomes a JSON 500 and a closed connection, not a crashed process.
func netHTTP(log *zap.Logger, h http.Handler) fasthttp.RequestHandler {
	return func(rc *fasthttp.RequestCtx) {
		r, err := toRequest(rc)
		if err != nil {
			writeJSON(rc, http.StatusBadRequest, errorBody(http.StatusBadRequest, CodeInvalidArgument, "malformed request URI", string(rc.Path())))
			return
		}
		w := &responseWriter{rc: rc, h: http.Header{}}
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					log.Error("handler panic", zap.String("panic", fmt.Sprint(v)), zap.ByteString("stack", debug.Stack()))
				}
				internalError(rc, w.h.Get(HeaderRequestID), r.URL.Path)
				rc.SetConnectionClose()
			}
		}()
		h.ServeHTTP(w, r)
		if !w.wrote {
			w.WriteHeader(http.StatusOK)
		}
	}
}

// toRequest is rc as a net/http server request, every string copied.
func toRequest(rc *fasthttp.RequestCtx) (*http.Request, error) {
	uri := string(rc.RequestURI())
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, err
	}
	body := append([]byte(nil), rc.PostBody()...)
	r := &http.Request{
		Method:        string(rc.Method()),
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        make(http.Header, rc.Request.Header.Len()),
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Host:          string(rc.Host()),
		RemoteAddr:    rc.RemoteAddr().String(),
		RequestURI:    uri,
	}
	if !rc.Request.Header.IsHTTP11() {
		r.Proto, r.ProtoMinor = "HTTP/1.0", 0
	}
	for k, v := range rc.Request.Header.All() {
		if name := string(k); name != "Host" {
			r.Header.Add(name, string(v))
		}
	}
	return r.WithContext(context.Background()), nil
}

// responseWriter writes a net/http handler's response into rc (fasthttp
// buffers it whole and sets Content-Length).
type responseWriter struct {
	rc    *fasthttp.RequestCtx
	h     http.Header
	wrote bool
	sniff bool // no Content-Type given: net/http sniffs the first Write
}

func (w *responseWriter) Header() http.Header { return w.h }

func (w *responseWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.rc.SetStatusCode(status)
	for k, vs := range w.h {
		if k == "Content-Length" || k == "Transfer-Encoding" {
			continue
		}
		for _, v := range vs {
			w.rc.Response.Header.Add(k, v)
		}
	}
	w.sniff = w.h.Get("Content-Type") == ""
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.sniff && len(p) > 0 {
		w.sniff = false
		w.rc.Response.Header.SetContentType(http.DetectContentType(p))
	}
	return w.rc.Write(p)
}
