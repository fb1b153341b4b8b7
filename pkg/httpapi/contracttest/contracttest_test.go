package contracttest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Report says.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// A response the document does not describe is a violation; an answer to
// an unknown path must be the Error format.
func TestContractFindsViolations(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string // "" : no violation
	}{
		{"undocumented status", "/api/events", `{}`, http.StatusTeapot, "GET /api/events → 418"},
		{"unknown path, Error format", "/nope", `{"statusCode":404,"error":"Not Found","code":"not_found","message":"no route","timestamp":"2026-01-02T03:04:05Z","path":"/nope"}`, 404, ""},
		{"unknown path, not JSON", "/nope", `oops`, 404, "not JSON"},
		{"unknown path, not an error status", "/nope", `{}`, 200, "no operation in the document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			c := Load(t)
			c.t = rec
			h := c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}), nil)
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", tc.path, nil))
			c.Report()
			got := strings.Join(rec.errs, "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("report %q, want %q", got, tc.want)
			}
		})
	}
}
