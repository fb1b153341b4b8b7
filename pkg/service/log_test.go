package service

import (
	"testing"

	"go.uber.org/zap/zapcore"
)

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
