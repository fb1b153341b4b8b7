package events

import (
	"context"
	"net"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/segmentio/kafka-go/protocol/produce"
)

// countingTransport answers metadata requests with one topic of errCode
// and counts every request.
type countingTransport struct {
	calls   map[string]int
	errCode int16
}

func (c *countingTransport) RoundTrip(_ context.Context, _ net.Addr, req kafka.Request) (kafka.Response, error) {
	switch r := req.(type) {
	case *metadata.Request:
		c.calls[r.TopicNames[0]]++
		return &metadata.Response{Topics: []metadata.ResponseTopic{{Name: r.TopicNames[0], ErrorCode: c.errCode,
			Partitions: make([]metadata.ResponsePartition, 3)}}}, nil
	default:
		c.calls["other"]++
		return &produce.Response{}, nil
	}
}

// topicPartitions asks the Transport once per topic for a topic's
// partitions, keeps no answer with an error, and passes every other
// request on.
func TestTopicPartitionsAsksOncePerTopic(t *testing.T) {
	ctx, addr := context.Background(), kafka.TCP("127.0.0.1:1")
	c := &countingTransport{calls: map[string]int{}}
	tp := &topicPartitions{RoundTripper: c}
	for range 5 {
		for _, topic := range []string{"a", "b"} {
			res, err := tp.RoundTrip(ctx, addr, &metadata.Request{TopicNames: []string{topic}})
			if err != nil || len(res.(*metadata.Response).Topics[0].Partitions) != 3 {
				t.Fatalf("%s: %v, %v", topic, res, err)
			}
		}
		if _, err := tp.RoundTrip(ctx, addr, &produce.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	if c.calls["a"] != 1 || c.calls["b"] != 1 || c.calls["other"] != 5 {
		t.Fatalf("transport asked %v, want a and b once, other 5 times", c.calls)
	}
	c.errCode = 3 // UNKNOWN_TOPIC_OR_PARTITION
	for range 3 {
		if _, err := tp.RoundTrip(ctx, addr, &metadata.Request{TopicNames: []string{"c"}}); err != nil {
			t.Fatal(err)
		}
	}
	if c.calls["c"] != 3 {
		t.Fatalf("an answer with an error was kept: asked %d times, want 3", c.calls["c"])
	}
}
