// Package admission moves the booking queue by messages. It turns the
// booking engine's outbox entries (a user admitted to the booking room, a
// hold reclaimed as expired) into their side effects — the hold's delayed
// timeout message, the user's notification and the Kafka fact — and only
// then removes them from the outbox (Announcer). It also holds the logic of
// the two RabbitMQ consumers: Promoter handles slot-released
// messages and runs the safety-net tick, TimeoutHandler handles the delayed
// timeout messages. The services in services/slot-released-consumer and
// services/timeout-consumer only wire them to configuration and brokers.
//
// Guarantees: every RabbitMQ publish is confirmed and every Kafka write is
// acknowledged by all replicas before an outbox entry is acknowledged or a
// message is acked; any failure returns an error and leaves the work to be
// retried (a redelivered message, the safety net's outbox sweep). Effects
// may therefore happen more than once: handlers are idempotent
// (Store.HandleTimeout and Store.Promote are), RabbitMQ messages carry
// deterministic MessageIds and Kafka events deterministic envelope ids, so
// consumers can drop duplicates.
package admission
