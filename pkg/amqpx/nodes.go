package amqpx

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// dialAny dials the nodes of urls in turn, starting at the node after the
// one last connected to (a random one at first, so that instances spread
// over the cluster), and returns the first session that opens. A node that
// refuses, times out (5 s) or fails to declare is skipped; the error names
// each node by host:port only (a URL holds the password).
func dialAny(urls, name string, o options) (*session, error) {
	list := splitURLs(urls)
	if len(list) == 0 {
		return nil, errors.New("dial: no AMQP URL")
	}
	start := int(o.cursor.Load() % uint64(len(list)))
	var errs []error
	for i := range list {
		k := (start + i) % len(list)
		s, err := dialSession(list[k], name, o)
		if err == nil {
			o.cursor.Store(uint64(k + 1))
			return s, nil
		}
		if len(list) == 1 {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("node %s: %w", NodeAddr(list[k]), err))
	}
	return nil, errors.Join(errs...)
}

// splitURLs splits a comma-separated AMQP_URL into its URLs, trimming
// spaces and dropping empty items.
func splitURLs(urls string) []string {
	return strings.FieldsFunc(strings.ReplaceAll(urls, " ", ""), func(r rune) bool { return r == ',' })
}

// NodeAddr returns the host:port of an AMQP URL (port 5672 when the URL
// names none): what a readiness check dials, and how errors name a node
// without its password.
func NodeAddr(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5672")
	}
	return u.Host
}

// NodeAddrs returns the host:port of each URL of a comma-separated
// AMQP_URL (see [NodeAddr]).
func NodeAddrs(urls string) []string {
	var out []string
	for _, u := range splitURLs(urls) {
		out = append(out, NodeAddr(u))
	}
	return out
}
