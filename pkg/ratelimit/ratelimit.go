// Package ratelimit is the gateway's abuse limits: joins per minute per
// client IP and requests per second per user, kept in Redis with
// github.com/go-redis/redis_rate (GCRA, one EVALSHA per check) so that
// every gateway instance shares them, and the client IP as a trusted
// proxy chain reports it (ClientIP). A limit of 0 is off and costs
// nothing. The limiter's keys are "rate:" + the caller's prefix + "rl:…";
// each expires when its bucket is full again.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Config is the limits (0 = off).
type Config struct {
	JoinsPerMinutePerIP      int
	RequestsPerSecondPerUser int
}

// Limiter checks the limits of Config against Redis.
type Limiter struct {
	rl     *redis_rate.Limiter
	prefix string
	cfg    Config
}

// New returns a limiter whose keys start with prefix (the service's Redis
// prefix; a ':' is added when missing).
func New(rdb redis.Cmdable, prefix string, cfg Config) *Limiter {
	if prefix != "" && !strings.HasSuffix(prefix, ":") {
		prefix += ":"
	}
	return &Limiter{rl: redis_rate.NewLimiter(rdb), prefix: prefix, cfg: cfg}
}

// Config is the limits in force.
func (l *Limiter) Config() Config { return l.cfg }

// Decision is one check's outcome: allowed, or refused until RetryAfter
// has passed.
type Decision struct {
	Allowed    bool
	RetryAfter time.Duration
}

// RetryAfterSeconds is Retry-After's value: whole seconds, at least 1.
func (d Decision) RetryAfterSeconds() int64 {
	s := int64(math.Ceil(d.RetryAfter.Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}

var allowed = Decision{Allowed: true}

// Join checks the per-IP join limit for ip. An IPv6 client counts as its
// /64 (one subscriber's network: one host can take any address in it).
func (l *Limiter) Join(ctx context.Context, ip netip.Addr) (Decision, error) {
	if l == nil || l.cfg.JoinsPerMinutePerIP <= 0 {
		return allowed, nil
	}
	return l.check(ctx, l.prefix+"rl:join:ip:"+clientNet(ip), redis_rate.PerMinute(l.cfg.JoinsPerMinutePerIP))
}

// clientNet is the limit's key for ip: the IPv4 address, or the IPv6 /64.
func clientNet(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// User checks the per-user request limit.
func (l *Limiter) User(ctx context.Context, user string) (Decision, error) {
	if l == nil || l.cfg.RequestsPerSecondPerUser <= 0 {
		return allowed, nil
	}
	return l.check(ctx, l.prefix+"rl:user:"+user, redis_rate.PerSecond(l.cfg.RequestsPerSecondPerUser))
}

func (l *Limiter) check(ctx context.Context, key string, lim redis_rate.Limit) (Decision, error) {
	res, err := l.rl.Allow(ctx, key, lim)
	if err != nil {
		return allowed, fmt.Errorf("rate limit: %w", err)
	}
	if res.Allowed > 0 {
		return allowed, nil
	}
	return Decision{RetryAfter: res.RetryAfter}, nil
}

// Proxies is the set of trusted proxies (TRUSTED_PROXIES): only a peer in
// it may say who the client is with X-Forwarded-For.
type Proxies []netip.Prefix

// ParseProxies parses CIDRs (or single addresses).
func ParseProxies(items []string) (Proxies, error) {
	var ps Proxies
	for _, s := range items {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
			}
			ps = append(ps, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}

// Trusted reports whether a is a trusted proxy.
func (ps Proxies) Trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP is the client's address: the TCP peer, unless the peer is a
// trusted proxy; then X-Forwarded-For is read from the right (the hop
// the peer itself added) and the first address that is not a trusted
// proxy is the client. A malformed entry stops the walk at the last
// address known good, so a client cannot smuggle one in front of it.
func (ps Proxies) ClientIP(peer netip.Addr, xff string) netip.Addr {
	peer = peer.Unmap()
	if len(ps) == 0 || xff == "" || !ps.Trusted(peer) {
		return peer
	}
	client := peer
	for xff != "" {
		var hop string
		if i := strings.LastIndexByte(xff, ','); i >= 0 {
			hop, xff = xff[i+1:], xff[:i]
		} else {
			hop, xff = xff, ""
		}
		a, err := netip.ParseAddr(strings.TrimSpace(hop))
		if err != nil {
			return client
		}
		client = a.Unmap()
		if !ps.Trusted(client) {
			return client
		}
	}
	return client
}
