package events

import (
	"context"
	"errors"

	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"
)

// Tally is a consumer that adds facts to a tally kept elsewhere
// (popularity's ranking, a sale's report): one consumer group over Topics
// whose handler is Count. Count adds a fact unless its envelope id was
// counted before and reports whether it did; its error is retried as
// Consume retries a handler's, so an offset is committed only once its
// fact was counted or recognised as counted.
type Tally struct {
	Brokers []string
	GroupID string
	Topics  []string
	Count   func(ctx context.Context, e Event) (counted bool, err error)
	// Log receives the consumers' logs and a debug line per duplicate
	// (nil: none).
	Log *zap.Logger
	// Options are passed to every Consume (WithConsumerClient,
	// WithStartOffset, ...); the logger is Log.
	Options []ConsumerOption
}

// Handle is the handler Run gives Consume: Count, with a duplicate logged
// at debug level.
func (t Tally) Handle(ctx context.Context, e Event, m kafka.Message) error {
	counted, err := t.Count(ctx, e)
	if err != nil {
		return err
	}
	if !counted && t.Log != nil {
		t.Log.Debug("fact counted before; skipped", zap.String("id", e.ID), zap.String("type", e.Type),
			zap.String("event_id", e.EventID), zap.Int64("offset", m.Offset))
	}
	return nil
}

// Run consumes every topic, one Consume each, until ctx is cancelled (then
// nil) or one of them stops with an error: the others are then stopped and
// the first error is returned.
func (t Tally) Run(ctx context.Context) error {
	if len(t.Topics) == 0 || t.Count == nil {
		return errors.New("events: a tally needs topics and a Count")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := t.Log
	if log == nil {
		log = zap.NewNop()
	}
	opts := append([]ConsumerOption{WithLogger(log)}, t.Options...)
	errs := make(chan error, len(t.Topics))
	for _, topic := range t.Topics {
		go func() { errs <- Consume(ctx, t.Brokers, t.GroupID, topic, t.Handle, opts...) }()
	}
	var first error
	for range t.Topics {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}
