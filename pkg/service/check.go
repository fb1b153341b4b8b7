package service

import (
	"context"
	"net"
	"net/url"
	"strings"
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

// AMQPAddr returns the host:port of an AMQP URL (port 5672 when the URL
// names none), for TCPCheck.
func AMQPAddr(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5672")
	}
	return u.Host
}

// AMQPAddrs returns the host:port of each URL of a comma-separated
// AMQP_URL, for TCPCheck (healthy while any node answers).
func AMQPAddrs(raw string) []string {
	var out []string
	for _, u := range SplitList(raw) {
		out = append(out, AMQPAddr(u))
	}
	return out
}

// SplitList splits a comma-separated setting, trimming spaces and dropping
// empty items (as Load does for []string fields).
func SplitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
