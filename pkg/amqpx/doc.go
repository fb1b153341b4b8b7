// Package amqpx is boxoffice's RabbitMQ layer: the fixed topology
// (slot-released and timeout work queues, the notifications fanout, a
// dead-letter exchange with one dead-letter queue per work queue), a
// Publisher that returns only after the broker confirmed a persistent
// message, delayed delivery that works on stock RabbitMQ (TTL wait queues
// dead-lettering into the target exchange) or with the x-delayed-message
// plugin, and a Consumer with manual acks, prefetch, concurrent workers,
// bounded retries with backoff, a dead-letter queue for poison messages and
// panic recovery.
//
// Delivery guarantee: at-least-once. A message is acked only after the
// handler returned nil, or after its retry copy or dead-letter copy was
// confirmed by the broker; a crash in between redelivers it. Handlers must
// therefore be idempotent, and every message carries a MessageId that stays
// the same across retries, reconnect re-publishes and dead-lettering. One
// step is at-most-once: a delayed message or retry copy leaving its wait
// queue when it expires (see Topology.waitQueueArgs), so delays carry only
// messages a periodic safety net can stand in for.
//
// Both Publisher and Consumer own their connections and reconnect with
// backoff when the broker closes them (restart, close_connection, network),
// redeclaring the topology each time. Publish calls made during a reconnect
// wait for the new connection, bounded by their context.
package amqpx
