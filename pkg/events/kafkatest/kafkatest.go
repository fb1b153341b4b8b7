// Package kafkatest starts an in-process Kafka broker (franz-go's kfake,
// which speaks the real wire protocol) for tests: every topic of package
// events is created, the broker listens on a free port of 127.0.0.1, and it
// is closed when the test ends. Data lives in memory only.
package kafkatest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// Partitions is the partition count of every topic created here: more than
// one, so that tests notice when ordering is assumed across keys.
const Partitions = 3

// Start starts a one-broker cluster with every events topic and returns its
// bootstrap addresses.
func Start(t testing.TB) []string {
	t.Helper()
	return NewCluster(t).ListenAddrs()
}

// NewCluster starts a cluster like Start and returns it, for tests that
// need to control it (Close it early to test a broker outage). opts are
// added after the defaults (one broker, every events topic).
func NewCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	all := append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.SeedTopics(Partitions, events.AllTopics...),
	}, opts...)
	c, err := kfake.NewCluster(all...)
	if err != nil {
		t.Fatalf("kafkatest: start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
