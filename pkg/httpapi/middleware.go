package httpapi

import (
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/requestid"
)

// HeaderRequestID carries the request id in and out.
const HeaderRequestID = requestid.Header

const (
	ctxRequestID = "httpapi.request_id"
	ctxLogger    = "httpapi.logger"
)

// New returns a gin engine with the JSON 404/405 handlers and the
// middleware every service uses: request id (with a logger carrying it),
// X-Content-Type-Options: nosniff, metrics when m is not nil, and panic
// recovery into a JSON 500.
func New(log *zap.Logger, m *Metrics) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	r.Use(RequestID(log), NoSniff())
	if m != nil {
		r.Use(m.Middleware())
	}
	r.Use(Recovery())
	r.NoRoute(NoRoute)
	r.NoMethod(NoMethod)
	return r
}

// RequestID takes a well-formed X-Request-ID from the client or makes one,
// echoes it in the response and puts it, and a logger with it, in the
// context — also the request's context.Context (requestid.From), so the
// messages and events the request publishes carry it to other services.
func RequestID(log *zap.Logger) gin.HandlerFunc {
	if log == nil {
		log = zap.NewNop()
	}
	return func(c *gin.Context) {
		id := c.GetHeader(HeaderRequestID)
		if !requestid.Valid(id) {
			id = requestid.New()
		}
		c.Request = c.Request.WithContext(requestid.With(c.Request.Context(), id))
		c.Set(ctxRequestID, id)
		// the base logger: Logger adds the request id only when a handler
		// logs, so the common request that logs nothing does not pay for it
		c.Set(ctxLogger, log)
		c.Header(HeaderRequestID, id)
		c.Next()
	}
}

// NoSniff sets X-Content-Type-Options: nosniff on every answer, so that
// no browser reads a JSON answer (or any other) as a page or a script.
func NoSniff() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Writer.Header().Set("X-Content-Type-Options", "nosniff")
		c.Next()
	}
}

// RequestIDFrom returns the request id set by RequestID.
func RequestIDFrom(c *gin.Context) string { return c.GetString(ctxRequestID) }

// Logger returns the request's logger, with its request_id field (a no-op
// logger outside RequestID).
func Logger(c *gin.Context) *zap.Logger {
	if l, ok := c.Get(ctxLogger); ok {
		return l.(*zap.Logger).With(zap.String("request_id", RequestIDFrom(c)))
	}
	return zap.NewNop()
}

// Recovery turns a panic into a logged JSON 500.
func Recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				Logger(c).Error("handler panic", zap.String("panic", fmt.Sprint(v)), zap.ByteString("stack", debug.Stack()))
				if !c.Writer.Written() {
					Abort(c, http.StatusInternalServerError, CodeInternal, "internal error")
				}
			}
		}()
		c.Next()
	}
}
