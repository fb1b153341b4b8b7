package httpapi

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// HeaderRequestID carries the request id in and out.
const HeaderRequestID = "X-Request-ID"

const (
	ctxRequestID = "httpapi.request_id"
	ctxLogger    = "httpapi.logger"
)

// New returns a gin engine with the JSON 404/405 handlers and the
// middleware every service uses: request id (with a logger carrying it),
// metrics when m is not nil, and panic recovery into a JSON 500.
func New(log *zap.Logger, m *Metrics) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	r.Use(RequestID(log))
	if m != nil {
		r.Use(m.Middleware())
	}
	r.Use(Recovery())
	r.NoRoute(NoRoute)
	r.NoMethod(NoMethod)
	return r
}

// RequestID takes a well-formed X-Request-ID from the client or makes one,
// echoes it in the response and puts a logger with it in the context.
func RequestID(log *zap.Logger) gin.HandlerFunc {
	if log == nil {
		log = zap.NewNop()
	}
	return func(c *gin.Context) {
		id := c.GetHeader(HeaderRequestID)
		if !validRequestID(id) {
			id = rand.Text()
		}
		c.Set(ctxRequestID, id)
		c.Set(ctxLogger, log.With(zap.String("request_id", id)))
		c.Header(HeaderRequestID, id)
		c.Next()
	}
}

func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// RequestIDFrom returns the request id set by RequestID.
func RequestIDFrom(c *gin.Context) string { return c.GetString(ctxRequestID) }

// Logger returns the request's logger (a no-op logger outside RequestID).
func Logger(c *gin.Context) *zap.Logger {
	if l, ok := c.Get(ctxLogger); ok {
		return l.(*zap.Logger)
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

// Metrics are the HTTP request metrics of one service.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_http_requests_total",
			Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "boxoffice_http_request_seconds",
			Help:    "HTTP request duration by route and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"route", "method"}),
	}
	if reg != nil {
		m.requests = registerOrExisting(reg, m.requests)
		m.duration = registerOrExisting(reg, m.duration)
	}
	return m
}

func registerOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex
			}
		}
	}
	return c
}

// Middleware records every request under its route pattern (never the raw
// path, which would explode the label set).
func (m *Metrics) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route, c.Request.Method, strconv.Itoa(c.Writer.Status())).Inc()
		m.duration.WithLabelValues(route, c.Request.Method).Observe(time.Since(start).Seconds())
	}
}
