package main

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/events"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     string
		args    []string
		want    config
		wantErr bool
	}{
		{name: "defaults", want: config{Port: 9092, Partitions: 3}},
		{name: "env", env: "127.0.0.1:19092", want: config{Port: 19092, Partitions: 3}},
		{name: "flag wins", env: "127.0.0.1:19092", args: []string{"-port", "29092", "-partitions", "1"}, want: config{Port: 29092, Partitions: 1}},
		{name: "localhost", env: "localhost:9093", want: config{Port: 9093, Partitions: 3}},
		{name: "not loopback", env: "0.0.0.0:9092", wantErr: true},
		{name: "no port", env: "127.0.0.1", wantErr: true},
		{name: "bad flag port", args: []string{"-port", "70000"}, wantErr: true},
		{name: "no partitions", args: []string{"-partitions", "0"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig(tt.args, func(k string) string {
				if k == "KAFKA_DEV_ADDR" {
					return tt.env
				}
				return ""
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); !tt.wantErr && diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestRunServesEveryTopic starts the binary's run on a fixed port, publishes
// one event of each type and reads one back through a consumer group.
func TestRunServesEveryTopic(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, zap.NewNop(), []string{"-port", strconv.Itoa(port)}, func(string) string { return "" })
	}()
	brokers := []string{"127.0.0.1:" + strconv.Itoa(port)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", brokers[0])
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker never listened: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	p, err := events.NewKafkaProducer(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	at := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	var sent []events.Event
	for _, typ := range events.AllTopics {
		e := events.PaymentLate("evt", "u1", "A1", "pay1", 1, at)
		e.Type = typ
		e.Reason = events.CancelledFromActive
		if typ == events.TopicOperatorAction {
			e.Action, e.Via, e.Role = "event.update", "session", "operator"
		}
		e.ID = events.ID(typ, e.EventID, e.UserID, e.Sequence, e.PaymentID)
		sent = append(sent, e)
	}
	if err := p.Publish(ctx, sent...); err != nil {
		t.Fatalf("publish to every topic: %v", err)
	}

	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	var got events.Event
	err = events.Consume(cctx, brokers, "kafka-dev-test", events.TopicBookingCompleted,
		func(_ context.Context, e events.Event, _ kafka.Message) error {
			got = e
			ccancel()
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var want events.Event
	for _, e := range sent {
		if e.Type == events.TopicBookingCompleted {
			want = e
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("consumed (-want +got):\n%s", diff)
	}

	// A second broker on the same port fails instead of running silently.
	if err := run(ctx, zap.NewNop(), []string{"-port", strconv.Itoa(port)}, func(string) string { return "" }); err == nil {
		t.Error("second run on a busy port returned nil")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop on cancel")
	}
}
