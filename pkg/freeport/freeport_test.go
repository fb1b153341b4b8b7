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
