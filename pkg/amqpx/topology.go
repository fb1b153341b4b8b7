package amqpx

import (
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The topology's names. They are fixed: every service declares the same
// topology, so a change of any argument here is a breaking change that makes
// redeclaration fail with PRECONDITION_FAILED on an existing broker.
const (
	SlotReleasedExchange   = "slot-released-exchange" // direct
	SlotReleasedQueue      = "slot-released-queue"
	SlotReleasedRoutingKey = "slot-released"

	TimeoutExchange   = "timeout-exchange" // direct (or x-delayed-message with the plugin)
	TimeoutQueue      = "timeout-queue"
	TimeoutRoutingKey = "timeout"

	// NotificationsExchange is a fanout; each notifier instance binds its own
	// exclusive, auto-delete, server-named queue (see ConsumeOptions.BindFanout).
	NotificationsExchange = "notifications"

	// DeadLetterExchange is a direct exchange; the dead-letter queue of work
	// queue Q is "Q.dlq", bound with routing key Q.
	DeadLetterExchange = "boxoffice.dlx"
)

// DeadLetterQueue returns the name of queue's dead-letter queue.
func DeadLetterQueue(queue string) string { return queue + ".dlq" }

// workQueues are the durable work queues with a dead-letter queue each.
var workQueues = []struct{ exchange, queue, key string }{
	{SlotReleasedExchange, SlotReleasedQueue, SlotReleasedRoutingKey},
	{TimeoutExchange, TimeoutQueue, TimeoutRoutingKey},
}

// Declare declares the whole topology with quorum queues and the default
// delivery limit: DeclareTopology(ch, Topology{DelayedPlugin: delayedPlugin}).
func Declare(ch *amqp.Channel, delayedPlugin bool) error {
	return DeclareTopology(ch, Topology{DelayedPlugin: delayedPlugin})
}

// DeclareTopology declares the whole topology idempotently: durable
// exchanges, durable queues of t.QueueType, bindings, the dead-letter
// exchange and queues. Every service calls it at start (Publisher and
// Consumer do so on every (re)connect). t.DelayedPlugin selects the
// x-delayed-message exchange type for TimeoutExchange. All services of one
// deployment must agree on t, since an exchange cannot change type and a
// queue cannot change type or arguments without being deleted.
//
// A declare that conflicts with an existing entity closes ch (a channel-level
// error); use a dedicated channel.
func DeclareTopology(ch *amqp.Channel, t Topology) error {
	delayedPlugin := t.DelayedPlugin
	if err := ch.ExchangeDeclare(DeadLetterExchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", DeadLetterExchange, err)
	}
	for _, w := range workQueues {
		kind, args := amqp.ExchangeDirect, amqp.Table(nil)
		if w.exchange == TimeoutExchange && delayedPlugin {
			kind, args = "x-delayed-message", amqp.Table{"x-delayed-type": amqp.ExchangeDirect}
		}
		if err := ch.ExchangeDeclare(w.exchange, kind, true, false, false, false, args); err != nil {
			return fmt.Errorf("declare exchange %s: %w", w.exchange, err)
		}
		// The queue's own DLX is a fallback (nack without requeue, future
		// length limits); the Consumer dead-letters explicitly with reason
		// headers.
		if _, err := ch.QueueDeclare(w.queue, true, false, false, false, t.workQueueArgs(w.queue)); err != nil {
			return fmt.Errorf("declare queue %s: %w", w.queue, err)
		}
		if err := ch.QueueBind(w.queue, w.key, w.exchange, false, nil); err != nil {
			return fmt.Errorf("bind queue %s: %w", w.queue, err)
		}
		dlq := DeadLetterQueue(w.queue)
		if _, err := ch.QueueDeclare(dlq, true, false, false, false, t.dlqArgs()); err != nil {
			return fmt.Errorf("declare queue %s: %w", dlq, err)
		}
		if err := ch.QueueBind(dlq, w.queue, DeadLetterExchange, false, nil); err != nil {
			return fmt.Errorf("bind queue %s: %w", dlq, err)
		}
	}
	if err := ch.ExchangeDeclare(NotificationsExchange, amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", NotificationsExchange, err)
	}
	return nil
}

// RoundDelay rounds d UP to the wait-queue granularity: 100 ms below 10 s,
// 1 s from 10 s to 10 min, 10 s above. Rounding up bounds the number of wait
// queues and guarantees a message is never delivered before its delay.
func RoundDelay(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	g := 100 * time.Millisecond
	switch {
	case d > 10*time.Minute:
		g = 10 * time.Second
	case d > 10*time.Second:
		g = time.Second
	}
	return (d + g - 1) / g * g
}

// waitQueueTTLSlack is how long an unused wait queue outlives its TTL
// (x-expires = ttl + slack). See waitQueueRedeclare for the hazard.
const waitQueueTTLSlack = time.Hour

// waitQueueRedeclare bounds how long a declared wait queue stays in the
// cache. x-expires counts a queue as unused while it has no consumers and is
// not redeclared — publishing does NOT reset it — so a queue with messages
// can expire. Redeclaring at least every 30 min resets the timer; a message
// published after the last redeclare expires at most 30 min + ttl later,
// well before ttl + 1 h.
const waitQueueRedeclare = 30 * time.Minute

// WaitQueueName is the wait queue for delayed messages to (exchange, key)
// with the given (already rounded) delay, e.g. "timeout-delay.600000" for
// TimeoutExchange/TimeoutRoutingKey. Earlier versions named them
// "timeout-wait.<ms>" and dead-lettered at-least-once; a queue cannot
// change its arguments, so the new arguments came with a new name, and the
// old queues, no longer declared, delete themselves (x-expires) an hour
// after their TTL.
func WaitQueueName(exchange, key string, delay time.Duration) string {
	base := strings.TrimSuffix(exchange, "-exchange")
	if base != key {
		base = exchange + "." + key
	}
	return fmt.Sprintf("%s-delay.%d", base, delay.Milliseconds())
}

// declareWaitQueue declares a durable queue whose messages all expire after
// ttl and are then dead-lettered to (dlx, dlKey), at-most-once
// (Topology.waitQueueArgs says why). One fixed TTL per queue:
// per-message TTLs in a shared queue only expire at the head, so a short
// delay would wait behind a long one.
func declareWaitQueue(ch *amqp.Channel, t Topology, name string, ttl time.Duration, dlx, dlKey string) error {
	_, err := ch.QueueDeclare(name, true, false, false, false,
		t.waitQueueArgs(ttl.Milliseconds(), (ttl+waitQueueTTLSlack).Milliseconds(), dlx, dlKey))
	if err != nil {
		return fmt.Errorf("declare wait queue %s: %w", name, err)
	}
	return nil
}
