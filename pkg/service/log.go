package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger builds the process logger. level is debug, info, warn or error;
// format is json (production: ISO8601 time, sampled per message above 100/s)
// or console (human readable, for development). Logs go to stderr.
func NewLogger(level, format string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	var cfg zap.Config
	switch format {
	case "json", "":
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
		cfg.EncoderConfig.TimeKey = "time"
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.Development = false
		cfg.EncoderConfig.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
	default:
		return nil, fmt.Errorf("log format %q: use json or console", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.DisableStacktrace = true // errors carry their context; traces are noise here
	return cfg.Build()
}

type requestIDKey struct{}

// WithRequestID returns a context carrying id, the request or message id
// that [LoggerFrom] adds to log lines.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the id stored by [WithRequestID], or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// LoggerFrom returns base with a request_id field when ctx carries one.
func LoggerFrom(ctx context.Context, base *zap.Logger) *zap.Logger {
	if id := RequestID(ctx); id != "" {
		return base.With(zap.String("request_id", id))
	}
	return base
}

// NewRequestID returns a random 16-hex-digit id.
func NewRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// RequestIDHeader is the HTTP header that carries a request id in and out.
const RequestIDHeader = "X-Request-ID"

// RequestIDMiddleware puts a request id in each request's context: the
// caller's X-Request-ID when it is a sane token (at most 64 characters of
// letters, digits, '-', '_', '.'), a new one otherwise; it echoes the id in
// the response header. Untrusted ids are rejected so they cannot forge log
// lines.
func RequestIDMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !ValidRequestID(id) {
			id = NewRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(WithRequestID(r.Context(), id)))
	})
}

// ValidRequestID reports whether id is acceptable from a client.
func ValidRequestID(id string) bool {
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
