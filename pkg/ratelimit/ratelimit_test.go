package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
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

// TestLimits: the policy's limits, enforced by the booking engine
// (pkg/booking's TestLimitsInTheJoin checks the GCRA itself).
func TestLimits(t *testing.T) {
	cfg := ratelimit.Config{JoinsPerMinutePerIP: 5, RequestsPerSecondPerUser: 3}
	for _, tc := range []struct {
		name string
		got  booking.Limit
		want booking.Limit
	}{
		{"v4 join", cfg.IP(netip.MustParseAddr("198.51.100.7")), booking.Limit{Subject: "ip:198.51.100.7", Rate: 5, Period: time.Minute}},
		{"mapped v4 is v4", cfg.IP(netip.MustParseAddr("::ffff:198.51.100.7")), booking.Limit{Subject: "ip:198.51.100.7", Rate: 5, Period: time.Minute}},
		{"v6: its /64", cfg.IP(netip.MustParseAddr("2001:db8:1:2:ffff::1")), booking.Limit{Subject: "ip:2001:db8:1:2::/64", Rate: 5, Period: time.Minute}},
		{"user", cfg.User("alice"), booking.Limit{Subject: "u:alice", Rate: 3, Period: time.Second}},
		{"join limit off", ratelimit.Config{}.IP(netip.MustParseAddr("198.51.100.7")), booking.Limit{}},
		{"user limit off", ratelimit.Config{}.User("alice"), booking.Limit{}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}

	// enforced: the sixth join from one address in a minute is refused,
	// another address and another /64 are not
	rdb := redistest.Client(t)
	ctx := context.Background()
	s := booking.New(rdb, booking.WithPrefix(strings.TrimSuffix(redistest.Prefix(t), ":")))
	t.Cleanup(s.Close)
	if _, err := s.CreateEvent(ctx, booking.EventConfig{ID: "e", Rows: 1, SeatsPerRow: 5, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	join := func(user, ip string) error {
		_, err := s.Enqueue(ctx, "e", user, cfg.IP(netip.MustParseAddr(ip)), cfg.User(user))
		return err
	}
	for i := range 5 {
		if err := join(fmt.Sprint("v6-", i), fmt.Sprintf("2001:db8:1:2::%x", i+1)); err != nil {
			t.Fatalf("v6 join %d below the limit: %v", i, err)
		}
	}
	if err := join("v6-x", "2001:db8:1:2:ffff::1"); !errors.Is(err, booking.ErrRateLimited) {
		t.Fatalf("another address of the same /64: %v", err)
	}
	if err := join("v6-y", "2001:db8:1:3::1"); err != nil {
		t.Fatalf("another /64: %v", err)
	}
}
