// Package web is the end-user web pages of boxoffice, embedded in the
// gateway binary (no build step): the event list, the waiting room (live
// position, ETA and progress from the notifier's WebSocket, "your turn"
// with a countdown of the hold), the seat map (updated live), the hand-off
// to the payment provider's hosted checkout, and the confirmation or the
// reason a booking failed. Plain HTML, CSS and JavaScript; works on a phone.
//
// The pages call the gateway's own API on the same origin and open the
// notifier's WebSocket at NOTIFIER_PUBLIC_URL (a ws:// or wss:// URL up to
// /ws), which /config.js hands to the page; when unset, the page uses the
// host it was loaded from on port 8082. In development the page gets its
// token from POST /api/auth/dev-token (DEV_TOKENS=true) for a user id it
// generates once and keeps in localStorage.
package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
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

// RegisterWith is Register with explicit options.
func RegisterWith(r *gin.Engine, o Options) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	cfg, _ := json.Marshal(map[string]string{"notifierURL": o.NotifierURL})
	configJS := []byte("window.BOXOFFICE_CONFIG = " + string(cfg) + ";\n")

	// every page, script and style with the browser protections: a CSP
	// with no inline script (the page's script and config are files), no
	// framing, no sniffing (docs/security.md)
	sec := httpapi.SecurityHeaders(httpapi.PageCSP)
	r.GET("/", sec, func(c *gin.Context) {
		c.Header("Cache-Control", "no-cache")
		c.Data(http.StatusOK, "text/html; charset=utf-8", index)
	})
	r.GET("/config.js", sec, func(c *gin.Context) {
		c.Header("Cache-Control", "no-cache")
		c.Data(http.StatusOK, "text/javascript; charset=utf-8", configJS)
	})
	r.Group("/static", sec).StaticFS("/", http.FS(sub))
}
