package main

import (
	"testing"

	"github.com/boxoffice/boxoffice/pkg/ratelimit"
	"github.com/boxoffice/boxoffice/pkg/service/configtest"
)

// minimalEnv is the least a valid configuration sets.
var minimalEnv = map[string]string{"JWT_SECRET": "0123456789abcdef"}

func TestConfigDefaults(t *testing.T) {
	cfg := configtest.Load(t, newConfig, minimalEnv)
	if cfg.AdminAddr != "127.0.0.1:9101" {
		t.Errorf("admin address %q, want %q", cfg.AdminAddr, "127.0.0.1:9101")
	}
	if cfg.HTTPAddr != ":8080" || cfg.TicketPrice != 5000 || cfg.DevTokens || cfg.RedisPrefix != "bo" {
		t.Errorf("defaults: %+v", cfg)
	}
	// the abuse limits are on unless a deployment turns them off
	if l := cfg.abuseLimits(); l.JoinsPerMinutePerIP != 120 || l.RequestsPerSecondPerUser != 10 || l.CodeTriesPerMinutePerIP != 10 {
		t.Errorf("default abuse limits %+v, want 120 joins per minute per IP and 10 requests per second per user", l)
	}
	off := configtest.Load(t, newConfig, map[string]string{"JWT_SECRET": "0123456789abcdef",
		"RATE_JOINS_PER_MINUTE_PER_IP": "0", "RATE_REQUESTS_PER_SECOND_PER_USER": "0", "RATE_CODE_TRIES_PER_MINUTE_PER_IP": "0"})
	if l := off.abuseLimits(); l != (ratelimit.Config{}) {
		t.Errorf("abuse limits set to 0: %+v, want off", l)
	}
}

// Load runs Validate: each bad setting is refused at start with an error
// that names its variable.
func TestConfigValidate(t *testing.T) {
	configtest.Rejects(t, newConfig, minimalEnv, []configtest.Case{
		{Name: "no JWT secret", Env: map[string]string{"JWT_SECRET": ""}, Wants: []string{"JWT_SECRET: required and not set"}},
		{Name: "negative rate limit", Env: map[string]string{"RATE_JOINS_PER_MINUTE_PER_IP": "-1"}, Wants: []string{"RATE_JOINS_PER_MINUTE_PER_IP", ">= 0"}},
		{Name: "negative price", Env: map[string]string{"TICKET_PRICE_CENTS": "-5"}, Wants: []string{"TICKET_PRICE_CENTS"}},
		{Name: "negative code tries", Env: map[string]string{"RATE_CODE_TRIES_PER_MINUTE_PER_IP": "-1"}, Wants: []string{"RATE_CODE_TRIES_PER_MINUTE_PER_IP"}},
		{Name: "short code key", Env: map[string]string{"ACCESS_CODE_HMAC_KEY": "short"}, Wants: []string{"ACCESS_CODE_HMAC_KEY", "16 bytes"}},
		{Name: "shared setting", Env: map[string]string{"KAFKA_SASL_MECHANISM": "OAUTH"}, Wants: []string{"KAFKA_SASL_MECHANISM", "OAUTH"}},
		{Name: "unparsable", Env: map[string]string{"DEV_TOKEN_TTL": "1 day"}, Wants: []string{"DEV_TOKEN_TTL", "invalid duration"}},
	})
}
