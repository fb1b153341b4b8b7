package freeport

import (
	"fmt"
	"net"
	"testing"
)

// Pair's ports are below the ephemeral range (where the machine's outgoing
// connections cannot take them) and both can be listened on.
func TestPairBelowTheEphemeralRange(t *testing.T) {
	lo, _ := ephemeralRange()
	if lo-1-10000-From < 1000 {
		t.Skipf("the ephemeral range starts at %d: no room below it on this machine", lo)
	}
	for range 20 {
		p, err := Pair(10000)
		if err != nil {
			t.Fatal(err)
		}
		if p < From || p+10000 >= lo {
			t.Fatalf("Pair(10000) = %d: %d..%d is not inside %d..%d", p, p, p+10000, From, lo-1)
		}
		for _, q := range []int{p, p + 10000} {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", q))
			if err != nil {
				t.Fatalf("port %d from Pair is not free: %v", q, err)
			}
			l.Close()
		}
	}
}

// Pair never hands out a port twice in a process, not even while nothing
// listens on the first one yet (a test picks its servers' ports before
// they start): no port and no companion port repeats.
func TestPairNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p, err := Pair(10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []int{p, p + 10000} {
			if seen[q] {
				t.Fatalf("Pair(10000) = %d: port %d was handed out before", p, q)
			}
			seen[q] = true
		}
	}
}
