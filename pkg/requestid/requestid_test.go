package requestid

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestContext(t *testing.T) {
	ctx := context.Background()
	if got := From(ctx); got != "" {
		t.Fatalf("empty context has id %q", got)
	}
	ctx = With(ctx, "abc")
	if got := From(ctx); got != "abc" {
		t.Fatalf("From = %q", got)
	}

	core, logs := observer.New(zapcore.InfoLevel)
	base := zap.New(core)
	Logger(ctx, base).Info("with")
	Logger(context.Background(), base).Info("without")
	all := logs.All()
	if got := all[0].ContextMap()["request_id"]; got != "abc" {
		t.Errorf("request_id = %v", got)
	}
	if _, ok := all[1].ContextMap()["request_id"]; ok {
		t.Error("request_id present without an id")
	}
}

func TestMiddleware(t *testing.T) {
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
			h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = From(r.Context())
			}))
			req := httptest.NewRequest("GET", "/", nil)
			if tt.header != "" {
				req.Header.Set(Header, tt.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tt.keep && seen != tt.header {
				t.Errorf("id %q, want the caller's %q", seen, tt.header)
			}
			if !tt.keep && (seen == tt.header || len(seen) != 16) {
				t.Errorf("id %q, want a fresh 16-digit one", seen)
			}
			if rec.Header().Get(Header) != seen {
				t.Errorf("response header %q, context %q", rec.Header().Get(Header), seen)
			}
		})
	}
	if a, b := New(), New(); a == b {
		t.Error("two new ids are equal")
	}
}
