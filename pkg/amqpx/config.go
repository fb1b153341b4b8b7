package amqpx

import "github.com/boxoffice/boxoffice/pkg/service"

// ConfigOptions are the options every service derives from the shared
// configuration (AMQP_DELAYED_PLUGIN, AMQP_QUEUE_TYPE,
// AMQP_DELIVERY_LIMIT): the topology all services of a deployment must agree
// on. An AMQP_DELIVERY_LIMIT of 0 or less means no limit.
func ConfigOptions(c service.Common) []Option {
	qt, err := ParseQueueType(c.AMQPQueueType)
	if err != nil {
		qt = QueueType(c.AMQPQueueType) // Load's oneof already refused it
	}
	limit := c.AMQPDeliveryLimit
	if limit <= 0 {
		limit = -1
	}
	return []Option{WithDelayedMessagePlugin(c.AMQPDelayedPlugin), WithQueueType(qt), WithDeliveryLimit(limit)}
}
