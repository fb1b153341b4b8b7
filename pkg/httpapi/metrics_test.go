package httpapi

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /events/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "missing" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	h := m.Handler(mux)
	for _, path := range []string{"/events/1", "/events/2", "/events/missing", "/other"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("PROPFIND", "/events/1", nil))

	tests := []struct {
		route, method, status string
		want                  float64
	}{
		{"GET /events/{id}", "GET", "200", 2},
		{"GET /events/{id}", "GET", "404", 1},
		{"unmatched", "GET", "404", 1},
		{"unmatched", "OTHER", "405", 1},
	}
	for _, tt := range tests {
		got := testutil.ToFloat64(m.Requests.WithLabelValues(tt.route, tt.method, tt.status))
		if got != tt.want {
			t.Errorf("requests{%s,%s,%s} = %v, want %v", tt.route, tt.method, tt.status, got, tt.want)
		}
	}
	if n := testutil.CollectAndCount(m.Duration); n != 4 {
		t.Errorf("%d duration series, want 4", n)
	}
}

func TestMetricsObserveAndReuse(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1 := NewMetrics(reg)
	m2 := NewMetrics(reg) // panics unless the registered metrics are reused
	m1.Observe("/join", "POST", 202, 3*time.Millisecond)
	m2.Observe("/join", "POST", 202, time.Millisecond)
	if got := testutil.ToFloat64(m1.Requests.WithLabelValues("/join", "POST", "202")); got != 2 {
		t.Fatalf("shared counter = %v, want 2", got)
	}
}

type hijackRecorder struct {
	*httptest.ResponseRecorder
	hijacked bool
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h.hijacked = true
	return nil, nil, nil
}

func TestStatusWriterKeepsHijackAndFlush(t *testing.T) {
	m := NewMetrics(nil)
	rec := &hijackRecorder{ResponseRecorder: httptest.NewRecorder()}
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
		if _, _, err := w.(http.Hijacker).Hijack(); err != nil {
			t.Errorf("hijack: %v", err)
		}
	}))
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ws", nil))
	if !rec.hijacked || !rec.Flushed {
		t.Fatalf("hijacked %v flushed %v", rec.hijacked, rec.Flushed)
	}
	if got := testutil.ToFloat64(m.Requests.WithLabelValues("unmatched", "GET", "101")); got != 1 {
		t.Fatalf("upgrade not recorded as 101: %v", got)
	}
}
