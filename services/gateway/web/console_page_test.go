package web

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The operators' console (/admin/) is served like the other operator
// pages: versioned assets, revalidated, with the browser protections and
// nothing the CSP blocks; its script builds the page with DOM APIs (never
// HTML strings) and has the session cookie as its only credential.
func TestConsolePageServed(t *testing.T) {
	r := newEngine()
	w := get(r, "/admin/", "Accept-Encoding", "gzip")
	h := w.Header()
	if w.Code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || h.Get("Cache-Control") != "no-cache" ||
		h.Get("ETag") == "" || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") || h.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("GET /admin/: %d %v", w.Code, h)
	}
	if w := get(r, "/admin/", "If-None-Match", h.Get("ETag")); w.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", w.Code)
	}
	body := get(r, "/admin/").Body.String()
	for _, re := range []string{`<script(?:\s[^>]*)?>\s*[^<\s]`, `\son[a-z]+\s*=`, `\sstyle\s*=`, `<style`} {
		if m := regexp.MustCompile(re).FindString(body); m != "" {
			t.Errorf("console.html has %q (matches %s), which the CSP blocks", m, re)
		}
	}
	for _, asset := range []string{"operator_kit.js", "console.js", "console_phases.js", "console.css", "report.css", "style.css"} {
		m := regexp.MustCompile(`"(/static/` + regexp.QuoteMeta(asset) + `\?v=[0-9a-f]+)"`).FindStringSubmatch(body)
		if m == nil {
			t.Errorf("console.html does not name a versioned %s", asset)
			continue
		}
		if w := get(r, m[1]); w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("GET %s: %d %v", m[1], w.Code, w.Header())
		}
	}
	for _, want := range []string{`<html lang="en">`, `id="sign-out"`, `id="view-live"`, `id="live-chart"`, `<dialog id="confirm"`,
		`id="event-form"`, `id="orders-form"`, `id="audit-form"`, `href="/admin/report.html"`, `role="alert"`,
		`id="phases-editor"`, `<label for="sch-change">`, `id="sch-error" class="error" role="alert" aria-live="assertive"`} {
		if !strings.Contains(body, want) {
			t.Errorf("console.html lacks %s", want)
		}
	}
	js := get(r, "/static/console.js").Body.String()
	phases := get(r, "/static/console_phases.js").Body.String()
	kit := get(r, "/static/operator_kit.js").Body.String()
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", ".style.",
		"Authorization", "sessionStorage", "localStorage", "dev-token", "new Option"} {
		if strings.Contains(js, bad) {
			t.Errorf("console.js uses %s (the session cookie is its only credential)", bad)
		}
		if strings.Contains(phases, bad) {
			t.Errorf("console_phases.js uses %s (the session cookie is its only credential)", bad)
		}
		if strings.Contains(kit, bad) {
			t.Errorf("operator_kit.js uses %s (the session cookie is its only credential)", bad)
		}
	}
	for _, want := range []string{"/phases", `"PUT"`, "createElement", `"label"`} {
		if !strings.Contains(phases, want) {
			t.Errorf("console_phases.js lacks %s", want)
		}
	}
	for _, want := range []string{"EventSource", "/live", "/api/admin/audit", "/api/admin/refunds/", "showModal", "operatorKit"} {
		if !strings.Contains(js, want) {
			t.Errorf("console.js lacks %s", want)
		}
	}
	if !strings.Contains(kit, "/admin/sign-in.html") || !strings.Contains(kit, `credentials: "same-origin"`) {
		t.Errorf("operator_kit.js does not send a signed-out operator to sign in, or calls without the session")
	}
	if w := get(r, "/static/console.html"); w.Code != http.StatusNotFound {
		t.Errorf("GET /static/console.html: %d, want 404", w.Code)
	}
}
