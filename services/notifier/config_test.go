package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service/configtest"
)

// minimalEnv is the least a valid configuration sets.
var minimalEnv = map[string]string{"JWT_SECRET": "0123456789abcdef"}

func TestConfigDefaults(t *testing.T) {
	cfg := configtest.Load(t, newConfig, minimalEnv)
	if cfg.AdminAddr != "127.0.0.1:9103" {
		t.Errorf("admin address %q, want %q", cfg.AdminAddr, "127.0.0.1:9103")
	}
	if cfg.HTTPAddr != ":8082" || cfg.SendQueue != 32 || cfg.MaxPerUser != 5 || len(cfg.AllowedOrigins) != 1 || cfg.AllowedOrigins[0] != "*" {
		t.Errorf("defaults: %+v", cfg)
	}
}

// Load runs Validate: each bad setting is refused at start with an error
// that names its variable.
func TestConfigValidate(t *testing.T) {
	configtest.Rejects(t, newConfig, minimalEnv, []configtest.Case{
		{Name: "no JWT secret", Env: map[string]string{"JWT_SECRET": ""}, Wants: []string{"JWT_SECRET: required and not set"}},
		{Name: "no send queue", Env: map[string]string{"SEND_QUEUE": "0"}, Wants: []string{"SEND_QUEUE", "positive"}},
		{Name: "no tick", Env: map[string]string{"POSITION_INTERVAL": "0s"}, Wants: []string{"POSITION_INTERVAL"}},
		{Name: "shared setting", Env: map[string]string{"LOG_FORMAT": "xml"}, Wants: []string{"LOG_FORMAT", "xml"}},
	})
}
