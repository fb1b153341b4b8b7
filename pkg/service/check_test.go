package service

import (
	"context"
	"net"
	"testing"
)

func TestAMQPAddr(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://guest:guest@127.0.0.1:5672/": "127.0.0.1:5672",
		"amqp://u:p@rabbit/vhost":            "rabbit:5672",
		"amqps://u:p@[::1]:5671/":            "[::1]:5671",
	} {
		if got := AMQPAddr(in); got != want {
			t.Errorf("AMQPAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTCPCheck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx := context.Background()
	if err := TCPCheck("127.0.0.1:1", ln.Addr().String())(ctx); err != nil {
		t.Fatalf("one address listening: %v", err)
	}
	if err := TCPCheck("127.0.0.1:1")(ctx); err == nil {
		t.Fatal("nothing listening, check passed")
	}
}
