package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service/configtest"
)

// minimalEnv is the least a valid configuration sets.
var minimalEnv = map[string]string{"WEBHOOK_SECRET": "0123456789abcdef"}

func TestConfigDefaults(t *testing.T) {
	cfg := configtest.Load(t, newConfig, minimalEnv)
	if cfg.AdminAddr != "127.0.0.1:9104" {
		t.Errorf("admin address %q, want %q", cfg.AdminAddr, "127.0.0.1:9104")
	}
	if cfg.HTTPAddr != ":8083" || cfg.RetryAttempts != 20 || cfg.RetryMin.String() != "200ms" || cfg.RetryMax.String() != "30s" {
		t.Errorf("defaults: %+v", cfg)
	}
}

// Load runs Validate: each bad setting is refused at start with an error
// that names its variable.
func TestConfigValidate(t *testing.T) {
	configtest.Rejects(t, newConfig, minimalEnv, []configtest.Case{
		{Name: "no secret", Env: map[string]string{"WEBHOOK_SECRET": ""}, Wants: []string{"WEBHOOK_SECRET: required and not set"}},
		{Name: "no attempts", Env: map[string]string{"WEBHOOK_RETRY_ATTEMPTS": "0"}, Wants: []string{"WEBHOOK_RETRY_ATTEMPTS"}},
		{Name: "min above max", Env: map[string]string{"WEBHOOK_RETRY_MIN": "1m", "WEBHOOK_RETRY_MAX": "1s"}, Wants: []string{"WEBHOOK_RETRY_MIN", "WEBHOOK_RETRY_MAX"}},
	})
}
