// Package web is the end-user web pages of boxoffice, embedded in the
// gateway binary (no build step): the event list, the waiting room (live
// position, ETA and progress from the notifier's WebSocket, or from
// GET /api/booking/position polled over HTTP while the socket is down;
// "your turn" with a countdown of the hold), the seat map (updated live),
// the hand-off to the payment provider's hosted checkout, and the
// confirmation or the reason a booking failed. Plain HTML, CSS and
// JavaScript; works on a phone and with a keyboard or a screen reader.
// docs/web.md describes the behaviour.
//
// The pages call the gateway's own API on the same origin and open the
// notifier's WebSocket at NOTIFIER_PUBLIC_URL (a ws:// or wss:// URL up to
// /ws), which /config.js hands to the page; when unset, the page uses the
// host it was loaded from on port 8082. In development the page gets its
// token from POST /api/auth/dev-token (DEV_TOKENS=true) for a user id it
// generates once and keeps in localStorage.
package web

import (
	"compress/gzip"
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

//go:embed static
var static embed.FS

// Options configure the pages.
type Options struct {
	// NotifierURL is the notifier's WebSocket endpoint as a browser reaches
	// it, e.g. wss://notify.example.com/ws. Empty: same host, port 8082.
	NotifierURL string
}

// Register serves the pages at / and /static/…, and /config.js, with the
// notifier URL taken from NOTIFIER_PUBLIC_URL.
func Register(r *gin.Engine) {
	RegisterWith(r, Options{NotifierURL: os.Getenv("NOTIFIER_PUBLIC_URL")})
}

// RegisterWith is Register with explicit options. It also serves the
// operators' pages: the sign-in page at /admin/sign-in.html (sign-in.js:
// POST /api/admin/sign-in sets the session cookie) and the sale report
// at /admin/report.html (report.js: GET /api/admin/events/{id}/report in
// that session; to the sign-in page without one), and the console at
// /admin/ (console.js: events, the live view and its controls, orders and
// the audit trail, through the admin API in that session).
//
// Caching (docs/web.md): index.html names every static file with ?v=<its
// content hash>, so /static/… is cached for a year (immutable) and a new
// build is fetched at once; / and /config.js are revalidated every time
// (no-cache) against their ETag. Every text file is served gzip-compressed
// to clients that accept it, compressed once at start.
func RegisterWith(r *gin.Engine, o Options) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := map[string]*asset{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) == ".html" { // pages, below
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		files[p] = newAsset(b, mime.TypeByExtension(path.Ext(p)), "public, max-age=31536000, immutable")
		return nil
	})
	if err != nil {
		panic(err)
	}
	page := newPage(sub, "index.html", files)
	report := newPage(sub, "report.html", files)   // the operator's sale report (report.js)
	signIn := newPage(sub, "sign-in.html", files)  // the operators' sign-in (sign-in.js)
	console := newPage(sub, "console.html", files) // the operators' console (console.js)
	cfg, _ := json.Marshal(map[string]string{"notifierURL": o.NotifierURL})
	configJS := newAsset([]byte("window.BOXOFFICE_CONFIG = "+string(cfg)+";\n"), "text/javascript; charset=utf-8", "no-cache")
	favicon := newAsset(files["favicon.svg"].Body, "image/svg+xml", "public, max-age=86400")

	// every page, script and style with the browser protections: a CSP
	// with no inline script (the page's script and config are files), no
	// framing, no sniffing (docs/security.md)
	sec := httpapi.SecurityHeaders(httpapi.PageCSP)
	r.GET("/", sec, page.serve)
	r.HEAD("/", sec, page.serve)
	r.GET("/admin/report.html", sec, report.serve)
	r.HEAD("/admin/report.html", sec, report.serve)
	r.GET("/admin/sign-in.html", sec, signIn.serve)
	r.HEAD("/admin/sign-in.html", sec, signIn.serve)
	r.GET("/admin/", sec, console.serve)
	r.HEAD("/admin/", sec, console.serve)
	r.GET("/config.js", sec, configJS.serve)
	r.GET("/favicon.svg", sec, favicon.serve)
	r.GET("/favicon.ico", sec, favicon.serve) // browsers that ask without reading <link rel=icon>
	r.GET("/static/*file", sec, func(c *gin.Context) {
		a, ok := files[strings.TrimPrefix(c.Param("file"), "/")]
		if !ok {
			c.Status(http.StatusNotFound)
			return
		}
		a.serve(c)
	})
}

// newPage is the HTML page name with every static file it names versioned
// (?v=<content hash>), revalidated every time (no-cache).
func newPage(sub fs.FS, name string, files map[string]*asset) *asset {
	b, err := fs.ReadFile(sub, name)
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	html := string(b)
	for p, a := range files {
		html = strings.ReplaceAll(html, `"/static/`+p+`"`, `"/static/`+p+`?v=`+a.ETag[1:9]+`"`)
	}
	return newAsset([]byte(html), "text/html; charset=utf-8", "no-cache")
}

// asset is one file in memory, with its ETag and gzip encoding.
type asset struct {
	*fastserver.Encoded
	ctype, cache string
}

func newAsset(b []byte, ctype, cache string) *asset {
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	level := gzip.NoCompression
	if len(b) > 512 && (strings.HasPrefix(ctype, "text/") || strings.Contains(ctype, "javascript") || strings.Contains(ctype, "svg")) {
		level = gzip.BestCompression // once, at start
	}
	return &asset{Encoded: fastserver.Encode(b, level), ctype: ctype, cache: cache}
}

func (a *asset) serve(c *gin.Context) {
	h := c.Writer.Header()
	body, etag, coding := a.Select(c.GetHeader("Accept-Encoding"))
	h.Set("Cache-Control", a.cache)
	h.Set("ETag", etag)
	if a.Gzip != nil {
		h.Add("Vary", "Accept-Encoding")
	}
	if a.NotModified(c.GetHeader("If-None-Match")) {
		c.Status(http.StatusNotModified)
		return
	}
	if coding != "" {
		h.Set("Content-Encoding", coding)
	}
	if c.Request.Method == http.MethodHead {
		h.Set("Content-Type", a.ctype)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		c.Status(http.StatusOK)
		return
	}
	c.Data(http.StatusOK, a.ctype, body)
}
