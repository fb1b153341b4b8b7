package httpapi

import "github.com/gin-gonic/gin"

// Browser protections for what a browser renders (pages, their scripts
// and styles): a Content-Security-Policy that allows no inline script, no
// framing by any other page (frame-ancestors, and X-Frame-Options for
// older browsers), no MIME sniffing, and no full URL in the Referer sent
// to other origins. docs/security.md lists where each is sent.

// PageCSP is the policy of the gateway's pages: everything from the page's
// own origin, scripts only from files (no inline script, no eval), and
// WebSocket connections to the notifier, which may be on another host or
// port (NOTIFIER_PUBLIC_URL).
const PageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// SecurityHeaders returns middleware that sets the browser protections
// with the given Content-Security-Policy.
func SecurityHeaders(csp string) gin.HandlerFunc {
	return func(c *gin.Context) {
		SetSecurityHeaders(c, csp)
		c.Next()
	}
}

// SetSecurityHeaders sets the browser protections on one response.
func SetSecurityHeaders(c *gin.Context, csp string) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
}
