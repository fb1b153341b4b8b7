package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
)

// contractGuard validates every request through a harness's handler and
// every answer against docs/openapi.yaml (pkg/httpapi/contracttest). The
// requests a test sends invalid on purpose are marked (bad, invalidly,
// markInvalid): only their answers are validated.
type contractGuard struct {
	*contracttest.Contract
	t       testing.TB
	hs      *harness
	mu      sync.Mutex
	invalid map[*http.Request]bool
}

// contractChecked wraps hs's handler in the contract's checks; bad is
// the guard's bad.
func contractChecked(t testing.TB, hs *harness) (*contractGuard, func(method, path, token string, body any, status int, code string, headers ...string)) {
	g := &contractGuard{Contract: contracttest.Load(t), t: t, hs: hs, invalid: map[*http.Request]bool{}}
	hs.h = g.Wrap(hs.h, func(r *http.Request) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return !g.invalid[r]
	})
	return g, g.bad
}

// markInvalid marks a request the test built itself as invalid on purpose.
func (g *contractGuard) markInvalid(r *http.Request) {
	g.mu.Lock()
	g.invalid[r] = true
	g.mu.Unlock()
}

// invalidly runs send with every request it makes through the harness
// marked invalid on purpose.
func (g *contractGuard) invalidly(send func()) {
	orig := g.hs.h
	g.hs.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.markInvalid(r)
		orig.ServeHTTP(w, r)
	})
	defer func() { g.hs.h = orig }()
	send()
}

// bad sends a request that is invalid on purpose and wants status and
// the error's code.
func (g *contractGuard) bad(method, path, token string, body any, status int, code string, headers ...string) {
	g.t.Helper()
	var r resp
	g.invalidly(func() { r = g.hs.do(method, path, token, body, headers...) })
	want(g.t, r, status, code)
}

// refusals sends, as token, every body the document refuses for method
// and path (contracttest.Refusals, made from valid's bodies) and wants
// each answered 400 naming the refused field, or 415 for a body that is
// not JSON.
func (g *contractGuard) refusals(method, path, token string, valid func() map[string]any) {
	g.t.Helper()
	for _, rf := range g.Refusals(method, path, valid) {
		req := httptest.NewRequest(method, path, bytes.NewReader(rf.Body))
		if rf.ContentType != "" {
			req.Header.Set("Content-Type", rf.ContentType)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		g.markInvalid(req)
		g.hs.h.ServeHTTP(w, req)
		status := http.StatusBadRequest
		if rf.Field == "" {
			status = http.StatusUnsupportedMediaType
		}
		if w.Code != status || (rf.Field != "" && !strings.Contains(w.Body.String(), rf.Leaf())) {
			g.t.Errorf("%s: %d %s; want %d naming %q", rf.Name, w.Code, w.Body, status, rf.Leaf())
		}
	}
}
