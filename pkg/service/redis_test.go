package service

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestNewRedis(t *testing.T) {
	tests := []struct {
		name    string
		common  Common
		wantErr string
		want    string // client type
	}{
		{"single", Common{RedisAddr: []string{"127.0.0.1:6379"}}, "", "*redis.Client"},
		{"nothing listening", Common{RedisAddr: []string{"127.0.0.1:1"}}, "127.0.0.1:1", ""},
		{"empty", Common{}, "REDIS_ADDR", ""},
		{"cluster seeds unreachable", Common{RedisAddr: []string{"127.0.0.1:1", "127.0.0.1:2"}}, "redis ping", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, err := NewRedis(tt.common)
			if tt.wantErr != "" {
				if err == nil {
					rdb.Close()
					t.Fatalf("no error, want one mentioning %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %q does not mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewRedis: %v (is Redis up? scripts/ensure-infra.sh)", err)
			}
			defer rdb.Close()
			if _, ok := rdb.(*redis.Client); !ok {
				t.Fatalf("client is %T, want %s", rdb, tt.want)
			}
			if err := rdb.Ping(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewRedisClusterFlag(t *testing.T) {
	// REDIS_CLUSTER=true with one seed asks for a cluster client; the
	// standalone Redis on 6379 refuses cluster commands, so this fails at
	// the ping rather than silently using a plain client.
	_, err := NewRedis(Common{RedisAddr: []string{"127.0.0.1:6379"}, RedisCluster: true})
	if err == nil {
		t.Fatal("cluster client against a standalone Redis pinged fine")
	}
}
