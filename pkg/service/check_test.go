package service

import (
	"context"
	"net"
	"testing"
)

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
