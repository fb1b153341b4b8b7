package fastserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/requestid"
)

// New returns the handler of a service: routes natively, everything
// else through engine (httpapi.New's gin engine, which has its own
// middleware). A
// fast route's path asked with another method is a JSON 405.
func New(log *zap.Logger, m *httpapi.Metrics, engine http.Handler, routes ...Route) fasthttp.RequestHandler {
	if log == nil {
		log = zap.NewNop()
	}
	slow := netHTTP(log, engine)
	byPath := map[string][]Route{}
	var patterns []fastPattern
	for _, r := range routes {
		if p, ok := parsePattern(r.Path); ok {
			if n := len(patterns); n > 0 && patterns[n-1].prefix == p.prefix && patterns[n-1].suffix == p.suffix {
				patterns[n-1].routes = append(patterns[n-1].routes, r)
			} else {
				p.routes = []Route{r}
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
		c := &Ctx{RequestCtx: rc, log: log, param: param}
		c.id = string(rc.Request.Header.Peek(httpapi.HeaderRequestID))
		if !requestid.Valid(c.id) {
			c.id = requestid.New()
		}
		c.ctx = requestid.With(context.Background(), c.id)
		rc.Response.Header.Set(httpapi.HeaderRequestID, c.id)
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
			c.Abort(http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, "method not allowed on this endpoint")
		}
		if m != nil {
			m.Observe(route, method, rc.Response.StatusCode(), time.Since(start))
		}
	}
}

// fastPattern is the routes of one path with a {name} segment.
type fastPattern struct {
	prefix, suffix string
	routes         []Route
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
		panic("fastserver: unclosed { in fast route " + path)
	}
	return fastPattern{prefix: path[:open], suffix: path[open+end+1:]}, true
}

// matchPattern finds the pattern path matches and its parameter segment.
func matchPattern(patterns []fastPattern, path []byte) ([]Route, string, bool) {
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
func serveFast(c *Ctx, h func(*Ctx)) {
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
	rc.Response.Header.Set(httpapi.HeaderRequestID, requestID)
	writeJSON(rc, http.StatusInternalServerError, httpapi.ErrorBody(http.StatusInternalServerError, httpapi.CodeInternal, "internal error", path))
}
