package service

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestRequestID(t *testing.T) {
	ctx := context.Background()
	if got := RequestID(ctx); got != "" {
		t.Fatalf("empty context has id %q", got)
	}
	ctx = WithRequestID(ctx, "abc")
	if got := RequestID(ctx); got != "abc" {
		t.Fatalf("RequestID = %q", got)
	}

	core, logs := observer.New(zapcore.InfoLevel)
	base := zap.New(core)
	LoggerFrom(ctx, base).Info("with")
	LoggerFrom(context.Background(), base).Info("without")
	all := logs.All()
	if got := all[0].ContextMap()["request_id"]; got != "abc" {
		t.Errorf("request_id = %v", got)
	}
	if _, ok := all[1].ContextMap()["request_id"]; ok {
		t.Error("request_id present without an id")
	}
}

func TestRequestIDMiddleware(t *testing.T) {
	tests := []struct {
		name, header string
		keep         bool
	}{
		{"kept", "req-123_A.b", true},
		{"generated when absent", "", false},
		{"replaced when unsafe", "evil\nlog line", false},
		{"replaced when too long", string(make([]byte, 65)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen string
			h := RequestIDMiddleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = RequestID(r.Context())
			}))
			req := httptest.NewRequest("GET", "/", nil)
			if tt.header != "" {
				req.Header.Set(RequestIDHeader, tt.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tt.keep && seen != tt.header {
				t.Errorf("id %q, want the caller's %q", seen, tt.header)
			}
			if !tt.keep && (seen == tt.header || len(seen) != 16) {
				t.Errorf("id %q, want a fresh 16-digit one", seen)
			}
			if rec.Header().Get(RequestIDHeader) != seen {
				t.Errorf("response header %q, context %q", rec.Header().Get(RequestIDHeader), seen)
			}
		})
	}
	if NewRequestID() == NewRequestID() {
		t.Error("two new ids are equal")
	}
}

func TestNewLogger(t *testing.T) {
	tests := []struct {
		level, format string
		ok            bool
		debug         bool
	}{
		{"info", "json", true, false},
		{"debug", "console", true, true},
		{"warn", "", true, false},
		{"loud", "json", false, false},
		{"info", "xml", false, false},
	}
	for _, tt := range tests {
		log, err := NewLogger(tt.level, tt.format)
		if (err == nil) != tt.ok {
			t.Errorf("NewLogger(%q, %q) error %v, want ok=%v", tt.level, tt.format, err, tt.ok)
			continue
		}
		if err == nil && log.Core().Enabled(zapcore.DebugLevel) != tt.debug {
			t.Errorf("NewLogger(%q, %q) debug enabled = %v", tt.level, tt.format, !tt.debug)
		}
	}
}
