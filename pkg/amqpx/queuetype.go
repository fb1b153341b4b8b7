package amqpx

import (
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// QueueType is the RabbitMQ queue type of boxoffice's durable queues (work
// queues, dead-letter queues, delay wait queues and retry wait queues). The
// notifier's per-instance fanout queue is exclusive and therefore always
// classic.
type QueueType string

const (
	// QueueQuorum (the default) replicates each queue over the cluster's
	// nodes (Raft) and survives the loss of a minority of them. Needs
	// RabbitMQ 3.10 or later (message TTL on quorum queues).
	QueueQuorum QueueType = "quorum"
	// QueueClassic declares exactly the arguments boxoffice used before
	// quorum queues (no x-queue-type): for single-node brokers older than
	// 3.10 and for deployments that have not migrated yet (see
	// docs/events-rabbitmq.md, "Classic to quorum").
	QueueClassic QueueType = "classic"
)

// DefaultDeliveryLimit is the x-delivery-limit of quorum work queues unless
// WithDeliveryLimit says otherwise (RabbitMQ 4's own default).
const DefaultDeliveryLimit = 20

// ParseQueueType accepts "quorum" and "classic" ("" is quorum).
func ParseQueueType(s string) (QueueType, error) {
	switch QueueType(s) {
	case "", QueueQuorum:
		return QueueQuorum, nil
	case QueueClassic:
		return QueueClassic, nil
	}
	return "", fmt.Errorf("amqpx: unknown queue type %q (want quorum or classic)", s)
}

// Topology is what Declare's arguments depend on. Every service of one
// deployment must agree on all of it: a queue or exchange redeclared with
// other arguments fails with PRECONDITION_FAILED.
type Topology struct {
	// DelayedPlugin makes TimeoutExchange an x-delayed-message exchange.
	DelayedPlugin bool
	// QueueType of the durable queues ("" = QueueQuorum).
	QueueType QueueType
	// DeliveryLimit is the x-delivery-limit of the quorum work queues: a
	// message redelivered (requeued, or unacked when its consumer's
	// channel died) more often than this is dead-lettered by the broker
	// into the work queue's DLQ. 0 = DefaultDeliveryLimit, negative = no
	// limit. Ignored for classic queues.
	DeliveryLimit int
}

func (t Topology) quorum() bool { return t.QueueType == "" || t.QueueType == QueueQuorum }

// workQueueArgs are the arguments of a work queue dead-lettering (as a
// fallback: nack without requeue, delivery limit) into DLQ(queue).
//
// The hand-counted retries of Consumer stay: they delay each retry with
// backoff through a retry wait queue and record why a message died, which
// x-delivery-limit (an immediate requeue, counted by the broker) cannot.
// The broker's limit covers what the hand count cannot see: a message
// whose handler crashes or hangs the process, redelivered after every
// restart, and a message requeued because its retry or dead-letter copy
// could not be published.
func (t Topology) workQueueArgs(queue string) amqp.Table {
	args := amqp.Table{
		"x-dead-letter-exchange":    DeadLetterExchange,
		"x-dead-letter-routing-key": queue,
	}
	if t.quorum() {
		t.addQuorum(args)
		limit := t.DeliveryLimit
		if limit == 0 {
			limit = DefaultDeliveryLimit
		}
		if limit > 0 {
			args["x-delivery-limit"] = int64(limit)
		}
	}
	return args
}

// dlqArgs are the arguments of a dead-letter queue (nil for classic).
func (t Topology) dlqArgs() amqp.Table {
	if !t.quorum() {
		return nil
	}
	return amqp.Table{"x-queue-type": string(QueueQuorum)}
}

// waitQueueArgs are the arguments of a delay or retry wait queue. A quorum
// wait queue dead-letters at-most-once (no x-dead-letter-strategy): its
// leader republishes each expired message itself, and nothing else has to
// be running for that. At-least-once dead-lettering hands expired messages
// to a worker process per queue, registered with the queue's leader, and
// on RabbitMQ 3.10.8 that worker can be gone for good after leadership
// moves: a member that led for a moment registers its worker after the
// next leader registered its own, replacing it (rabbitmq-server#16203,
// merged in 2026); a worker whose registration fails at start crashes,
// and two crashes in five seconds end the workers' supervisor on that
// node, with every worker it held, never restarted (rabbitmq-server#16652
// reports the same on 4.2.4). The queue then keeps every expired message,
// neither ready nor unacknowledged, until a later leader election starts
// a worker that works: the timeouts are late by the safety net's interval
// and pile up without bound. At-most-once loses a message only when the target queue has no
// reachable leader at the instant it expires; that timeout is late by the
// same interval and takes no space. See docs/events-rabbitmq.md, "Delayed
// messages".
func (t Topology) waitQueueArgs(ttlMillis, expiresMillis int64, dlx, dlKey string) amqp.Table {
	args := amqp.Table{
		"x-message-ttl":             ttlMillis,
		"x-expires":                 expiresMillis,
		"x-dead-letter-exchange":    dlx,
		"x-dead-letter-routing-key": dlKey,
	}
	if t.quorum() {
		args["x-queue-type"] = string(QueueQuorum)
	}
	return args
}

// addQuorum adds the quorum type and at-least-once dead-lettering to a
// work queue: the broker keeps a message it dead-letters (delivery limit,
// nack without requeue) in the work queue until the DLQ confirmed it.
// at-least-once needs overflow reject-publish (without it RabbitMQ
// silently falls back to at-most-once); no length limit is set, so
// nothing is ever rejected for length. The Consumer dead-letters by
// publishing to the DLQ itself, so this path carries only what the
// Consumer could not (see workQueueArgs); should its dead-letter worker
// stop as waitQueueArgs describes, such a message stays in the work queue
// (the RabbitMQDeadLettersStuck alert) rather than being lost.
func (t Topology) addQuorum(args amqp.Table) {
	args["x-queue-type"] = string(QueueQuorum)
	args["x-dead-letter-strategy"] = "at-least-once"
	args["x-overflow"] = "reject-publish"
}
