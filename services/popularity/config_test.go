package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service/configtest"
)

// minimalEnv is the least a valid configuration sets.
var minimalEnv = map[string]string{}

func TestConfigDefaults(t *testing.T) {
	cfg := configtest.Load(t, newConfig, minimalEnv)
	if cfg.AdminAddr != "127.0.0.1:9107" {
		t.Errorf("admin address %q, want %q", cfg.AdminAddr, "127.0.0.1:9107")
	}
	if cfg.GroupID != "popularity" || cfg.ReportGroup != "report" || cfg.SeenTTL.String() != "168h0m0s" {
		t.Errorf("defaults: %+v", cfg)
	}
}

// Load runs Validate: each bad setting is refused at start with an error
// that names its variable.
func TestConfigValidate(t *testing.T) {
	configtest.Rejects(t, newConfig, minimalEnv, []configtest.Case{
		{Name: "no dedupe window", Env: map[string]string{"POPULARITY_SEEN_TTL": "0s"}, Wants: []string{"POPULARITY_SEEN_TTL"}},
		{Name: "no broker", Env: map[string]string{"KAFKA_BROKERS": ","}, Wants: []string{"KAFKA_BROKERS"}},
		{Name: "unparsable", Env: map[string]string{"KAFKA_TLS": "maybe"}, Wants: []string{"KAFKA_TLS", "maybe"}},
	})
}
