package service

import (
	"context"
	"net"
)

// TCPCheck is a readiness check that succeeds when any of addrs accepts a
// TCP connection (for brokers whose client cannot report its own state).
func TCPCheck(addrs ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		var last error
		for _, a := range addrs {
			var dl net.Dialer
			conn, err := dl.DialContext(ctx, "tcp", a)
			if err == nil {
				return conn.Close()
			}
			last = err
		}
		return last
	}
}
