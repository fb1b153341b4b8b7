package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// ReadTopic reads every message of a topic (an event type, under the
// client's prefix) from the first offset of each partition to its end when
// the call began, and calls fn for each fact, in partition order, one at
// a time: a snapshot of the topic, as an auditor reads it, with no
// consumer group and nothing committed. A message that is not a valid
// fact is an error. It stops at the first error of fn.
func ReadTopic(ctx context.Context, brokers []string, client ClientConfig, eventType string, fn func(Event) error) error {
	if len(brokers) == 0 {
		return errors.New("events: read needs brokers")
	}
	topic := client.Topic(eventType)
	dialer, err := client.Dialer("boxoffice-read")
	if err != nil {
		return err
	}
	conn, err := dialer.DialContext(ctx, "tcp", brokers[0])
	if err != nil {
		return fmt.Errorf("read %s: %w", topic, err)
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		return fmt.Errorf("read %s: partitions: %w", topic, err)
	}
	for _, p := range parts {
		if err := readPartition(ctx, brokers, dialer, topic, p.ID, fn); err != nil {
			return err
		}
	}
	return nil
}

func readPartition(ctx context.Context, brokers []string, dialer *kafka.Dialer, topic string, partition int, fn func(Event) error) error {
	leader, err := dialer.DialLeader(ctx, "tcp", brokers[0], topic, partition)
	if err != nil {
		return fmt.Errorf("read %s/%d: %w", topic, partition, err)
	}
	first, last, err := leader.ReadOffsets()
	leader.Close()
	if err != nil {
		return fmt.Errorf("read %s/%d: offsets: %w", topic, partition, err)
	}
	if first >= last {
		return nil
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: partition, Dialer: dialer,
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 250 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(first); err != nil {
		return fmt.Errorf("read %s/%d: %w", topic, partition, err)
	}
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return fmt.Errorf("read %s/%d: %w", topic, partition, err)
		}
		e, err := Decode(m.Value)
		if err != nil {
			return fmt.Errorf("read %s/%d@%d: %w", topic, partition, m.Offset, err)
		}
		if err := fn(e); err != nil {
			return err
		}
		if m.Offset >= last-1 {
			return nil
		}
	}
}
