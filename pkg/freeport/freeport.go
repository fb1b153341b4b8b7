// Package freeport picks loopback ports for servers that tests start as
// processes of their own (redis-server, rabbitmq-server).
//
// It picks below the kernel's ephemeral range (ip_local_port_range) when it
// can: a port from that range may be taken, between the pick and the
// server's listen, by the local end of any outgoing connection on the
// machine, which happens often enough on a busy test machine to break
// tests.
//
// It never returns a port, or a companion port, that it returned before in
// the same process: a test that picks several ports before its servers
// listen on them (six redis-server processes, three RabbitMQ nodes) would
// otherwise get the same one twice now and then, and the second server
// would fail to listen.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
)

// From is the lowest port picked.
const From = 20000

// Pair returns a loopback port p, free a moment ago, whose companion port
// p+offset was free too (a Redis Cluster node's bus port is its port +
// 10000, a RabbitMQ node's distribution port is chosen the same way).
// offset 0 asks for one port. Neither port was returned (as a port or a
// companion) by an earlier call in this process.
func Pair(offset int) (int, error) {
	given.mu.Lock()
	defer given.mu.Unlock()
	lo, hi := ephemeralRange()
	from, to := From, lo-1-offset
	if to-from < 1000 {
		from, to = hi+1, 65535-offset
	}
	if to-from >= 1000 {
		for range 200 {
			p := from + rand.IntN(to-from+1)
			if given.ok(p, offset) && free(p) && (offset == 0 || free(p+offset)) {
				return given.take(p, offset), nil
			}
		}
	}
	// no room outside the ephemeral range: let the kernel choose
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if given.ok(p, offset) && (offset == 0 || (p+offset <= 65535 && free(p+offset))) {
			return given.take(p, offset), nil
		}
	}
	return 0, fmt.Errorf("freeport: no free port p with p+%d free", offset)
}

// given holds every port Pair returned in this process, and its companion.
var given = &handedOut{ports: map[int]bool{}}

type handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// ok reports whether neither p nor p+offset was handed out.
func (h *handedOut) ok(p, offset int) bool { return !h.ports[p] && !h.ports[p+offset] }

// take records p and p+offset as handed out and returns p.
func (h *handedOut) take(p, offset int) int {
	h.ports[p], h.ports[p+offset] = true, true
	return p
}

func free(p int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralRange is the kernel's range of local ports for outgoing
// connections (Linux's default when it cannot be read).
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	var l, h int
	if n, _ := fmt.Sscan(string(b), &l, &h); n == 2 && l > 0 && h >= l {
		return l, h
	}
	return lo, hi
}
