package fastserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// NewServer returns the fasthttp server of handler with boxoffice's
// settings: requests in the JSON error format even when fasthttp itself
// rejects them (malformed, headers too large, body too large), no Server
// header, and service.DefaultHTTPLimits like every net/http server:
// request line and headers up to 16 KiB (its read buffer: one byte more
// is a 431), 10 s to read a request, 30 s to write an answer (a client
// that reads it slowly or never is dropped then), 2 minutes for an idle
// keep-alive connection; bodies up to maxBody (the largest any route
// accepts; each route bounds its own lower).
func NewServer(handler fasthttp.RequestHandler, maxBody int) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:               handler,
		ErrorHandler:          fastError,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true, // a bodiless net/http answer has none
		ReadBufferSize:        service.DefaultHTTPLimits.MaxHeaderBytes,
		MaxRequestBodySize:    maxBody,
		ReadTimeout:           service.DefaultHTTPLimits.ReadTimeout,
		WriteTimeout:          service.DefaultHTTPLimits.WriteTimeout,
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
		status, msg = http.StatusRequestHeaderFieldsTooLarge, httpapi.HeadersTooLarge
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
	// names it (httpapi.Listener)
	var path string
	if len(rc.Request.Header.RawHeaders()) > 0 {
		path = string(rc.Path())
	} else {
		path = httpapi.RequestPath(rc.Conn())
	}
	writeJSON(rc, status, httpapi.ErrorBody(status, httpapi.CodeInvalidBody, msg, path))
}

// Serve serves srv on ln (httpapi.Listen) until ctx is done, then shuts it down
// gracefully as service.Serve does for net/http: requests in flight get up
// to timeout to finish.
func Serve(ctx context.Context, srv *fasthttp.Server, ln net.Listener, timeout time.Duration) error {
	return service.Serve(ctx, fastServer{srv}, ln, timeout)
}

// fastServer is a fasthttp server as service.Serve runs it.
type fastServer struct{ *fasthttp.Server }

func (s fastServer) Shutdown(ctx context.Context) error { return s.ShutdownWithContext(ctx) }

// Close: fasthttp cannot cut the connections of requests still running;
// the process exits after Serve returns.
func (s fastServer) Close() error { return nil }
