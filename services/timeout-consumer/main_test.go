package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service/configtest"
)

func TestConfigDefaults(t *testing.T) {
	cfg := configtest.Load(t, newConfig, nil)
	if cfg.AdminAddr != "127.0.0.1:9106" || cfg.Workers <= 0 || cfg.MaxRetries != 5 || cfg.AMQPDelayedPlugin {
		t.Errorf("defaults: %+v", cfg)
	}
}

// Load runs Validate: each bad setting is refused at start with an error
// that names its variable.
func TestConfigValidate(t *testing.T) {
	configtest.Rejects(t, newConfig, nil, []configtest.Case{
		{Name: "no workers", Env: map[string]string{"WORKERS": "-1"}, Wants: []string{"WORKERS"}},
		{Name: "shared setting", Env: map[string]string{"LOG_LEVEL": "loud"}, Wants: []string{"LOG_LEVEL"}},
	})
}
