package stacktest

import (
	"maps"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// Clusters are a Redis Cluster and a RabbitMQ cluster started by the test
// (redistest.StartReplicated, amqptest.StartCluster) for a stack to run on
// instead of the shared standalone Redis and the local broker's vhost.
type Clusters struct {
	Redis    *redistest.Replicated
	RabbitMQ *amqptest.Cluster
}

// StartOnClusters starts the stack o describes with every service on the
// clusters: REDIS_ADDR lists every Redis node with REDIS_CLUSTER=true, and
// AMQP_URL every RabbitMQ node (the services connect to any and move to
// the next when theirs is lost). Kafka and PostgreSQL are the stack's
// usual ones. The stack's Redis is a cluster client and its AMQPURL the
// node list; the key prefix is the stack's own as usual. o.Faults is not
// supported (the proxies front one address each).
func StartOnClusters(t testing.TB, o Options, c Clusters) *Stack {
	t.Helper()
	if o.Faults {
		t.Fatal("stacktest: StartOnClusters does not put fault proxies in front of clusters")
	}
	env := map[string]string{
		"REDIS_ADDR":    strings.Join(c.Redis.Addrs, ","),
		"REDIS_CLUSTER": "true",
		"AMQP_URL":      c.RabbitMQ.URLs(),
	}
	maps.Copy(env, o.Env)
	o.Env = env
	s := Start(t, o)
	s.Redis = c.Redis.Client
	s.AMQPURL = c.RabbitMQ.URLs()
	return s
}

// ClusterQueues lists the queues of the cluster's default vhost through
// node (one that runs), for [SaleCheck.Queues].
func ClusterQueues(node *amqptest.Node) func(testing.TB) map[string]QueueDepth {
	return func(testing.TB) map[string]QueueDepth {
		return ParseQueues(node.Ctl("list_queues", "--no-table-headers", "name", "messages_ready", "messages_unacknowledged"))
	}
}
