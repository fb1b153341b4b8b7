package web

import (
	"io/fs"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// Every page, script and style carries the browser protections, and the
// page needs nothing the CSP forbids: no inline script, handler or style.
func TestPagesSendSecurityHeaders(t *testing.T) {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	RegisterWith(r, Options{})
	for _, path := range []string{"/", "/config.js", "/static/app.js", "/static/style.css"} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		h := w.Header()
		csp := h.Get("Content-Security-Policy")
		if w.Code != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" {
			t.Errorf("GET %s: %d, headers %v", path, w.Code, h)
		}
	}
	html, _ := fs.ReadFile(static, "static/index.html")
	for _, re := range []string{`<script(?:\s[^>]*)?>[^<]`, `\son[a-z]+\s*=`, `\sstyle\s*=`, `<style`} {
		if m := regexp.MustCompile(re).FindString(string(html)); m != "" {
			t.Errorf("index.html has %q, which the CSP blocks", m)
		}
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(html), -1) {
		if !strings.Contains(tag, "src=") {
			t.Errorf("inline script %s", tag)
		}
	}
}

// A pictograph in a page (the brand's ticket) is decoration: hidden from
// screen readers, so that a link reads "boxoffice", not "admission
// tickets boxoffice".
func TestPagesHideTheirPictographs(t *testing.T) {
	pages, err := fs.Glob(static, "static/*.html")
	if err != nil || len(pages) == 0 {
		t.Fatalf("pages: %v %v", pages, err)
	}
	hidden := regexp.MustCompile(`<span aria-hidden="true">[^<]*</span>`)
	pictograph := regexp.MustCompile(`[\x{1F300}-\x{1FAFF}\x{2600}-\x{27BF}]`)
	for _, p := range pages {
		b, _ := fs.ReadFile(static, p)
		if m := pictograph.FindString(hidden.ReplaceAllString(string(b), "")); m != "" {
			t.Errorf("%s: %q is read aloud (wrap it in <span aria-hidden=\"true\">)", p, m)
		}
	}
}
