package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/boxoffice/boxoffice/pkg/promx"
)

// Metrics are the request metrics every HTTP service exports, labelled by
// route (the route pattern, never the raw path: label values must stay
// few), method and status code, so dashboards and alerts see every service
// alike: [Metrics.Middleware] for gin, [Metrics.Handler] for net/http, and
// the gateway's fasthttp routes call [Metrics.Observe] themselves.
type Metrics struct {
	// Duration is http_request_duration_seconds{route,method,status}.
	Duration *prometheus.HistogramVec
	// Requests is http_requests_total{route,method,status}.
	Requests *prometheus.CounterVec

	// series caches the children per label set (seriesKey → *httpSeries),
	// so a request does not hash its labels twice: there are only as many
	// label sets as routes × methods × statuses.
	series sync.Map
}

type seriesKey struct {
	route, method string
	status        int
}

type httpSeries struct {
	duration prometheus.Observer
	requests prometheus.Counter
}

// HTTPBuckets are the latency buckets of http_request_duration_seconds,
// from 0.5 ms (a Redis round trip) to 5 s.
var HTTPBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// NewMetrics registers the metrics on reg (nil: a private registry, for
// tests). When reg already holds them (two servers in one process), the
// registered ones are reused.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		// Only a conflicting collector of the same name can fail here: a
		// programming error in the service's wiring.
		panic(fmt.Sprintf("httpapi: %v", err))
	}
	return m
}

func newMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"route", "method", "status"}
	m := &Metrics{
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by route pattern, method and status.",
			Buckets: HTTPBuckets,
		}, labels),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status.",
		}, labels),
	}
	var err error
	if m.Duration, err = promx.RegisterOrReuse(reg, m.Duration); err != nil {
		return nil, err
	}
	if m.Requests, err = promx.RegisterOrReuse(reg, m.Requests); err != nil {
		return nil, err
	}
	return m, nil
}

// Observe records one request. route should be the matched pattern ("" is
// recorded as "unmatched"); unusual methods are recorded as "OTHER".
func (m *Metrics) Observe(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	method = normMethod(method)
	k := seriesKey{route, method, status}
	v, ok := m.series.Load(k)
	if !ok {
		code := strconv.Itoa(status)
		v, _ = m.series.LoadOrStore(k, &httpSeries{
			duration: m.Duration.WithLabelValues(route, method, code),
			requests: m.Requests.WithLabelValues(route, method, code),
		})
	}
	sr := v.(*httpSeries)
	sr.duration.Observe(d.Seconds())
	sr.requests.Inc()
}

func normMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// Middleware records every request of a gin engine under its route
// pattern (c.FullPath(), or "unmatched").
func (m *Metrics) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		m.Observe(c.FullPath(), c.Request.Method, c.Writer.Status(), time.Since(start))
	}
}

// Handler records every request a net/http handler serves. The route label
// is the pattern an http.ServeMux inside next matched (Request.Pattern, set
// by Go's mux), or "unmatched". The wrapped ResponseWriter keeps Flush and
// Hijack working (server-sent events, WebSocket upgrades).
func (m *Metrics) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		m.Observe(r.Pattern, r.Method, sw.code(), time.Since(start))
	})
}

// statusWriter remembers the status code written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack not supported")
	}
	if w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
