package amqpx_test

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
)

// A service publishes a slot-released event and schedules the hold's
// timeout ten minutes later. Publish returns once the broker has stored the
// message.
func ExamplePublisher() {
	ctx := context.Background()
	metrics := amqpx.NewMetrics(prometheus.NewRegistry())
	p, err := amqpx.NewPublisher(ctx, "amqp://guest:guest@127.0.0.1:5672/",
		amqpx.WithLogger(zap.NewNop()), amqpx.WithMetrics(metrics))
	if err != nil {
		return
	}
	defer p.Close()

	body, _ := json.Marshal(map[string]any{"event_id": "evt-1", "reason": "cancellation"})
	if err := p.Publish(ctx, amqpx.SlotReleasedExchange, amqpx.SlotReleasedRoutingKey,
		amqpx.Message{ID: "evt-1:cancel:user-7", Body: body}); err != nil {
		return // not stored: fail the request so that it is retried
	}
	_ = p.PublishDelayed(ctx, amqpx.TimeoutExchange, amqpx.TimeoutRoutingKey,
		amqpx.Message{ID: "evt-1:timeout:user-8", Body: []byte(`{"user_id":"user-8"}`)}, 10*time.Minute)
}

// The timeout consumer: nil acks, an error retries with backoff, Permanent
// dead-letters a malformed message at once.
func ExampleConsumer_Consume() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := amqpx.NewConsumer("amqp://guest:guest@127.0.0.1:5672/")
	_ = c.Consume(ctx, amqpx.TimeoutQueue, func(ctx context.Context, d amqpx.Delivery) error {
		var msg struct {
			UserID  string `json:"user_id"`
			EventID string `json:"event_id"`
		}
		if err := json.Unmarshal(d.Body, &msg); err != nil || msg.UserID == "" {
			return amqpx.Permanent(errors.New("malformed timeout message"))
		}
		return nil // handle the timeout idempotently, then ack
	}, amqpx.ConsumeOptions{Workers: 4, Prefetch: 16, MaxRetries: 5})
}
