package amqpx

import (
	"errors"
	"fmt"

	"github.com/boxoffice/boxoffice/pkg/service"
)

// dialAny dials the nodes of urls in turn, starting at the node after the
// one last connected to (a random one at first, so that instances spread
// over the cluster), and returns the first session that opens. A node that
// refuses, times out (5 s) or fails to declare is skipped; the error names
// each node by host:port only (a URL holds the password).
func dialAny(urls, name string, o options) (*session, error) {
	list := service.SplitList(urls)
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
		errs = append(errs, fmt.Errorf("node %s: %w", service.AMQPAddr(list[k]), err))
	}
	return nil, errors.Join(errs...)
}
