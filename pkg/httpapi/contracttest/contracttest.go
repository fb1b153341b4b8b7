// Package contracttest holds the HTTP services' contract tests to
// docs/openapi.yaml: every exchange a test sends through a service's
// production handler is validated with kin-openapi's openapi3filter, so
// the document cannot drift from the servers. The gateway, payment-webhook
// and payment-sandbox share it.
package contracttest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Path is docs/openapi.yaml in this repository.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "openapi.yaml")
}

// Contract validates exchanges against the OpenAPI document. It is safe
// for concurrent use; Report fails the test with what it found.
type Contract struct {
	t      testing.TB
	doc    *openapi3.T
	router routers.Router
	mu     sync.Mutex
	errs   []string
}

// Load reads and validates docs/openapi.yaml. Paths match on any host:
// which service serves which path is the servers lists' business (the
// gateway's TestOpenAPIServers checks them).
func Load(t testing.TB) *Contract {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(Path())
	if err != nil {
		t.Fatalf("load %s: %v", Path(), err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("docs/openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	doc.Servers = nil
	for _, p := range doc.Paths.Map() {
		p.Servers = nil
		for _, op := range p.Operations() {
			op.Servers = nil
		}
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &Contract{t: t, doc: doc, router: r}
}

func (c *Contract) fail(format string, a ...any) {
	c.mu.Lock()
	c.errs = append(c.errs, fmt.Sprintf(format, a...))
	c.mu.Unlock()
}

// Wrap returns h with every exchange validated: its response always, its
// request when validRequest says it must conform (false for the
// deliberate error cases; nil: never).
func (c *Contract) Wrap(h http.Handler, validRequest func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		c.check(r, body, rec, validRequest != nil && validRequest(r))
	})
}

// check validates one exchange. A request no operation matches must be
// answered with the documented error (404 or 405, the Error schema).
func (c *Contract) check(r *http.Request, body []byte, rec *httptest.ResponseRecorder, validRequest bool) {
	name := r.Method + " " + r.URL.Path
	vr := r.Clone(context.Background())
	vr.Body = io.NopCloser(bytes.NewReader(body))
	if vr.URL.Host == "" {
		vr.URL.Host = r.Host
	}
	route, params, err := c.router.FindRoute(vr)
	if err != nil {
		if rec.Code != http.StatusMethodNotAllowed && rec.Code != http.StatusNotFound {
			c.fail("%s → %d: no operation in the document: %v", name, rec.Code, err)
			return
		}
		c.checkError(name, rec)
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if validRequest {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.fail("%s request: %v", name, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	answer, err := decoded(rec)
	if err != nil {
		c.fail("%s → %d: %v", name, rec.Code, err)
		return
	}
	out.SetBodyBytes(answer)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		var me openapi3.MultiError
		if !errors.As(err, &me) {
			me = openapi3.MultiError{err}
		}
		for _, e := range me {
			c.fail("%s → %d: %v", name, rec.Code, e)
		}
	}
}

// decoded is a response's body without its content coding (the schemas
// describe the JSON, not its gzip encoding).
func decoded(rec *httptest.ResponseRecorder) ([]byte, error) {
	switch enc := rec.Header().Get("Content-Encoding"); enc {
	case "":
		return rec.Body.Bytes(), nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding gzip: %w", err)
		}
		return io.ReadAll(zr)
	default:
		return nil, fmt.Errorf("unexpected Content-Encoding %q", enc)
	}
}

// checkError validates an answer to a request no operation matches
// against the Error schema.
func (c *Contract) checkError(name string, rec *httptest.ResponseRecorder) {
	var v any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		c.fail("%s → %d: not JSON: %s", name, rec.Code, rec.Body)
		return
	}
	if err := c.doc.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		c.fail("%s → %d: not the Error format: %v", name, rec.Code, err)
	}
}

// Report fails the test with every violation found, sorted.
func (c *Contract) Report() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	sort.Strings(c.errs)
	for _, e := range c.errs {
		c.t.Error(e)
	}
	if len(c.errs) > 0 {
		c.t.Errorf("%d contract violations", len(c.errs))
	}
}
