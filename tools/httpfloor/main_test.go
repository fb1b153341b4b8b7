package main

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/boxoffice/boxoffice/pkg/redistest"
)

func serve(h fasthttp.RequestHandler) (int, string) {
	var c fasthttp.RequestCtx
	c.Request.Header.SetMethod("POST")
	h(&c)
	return c.Response.StatusCode(), string(c.Response.Body())
}

// fastincr, the peer stand-in of bench-join-ab, counts each request in
// Redis and answers the count; without Redis it answers 503.
func TestIncrHandler(t *testing.T) {
	rdb := redistest.Client(t)
	key := redistest.Prefix(t) + ":standin"
	h := incrHandler(rdb, key)
	for i, want := range []string{`{"position":1}`, `{"position":2}`} {
		if code, body := serve(h); code != 200 || body != want {
			t.Fatalf("request %d: %d %s, want 200 %s", i+1, code, body, want)
		}
	}
	if n, err := rdb.Get(context.Background(), key).Int(); err != nil || n != 2 {
		t.Fatalf("%s = %d (%v), want 2", key, n, err)
	}
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	if code, _ := serve(incrHandler(down, key)); code != fasthttp.StatusServiceUnavailable {
		t.Fatalf("Redis down: %d, want 503", code)
	}
}
