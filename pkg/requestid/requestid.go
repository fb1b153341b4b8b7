// Package requestid carries a request or message id through a context, so
// that one id follows a request from the HTTP edge through the RabbitMQ
// messages and Kafka events it causes into every log line about it. The
// HTTP adapters (pkg/httpapi) put a caller's id or a fresh one in the
// context; amqpx and events copy it into a header when publishing and back
// into the handler's context when consuming. Ids from outside are accepted
// only when [Valid], so they cannot forge log lines.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"go.uber.org/zap"
)

// Header is the HTTP header that carries a request id in and out.
const Header = "X-Request-ID"

type key struct{}

// With returns a context carrying id, the request or message id that
// [Logger] adds to log lines.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the id stored by [With], or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Logger returns base with a request_id field when ctx carries an id.
func Logger(ctx context.Context, base *zap.Logger) *zap.Logger {
	if id := From(ctx); id != "" {
		return base.With(zap.String("request_id", id))
	}
	return base
}

// New returns a random 16-hex-digit id.
func New() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Valid reports whether id is acceptable from a client or another
// service: at most 64 characters of letters, digits, '-', '_' and '.'.
func Valid(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// Middleware puts a request id in each net/http request's context: the
// caller's [Header] when it is [Valid], a new one otherwise; it echoes the
// id in the response header.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(Header)
		if !Valid(id) {
			id = New()
		}
		w.Header().Set(Header, id)
		next.ServeHTTP(w, r.WithContext(With(r.Context(), id)))
	})
}
