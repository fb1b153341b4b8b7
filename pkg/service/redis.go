package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisPingTimeout bounds the connection check of [NewRedis].
const redisPingTimeout = 5 * time.Second

// RedisClusterReloadInterval is how stale a cluster client's map of slots
// to masters may get while commands are running. go-redis reloads the map
// at once on a MOVED or ASK reply, but a master that crashed answers
// nothing: its slots' commands fail with "connection refused" until the
// map is reloaded, even after the cluster promoted the replica. go-redis's
// default (60 s) kept a killed master's events unavailable for about a
// minute; at 1 s they answer again within about a second of the promotion
// (docs/scaling.md). A reload is one CLUSTER SLOTS, at most once per
// interval and only while commands are being sent.
const RedisClusterReloadInterval = time.Second

// NewRedis connects to Redis as c describes: one address gives a
// *redis.Client, several addresses (or REDIS_CLUSTER=true) a
// *redis.ClusterClient seeded with them. It pings before returning, so a
// wrong address or password fails at start, not on the first request.
func NewRedis(c Common) (redis.UniversalClient, error) {
	if len(c.RedisAddr) == 0 {
		return nil, errors.New("redis: REDIS_ADDR is empty")
	}
	var rdb redis.UniversalClient
	if len(c.RedisAddr) == 1 && !c.RedisCluster {
		rdb = redis.NewClient(&redis.Options{Addr: c.RedisAddr[0], Password: c.RedisPassword})
	} else {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.RedisAddr, Password: c.RedisPassword,
			ClusterStateReloadInterval: RedisClusterReloadInterval})
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisPingTimeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis ping %v: %w", c.RedisAddr, err)
	}
	return rdb, nil
}

// RedisCheck is a readiness check ([Admin.AddCheck]) that pings rdb.
func RedisCheck(rdb redis.UniversalClient) func(context.Context) error {
	return func(ctx context.Context) error { return rdb.Ping(ctx).Err() }
}
