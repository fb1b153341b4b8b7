package web

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// The operators' report page (/admin/report.html) is served like the
// fans' page: versioned assets, revalidated, with the browser protections,
// and nothing the CSP blocks (no inline script, handler or style); its
// script draws the charts with DOM APIs, never innerHTML.
func TestReportPageServed(t *testing.T) {
	r := newEngine()
	w := get(r, "/admin/report.html", "Accept-Encoding", "gzip")
	h := w.Header()
	if w.Code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || h.Get("Cache-Control") != "no-cache" || h.Get("ETag") == "" {
		t.Fatalf("GET /admin/report.html: %d %v", w.Code, h)
	}
	csp := h.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" {
		t.Errorf("report page security headers: %v", h)
	}
	if w := get(r, "/admin/report.html", "If-None-Match", h.Get("ETag")); w.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", w.Code)
	}

	head := httptest.NewRecorder()
	r.ServeHTTP(head, httptest.NewRequest("HEAD", "/admin/report.html", nil))
	if head.Code != http.StatusOK || head.Body.Len() != 0 || head.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD /admin/report.html: %d, %d bytes, %v", head.Code, head.Body.Len(), head.Header())
	}

	body := get(r, "/admin/report.html").Body.String()
	for _, re := range []string{`<script(?:\s[^>]*)?>\s*[^<\s]`, `\son[a-z]+\s*=`, `\sstyle\s*=`, `<style`} {
		if m := regexp.MustCompile(re).FindString(body); m != "" {
			t.Errorf("report.html has %q (matches %s), which the CSP blocks", m, re)
		}
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1) {
		if !strings.Contains(tag, "src=") || !strings.Contains(tag, "defer") {
			t.Errorf("script %s: want an external, deferred script", tag)
		}
	}
	for _, asset := range []string{"operator_kit.js", "report.js", "report.css", "style.css"} {
		m := regexp.MustCompile(`"(/static/` + regexp.QuoteMeta(asset) + `\?v=[0-9a-f]+)"`).FindStringSubmatch(body)
		if m == nil {
			t.Errorf("report.html does not name a versioned %s", asset)
			continue
		}
		w := get(r, m[1])
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Cache-Control"), "immutable") || w.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: %d %v", m[1], w.Code, w.Header())
		}
	}
	for _, want := range []string{`<html lang="en">`, `id="sign-out"`, `<label for="event-id">`, `id="csv"`, `id="minutes-chart"`, `role="alert"`} {
		if !strings.Contains(body, want) {
			t.Errorf("report.html lacks %s", want)
		}
	}

	// the page's script and the kit it shares with the console
	js := get(r, "/static/report.js").Body.String() + get(r, "/static/operator_kit.js").Body.String()
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", ".style.",
		"Authorization", "sessionStorage", "localStorage", "dev-token"} {
		if strings.Contains(js, bad) {
			t.Errorf("report.js or operator_kit.js uses %s (the session cookie is its only credential)", bad)
		}
	}
	for _, want := range []string{"/api/admin/events/", "createElementNS", "URL.createObjectURL", "/api/admin/me", "/admin/sign-in.html", "aria-label"} {
		if !strings.Contains(js, want) {
			t.Errorf("report.js and operator_kit.js lack %s", want)
		}
	}
	// the page is not also served as an immutable static file
	if w := get(r, "/static/report.html"); w.Code != http.StatusNotFound {
		t.Errorf("GET /static/report.html: %d, want 404", w.Code)
	}
}

// The operators' sign-in page (/admin/sign-in.html) is served with the
// same protections; its form names the fields for password managers, and
// its script keeps no credential (the cookie is HttpOnly) and sends the
// operator on only to a path of the operator pages.
func TestSignInPageServed(t *testing.T) {
	r := newEngine()
	w := get(r, "/admin/sign-in.html")
	h := w.Header()
	csp := h.Get("Content-Security-Policy")
	if w.Code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || h.Get("Cache-Control") != "no-cache" ||
		!strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || h.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("GET /admin/sign-in.html: %d %v", w.Code, h)
	}
	body := w.Body.String()
	for _, re := range []string{`<script(?:\s[^>]*)?>\s*[^<\s]`, `\son[a-z]+\s*=`, `\sstyle\s*=`, `<style`} {
		if m := regexp.MustCompile(re).FindString(body); m != "" {
			t.Errorf("sign-in.html has %q (matches %s), which the CSP blocks", m, re)
		}
	}
	for _, want := range []string{`<html lang="en">`, `<label for="account">`, `autocomplete="username"`, `<label for="password">`,
		`type="password"`, `autocomplete="current-password"`, `role="alert"`} {
		if !strings.Contains(body, want) {
			t.Errorf("sign-in.html lacks %s", want)
		}
	}
	m := regexp.MustCompile(`"(/static/sign-in\.js\?v=[0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("sign-in.html does not name a versioned sign-in.js")
	}
	js := get(r, m[1]).Body.String()
	for _, bad := range []string{"innerHTML", "localStorage", "sessionStorage", "document.cookie", "console.log"} {
		if strings.Contains(js, bad) {
			t.Errorf("sign-in.js uses %s", bad)
		}
	}
	for _, want := range []string{"/api/admin/sign-in", `^\/admin\/`, `: "/admin/"`} { // the console by default
		if !strings.Contains(js, want) {
			t.Errorf("sign-in.js lacks %s", want)
		}
	}
}
