package ratelimit_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/ratelimit"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

func TestClientIP(t *testing.T) {
	ps, err := ratelimit.ParseProxies([]string{"10.0.0.0/8", " 192.168.1.1 ", "::ffff:172.16.0.0/108"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer, xff, want string
	}{
		{"untrusted peer: XFF ignored", "203.0.113.9", "1.2.3.4", "203.0.113.9"},
		{"untrusted peer spoofing a trusted hop", "203.0.113.9", "10.1.1.1, 1.2.3.4", "203.0.113.9"},
		{"trusted peer, no XFF", "10.0.0.1", "", "10.0.0.1"},
		{"trusted peer: the hop it added", "10.0.0.1", "1.2.3.4", "1.2.3.4"},
		{"client-supplied entries left of the real hop are ignored", "10.0.0.1", "6.6.6.6, 1.2.3.4", "1.2.3.4"},
		{"chain of trusted proxies", "10.0.0.1", "6.6.6.6, 1.2.3.4, 192.168.1.1, 10.9.9.9", "1.2.3.4"},
		{"malformed hop stops at the last good one", "10.0.0.1", "1.2.3.4, garbage", "10.0.0.1"},
		{"all trusted: leftmost", "10.0.0.1", "10.2.2.2", "10.2.2.2"},
		{"mapped v4 peer", "::ffff:10.0.0.1", "1.2.3.4", "1.2.3.4"},
		{"v4 CIDR written mapped", "172.16.0.5", "1.2.3.4", "1.2.3.4"},
		{"v6 client", "10.0.0.1", "2001:db8::1", "2001:db8::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ps.ClientIP(netip.MustParseAddr(tc.peer), tc.xff)
			if got != netip.MustParseAddr(tc.want) {
				t.Fatalf("ClientIP(%s, %q) = %s, want %s", tc.peer, tc.xff, got, tc.want)
			}
		})
	}
	if _, err := ratelimit.ParseProxies([]string{"10.0.0.0/99"}); err == nil {
		t.Fatal("bad CIDR accepted")
	}
	var none ratelimit.Proxies
	if got := none.ClientIP(netip.MustParseAddr("10.0.0.1"), "1.2.3.4"); got.String() != "10.0.0.1" {
		t.Fatalf("no trusted proxies: got %s", got)
	}
}

func TestLimits(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	l := ratelimit.New(rdb, redistest.Prefix(t), ratelimit.Config{JoinsPerMinutePerIP: 5, RequestsPerSecondPerUser: 3})
	ip := netip.MustParseAddr("198.51.100.7")
	for i := range 5 {
		d, err := l.Join(ctx, ip)
		if err != nil || !d.Allowed {
			t.Fatalf("join %d below the limit: %+v %v", i, d, err)
		}
	}
	d, err := l.Join(ctx, ip)
	if err != nil || d.Allowed {
		t.Fatalf("6th join of a 5/min limit: %+v %v", d, err)
	}
	// GCRA: one more join is allowed 60/5 = 12 s later
	if s := d.RetryAfterSeconds(); s < 1 || s > 12 {
		t.Fatalf("Retry-After %d s, want 1..12", s)
	}
	// another IP has its own bucket
	if d, _ := l.Join(ctx, netip.MustParseAddr("198.51.100.8")); !d.Allowed {
		t.Fatal("another IP limited")
	}
	// IPv6: one /64 is one client
	for i := range 5 {
		if d, _ := l.Join(ctx, netip.MustParseAddr("2001:db8:1:2::"+string(rune('a'+i)))); !d.Allowed {
			t.Fatalf("v6 join %d below the limit refused", i)
		}
	}
	if d, _ := l.Join(ctx, netip.MustParseAddr("2001:db8:1:2:ffff::1")); d.Allowed {
		t.Fatal("another address of the same /64 not limited")
	}
	if d, _ := l.Join(ctx, netip.MustParseAddr("2001:db8:1:3::1")); !d.Allowed {
		t.Fatal("another /64 limited")
	}
	for i := range 3 {
		if d, err := l.User(ctx, "u1"); err != nil || !d.Allowed {
			t.Fatalf("request %d below the limit: %+v %v", i, d, err)
		}
	}
	if d, _ := l.User(ctx, "u1"); d.Allowed || d.RetryAfterSeconds() != 1 {
		t.Fatalf("4th request of a 3/s limit: %+v", d)
	}

	off := ratelimit.New(rdb, redistest.Prefix(t), ratelimit.Config{})
	for range 100 {
		if d, err := off.Join(ctx, ip); err != nil || !d.Allowed {
			t.Fatal("a 0 limit refused")
		}
	}
}
