package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service"
)

func TestConfigDefaults(t *testing.T) {
	cfg := Config{Common: service.Common{AdminAddr: service.DefaultAdminAddr(name)}}
	if err := service.LoadFrom(&cfg, func(string) (string, bool) { return "", false }); err != nil {
		t.Fatalf("load: %v", err)
	}
	if cfg.AdminAddr != "127.0.0.1:9105" || cfg.Workers <= 0 || cfg.MaxRetries != 5 || cfg.AMQPDelayedPlugin {
		t.Errorf("defaults: %+v", cfg)
	}
	if cfg.SafetyNetInterval.String() != "5s" || cfg.OutboxSweepAge.String() != "30s" {
		t.Errorf("safety net defaults: %v %v", cfg.SafetyNetInterval, cfg.OutboxSweepAge)
	}
}
