package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service/configtest"
)

// minimalEnv is the least a valid configuration sets.
var minimalEnv = map[string]string{"WEBHOOK_SECRET": "0123456789abcdef"}

func TestConfigDefaults(t *testing.T) {
	cfg := configtest.Load(t, newConfig, minimalEnv)
	if cfg.AdminAddr != "127.0.0.1:9102" {
		t.Errorf("admin address %q, want %q", cfg.AdminAddr, "127.0.0.1:9102")
	}
	if cfg.HTTPAddr != ":8081" || cfg.WebhookTolerance.String() != "5m0s" || cfg.OrderFactSweepInterval.String() != "5s" ||
		cfg.OrderFactSweepAge.String() != "30s" {
		t.Errorf("defaults: %+v", cfg)
	}
}

// Load runs Validate: each bad setting is refused at start with an error
// that names its variable.
func TestConfigValidate(t *testing.T) {
	configtest.Rejects(t, newConfig, minimalEnv, []configtest.Case{
		{Name: "no secret", Env: map[string]string{"WEBHOOK_SECRET": ""}, Wants: []string{"WEBHOOK_SECRET: required and not set"}},
		{Name: "short secret", Env: map[string]string{"WEBHOOK_SECRET": "short"}, Wants: []string{"WEBHOOK_SECRET", "16 bytes"}},
		{Name: "no tolerance", Env: map[string]string{"WEBHOOK_TOLERANCE": "0s"}, Wants: []string{"WEBHOOK_TOLERANCE"}},
		{Name: "no sweep interval", Env: map[string]string{"ORDER_FACT_SWEEP_INTERVAL": "0s"}, Wants: []string{"ORDER_FACT_SWEEP_INTERVAL"}},
		{Name: "no sweep age", Env: map[string]string{"ORDER_FACT_SWEEP_AGE": "0s"}, Wants: []string{"ORDER_FACT_SWEEP_AGE"}},
		{Name: "shared setting", Env: map[string]string{"AMQP_QUEUE_TYPE": "stream"}, Wants: []string{"AMQP_QUEUE_TYPE", "stream"}},
	})
}
