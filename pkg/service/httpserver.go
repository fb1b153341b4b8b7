package service

import (
	"net/http"
	"time"
)

// HTTPLimits are what a net/http server lets one connection hold. Every
// boxoffice net/http listener (payment-webhook, payment-sandbox, notifier,
// every admin listener) is built by NewHTTPServer with DefaultHTTPLimits,
// so a client that sends its body slowly or never, keeps an idle
// keep-alive open, or sends a megabyte of headers is cut off the same way
// everywhere (docs/security.md). The gateway's fasthttp server has the
// same numbers (the gateway's fastserver.NewServer).
type HTTPLimits struct {
	// ReadHeaderTimeout bounds receiving the request line and headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds receiving the whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing the response (0: none; the admin
	// listener has none so a pprof profile can run its full length).
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and header fields, with
	// their line ends and the blank line that ends them: one byte more is
	// a 431 (in the JSON error format when served through
	// httpapi.Listener).
	MaxHeaderBytes int
}

// MaxHeaderBytes is every server's bound on a request's line and headers
// (docs/security.md).
const MaxHeaderBytes = 16 << 10

// netHTTPHeaderSlack is what net/http lets a request's line and headers
// exceed http.Server.MaxHeaderBytes by: it stops reading the connection
// that many bytes later (its bufio buffer, "bufio slop" in
// net/http/server.go), so a MaxHeaderBytes of 16 KiB let 20 KiB through.
// TestHTTPHeaderLimitIsExact pins it.
const netHTTPHeaderSlack = 4096

// DefaultHTTPLimits are the limits of every net/http server.
var DefaultHTTPLimits = HTTPLimits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    MaxHeaderBytes,
}

// NewHTTPServer returns a server for addr and h with DefaultHTTPLimits.
// A handler that upgrades to a long-lived connection (the notifier's
// WebSocket) must clear the deadlines these set on its connection
// (http.ResponseController's SetReadDeadline and SetWriteDeadline with a
// zero time) before it hijacks it.
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return DefaultHTTPLimits.Server(addr, h)
}

// Server returns a server for addr and h with these limits.
func (l HTTPLimits) Server(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    max(l.MaxHeaderBytes-netHTTPHeaderSlack, 1),
	}
}
