// Package fastserver serves the gateway on fasthttp: its hottest routes
// natively (Route, Ctx: join and the position poll, which every waiting
// user calls, and the anonymous snapshots), every other route on the gin
// engine through a net/http bridge, with one JSON error format, request id
// and metrics for both kinds (pkg/httpapi), and the fasthttp server with
// boxoffice's limits (NewServer, Serve). docs/architecture.md says why the
// hot routes are on fasthttp; BenchmarkJoin in the gateway measures it.
package fastserver

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// The gateway's hottest routes (join and the position poll, which every
// waiting user calls) are served natively on fasthttp: net/http's
// per-request machinery (a background read goroutine per request, header
// maps, a cancelable context) costs more CPU than the route's own work
// (BenchmarkJoin). Every other route stays on the gin engine, reached
// through netHTTP. Both kinds answer with the same JSON error format,
// request id and metrics; docs/http-api.md says which routes are fast.

// Route is one route served natively: a path and its method. The
// path is exact, or has one parameter segment written {name}
// ("/api/events/{id}/progress"): it matches one non-empty segment without
// '/', which Ctx.Param returns. An exact path wins over a pattern.
type Route struct {
	Method, Path string
	Handle       func(c *Ctx)
}

// Ctx is a fast route's request: the fasthttp request and response,
// and what New's middleware gives a gin handler (request id, a context
// carrying it, a logger).
type Ctx struct {
	*fasthttp.RequestCtx
	id    string
	ctx   context.Context
	log   *zap.Logger
	param string
}

// Param is the value of the route's {name} segment ("" for an exact
// route).
func (c *Ctx) Param() string { return c.param }

// Context carries the request id (requestid.From) to what the request
// publishes. It is not canceled when the client goes away.
func (c *Ctx) Context() context.Context { return c.ctx }

// RequestID is the request's id (the client's X-Request-ID when well
// formed).
func (c *Ctx) RequestID() string { return c.id }

// Logger is the request's logger, with its request_id field.
func (c *Ctx) Logger() *zap.Logger { return c.log.With(zap.String("request_id", c.id)) }

// SetBodyStreamWriter streams the answer's body from sw, as
// fasthttp.RequestCtx's does, with the write timeout
// (service.DefaultHTTPLimits.WriteTimeout) bounding each write sw makes
// (each Flush, or each full buffer), not the whole stream. fasthttp sets
// the write deadline once, before the answer, which would cut a stream
// longer than the timeout however fast its client reads. A client that
// stops reading is dropped once the buffers on the way (the stream's
// pipe, the sockets') are full and a write has waited that long.
func (c *Ctx) SetBodyStreamWriter(sw fasthttp.StreamWriter) {
	conn := c.Conn()
	c.RequestCtx.SetBodyStreamWriter(func(w *bufio.Writer) {
		bw := bufio.NewWriter(streamPart{w: w, conn: conn})
		sw(bw)
		_ = bw.Flush()
	})
}

// streamPart passes each write of a stream on at once, after setting the
// connection's write deadline.
type streamPart struct {
	w    *bufio.Writer
	conn net.Conn
}

func (p streamPart) Write(b []byte) (int, error) {
	_ = p.conn.SetWriteDeadline(time.Now().Add(service.DefaultHTTPLimits.WriteTimeout))
	n, err := p.w.Write(b)
	if err == nil {
		err = p.w.Flush()
	}
	return n, err
}

// Header returns a request header.
func (c *Ctx) Header(name string) string { return string(c.Request.Header.Peek(name)) }

// Query returns a query parameter.
func (c *Ctx) Query(name string) string { return string(c.QueryArgs().Peek(name)) }

// WriteJSON writes body (a JSON document) with status. The body is
// copied, so it may be shared (a cached document); a hot route that builds
// its answer appends it to BodyBuffer and sends it with WriteJSONBuffer.
func (c *Ctx) WriteJSON(status int, body []byte) { writeJSON(c.RequestCtx, status, body) }

// BodyBuffer returns the response's own body buffer, empty, for a hot
// route to append its JSON answer to and send with WriteJSONBuffer.
// fasthttp keeps these buffers in a pool, so an answer built this way
// costs no allocation and no copy, where appending to a nil slice grew
// it five or six times (BenchmarkBodyBuffer).
func (c *Ctx) BodyBuffer() []byte { return c.Response.SwapBody(nil)[:0] }

// WriteJSONBuffer writes body, BodyBuffer's buffer with the answer
// appended, with status. body must not be used afterwards.
func (c *Ctx) WriteJSONBuffer(status int, body []byte) {
	c.SetStatusCode(status)
	c.SetContentType(httpapi.JSONContentType)
	c.Response.Header.SetCanonical(noSniffKey, noSniffValue)
	c.Response.SwapBody(body)
}

// Abort writes the JSON error.
func (c *Ctx) Abort(status int, code, message string) {
	writeJSON(c.RequestCtx, status, httpapi.ErrorBody(status, code, message, string(c.Path())))
}

// Fail writes err as the JSON error, as bookinghttp.Fail does for gin.
func (c *Ctx) Fail(err error) {
	status, code, msg := bookinghttp.Failure(err, c.Logger)
	if s, ok := bookinghttp.RetryAfter(err); ok {
		c.Response.Header.Set("Retry-After", s)
	}
	c.Abort(status, code, msg)
}

// Bind decodes and validates the JSON body into v, as httpapi.Bind does
// for gin (400 on any problem, 413 above httpapi.MaxBody); false when it
// answered.
func (c *Ctx) Bind(v any) bool {
	body := c.PostBody()
	if len(body) > httpapi.MaxBody {
		c.Abort(http.StatusRequestEntityTooLarge, httpapi.CodeInvalidBody, httpapi.TooLarge(httpapi.MaxBody))
		return false
	}
	if err := httpapi.DecodeJSON(body, v); err != nil {
		c.Abort(http.StatusBadRequest, httpapi.CodeInvalidBody, err.Error())
		return false
	}
	return true
}

func writeJSON(rc *fasthttp.RequestCtx, status int, body []byte) {
	rc.SetStatusCode(status)
	rc.SetContentType(httpapi.JSONContentType)
	rc.Response.Header.SetCanonical(noSniffKey, noSniffValue)
	rc.SetBody(body)
}

// Every JSON answer says X-Content-Type-Options: nosniff, so that no
// browser reads one as a page or script (httpapi.NoSniff, writeJSON).
var noSniffKey, noSniffValue = []byte("X-Content-Type-Options"), []byte("nosniff")
