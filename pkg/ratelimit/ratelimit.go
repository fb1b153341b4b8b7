// Package ratelimit is the gateway's abuse-limit policy: joins per minute
// per client IP and requests per second per user (Config), turned into
// the booking engine's limits (booking.Limit), which the booking scripts
// check in the same atomic step as the join or read they guard, so that
// every gateway instance shares them at no extra round trip; and the
// client IP as a trusted proxy chain reports it (ClientIP). A limit of 0
// is off and costs nothing.
package ratelimit

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// Config is the limits (0 = off).
type Config struct {
	JoinsPerMinutePerIP      int
	RequestsPerSecondPerUser int
	// CodeTriesPerMinutePerIP bounds the joins with an access code from
	// one client address (CodeTries): guessing codes at join rate is
	// not possible.
	CodeTriesPerMinutePerIP int
}

// IP is the per-IP join limit of ip's network. An IPv6 client counts as
// its /64 (one subscriber's network: one host can take any address in it).
func (c Config) IP(ip netip.Addr) booking.Limit {
	if c.JoinsPerMinutePerIP <= 0 {
		return booking.Limit{}
	}
	return booking.Limit{Subject: "ip:" + clientNet(ip), Rate: c.JoinsPerMinutePerIP, Period: time.Minute}
}

// User is the per-user request limit of user.
func (c Config) User(user string) booking.Limit {
	if c.RequestsPerSecondPerUser <= 0 {
		return booking.Limit{}
	}
	return booking.Limit{Subject: booking.UserSubject(user), Rate: c.RequestsPerSecondPerUser, Period: time.Second}
}

// clientNet is the limit's subject for ip: the IPv4 address, or the IPv6 /64.
func clientNet(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
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

// CodeTries is the limit of ip's joins with an access code (off when
// CodeTriesPerMinutePerIP is 0): they count against it whether the code
// is right or not.
func (c Config) CodeTries(ip netip.Addr) booking.Limit {
	if c.CodeTriesPerMinutePerIP <= 0 {
		return booking.Limit{}
	}
	return booking.Limit{Subject: "code:" + clientNet(ip), Rate: c.CodeTriesPerMinutePerIP, Period: time.Minute}
}
