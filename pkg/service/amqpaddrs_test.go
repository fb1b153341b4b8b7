package service

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAMQPAddrs(t *testing.T) {
	got := AMQPAddrs("amqp://u:p@rabbit-0:5672/bo, amqp://u:p@rabbit-1/bo,,amqps://u:p@rabbit-2:5671/")
	want := []string{"rabbit-0:5672", "rabbit-1:5672", "rabbit-2:5671"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AMQPAddrs (-want +got):\n%s", diff)
	}
}
