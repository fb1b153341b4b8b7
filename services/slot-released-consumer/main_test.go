package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service/configtest"
)

func TestConfigDefaults(t *testing.T) {
	cfg := configtest.Load(t, newConfig, nil)
	if cfg.AdminAddr != "127.0.0.1:9105" || cfg.Workers <= 0 || cfg.MaxRetries != 5 || cfg.AMQPDelayedPlugin {
		t.Errorf("defaults: %+v", cfg)
	}
	if cfg.SafetyNetInterval.String() != "5s" || cfg.OutboxSweepAge.String() != "30s" {
		t.Errorf("safety net defaults: %v %v", cfg.SafetyNetInterval, cfg.OutboxSweepAge)
	}
}

// Load runs Validate: each bad setting is refused at start with an error
// that names its variable.
func TestConfigValidate(t *testing.T) {
	configtest.Rejects(t, newConfig, nil, []configtest.Case{
		{Name: "no workers", Env: map[string]string{"WORKERS": "0"}, Wants: []string{"WORKERS"}},
		{Name: "no safety net", Env: map[string]string{"SAFETY_NET_INTERVAL": "0s"}, Wants: []string{"SAFETY_NET_INTERVAL"}},
		{Name: "shared setting", Env: map[string]string{"AMQP_QUEUE_TYPE": "stream"}, Wants: []string{"AMQP_QUEUE_TYPE"}},
	})
}
