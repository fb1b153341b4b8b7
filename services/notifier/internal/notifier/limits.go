package notifier

import (
	"net"
	"net/http"
	"syscall"
)

// Connection caps. One token must not be able to hold thousands of
// connections (each costs a file descriptor and memory), nor one address.
// The policy is "the newest is refused": an upgrade beyond a cap is
// answered 429 (per user and event, per client address) or 503 (the
// instance's total) and nothing already open is closed, so a flood never
// evicts a working tab and costs the notifier no churn. A browser closes a
// page's connection when the page goes away, and a dead peer is dropped by
// the ping timeout, so a user who reloads rarely meets the cap.

// Defaults of the caps (Config, and the notifier's MAX_CONNECTIONS_PER_USER
// and MAX_CONNECTIONS_PER_IP).
const (
	DefaultMaxPerUser = 5
	DefaultMaxPerIP   = 500
)

// refusal is why an upgrade was refused (the refusals metric's label).
type refusal string

const (
	refusedTotal   refusal = "total"
	refusedPerUser refusal = "per_user"
	refusedPerIP   refusal = "per_ip"
)

// clientIP is the peer address of r without its port. Behind a proxy or
// load balancer this is the proxy's address: set MAX_CONNECTIONS_PER_IP to
// 0 there unless the proxy passes client addresses through
// (docs/notifier.md).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// DefaultMaxConnections is the instance's connection cap when none is
// configured: nine tenths of the process's file limit (each connection is
// one descriptor; the rest is for Redis, RabbitMQ, the listeners and
// accepting while at the cap), at least 64.
func DefaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	n := lim.Cur
	if n > 1<<20 {
		n = 1 << 20
	}
	return max(64, int(n-n/10))
}
