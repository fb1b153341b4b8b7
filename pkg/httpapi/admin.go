package httpapi

import (
	"net/http"

	"github.com/boxoffice/boxoffice/pkg/service"
)

// AdminErrors makes the admin listener (service.Admin: /metrics, /healthz,
// /readyz, /debug/pprof) answer what it does not serve in the JSON error
// format, as every other port does, instead of net/http's text: a 405
// for a path it serves with GET only, a 404 for any other.
func AdminErrors(a *service.Admin) {
	mux, _ := a.Handler().(*http.ServeMux)
	a.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// "/" gets only what no other pattern matched: the path may be
		// served with another method
		if mux != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
			probe := r.Clone(r.Context())
			probe.Method = http.MethodGet
			if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
				w.Header().Set("Allow", "GET, HEAD")
				Write(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed on this endpoint", r.URL.Path)
				return
			}
		}
		Write(w, http.StatusNotFound, CodeNotFound, "no such endpoint", r.URL.Path)
	}))
}
