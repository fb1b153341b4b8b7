package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service"
)

// The admin listener answers unknown paths and methods in the JSON error
// format; what it serves is unchanged.
func TestAdminErrors(t *testing.T) {
	a := service.NewAdmin("127.0.0.1:0", nil, nil)
	a.EnablePprof()
	AdminErrors(a)
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/nope", 404, CodeNotFound},
		{"GET", "/", 404, CodeNotFound},
		{"POST", "/api/booking/request", 404, CodeNotFound},
		{"GET", "/metricsx", 404, CodeNotFound},
		{"POST", "/healthz", 405, CodeMethodNotAllowed},
		{"DELETE", "/metrics", 405, CodeMethodNotAllowed},
		{"GET", "/healthz", 200, ""},
		{"GET", "/metrics", 200, ""},
		{"GET", "/readyz", 200, ""},
		{"GET", "/debug/pprof/", 200, ""},
	} {
		w := httptest.NewRecorder()
		a.Handler().ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		if w.Code != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, w.Code, w.Body, tc.status)
			continue
		}
		if tc.code == "" {
			continue
		}
		var e Error
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.StatusCode != tc.status || e.Code != tc.code ||
			e.Path != tc.path || e.Error != http.StatusText(tc.status) || e.Timestamp == "" || e.Message == "" {
			t.Errorf("%s %s: not the JSON error format: %s (%v)", tc.method, tc.path, w.Body, err)
		}
		if ct := w.Header().Get("Content-Type"); ct != JSONContentType {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, ct)
		}
		if tc.status == 405 && w.Header().Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
		}
	}
}
