// Command httpfloor serves a trivial JSON answer (read one header, write 66
// bytes) with one of four HTTP stacks, to measure what the server itself
// costs per request and per idle connection on a machine, apart from any
// handler work. docs/benchmarks.md ("Where the profile goes") quotes it;
// run.sh drives it.
//
//	httpfloor -mode std|adapt|fast|fastreduce|fastincr [-addr 127.0.0.1:18200]
//
// std: net/http. adapt: the net/http handler behind fasthttpadaptor. fast:
// fasthttp with the gateway's 16 KiB read buffer. fastreduce: fast with
// ReduceMemoryUsage. fastincr: fast plus one Redis INCR of -key (on
// -redis) per request, answering the count: a stand-in for the fastest
// open-source waiting room the performance page compares with (one counter per join,
// no dedupe, no event), which scripts/bench-join-ab.sh runs beside the
// gateway.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

var body = []byte(`{"event_id":"x","position":12345,"status":"waiting","ahead":12344}`)

func main() {
	mode := flag.String("mode", "std", "std, adapt, fast, fastreduce or fastincr")
	addr := flag.String("addr", "127.0.0.1:18200", "listen address")
	redisAddr := flag.String("redis", "127.0.0.1:6379", "fastincr: the Redis server")
	key := flag.String("key", "httpfloor:incr", "fastincr: the counter's key")
	flag.Parse()
	std := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	})
	fast := func(c *fasthttp.RequestCtx) {
		_ = c.Request.Header.Peek("Authorization")
		c.SetContentType("application/json; charset=utf-8")
		c.SetBody(body)
	}
	var err error
	switch *mode {
	case "std":
		err = http.ListenAndServe(*addr, std)
	case "adapt":
		err = fasthttp.ListenAndServe(*addr, fasthttpadaptor.NewFastHTTPHandler(std))
	case "fast", "fastreduce":
		srv := &fasthttp.Server{Handler: fast, ReadBufferSize: 16 << 10, ReduceMemoryUsage: *mode == "fastreduce"}
		err = srv.ListenAndServe(*addr)
	case "fastincr":
		rdb := redis.NewClient(&redis.Options{Addr: *redisAddr})
		srv := &fasthttp.Server{Handler: incrHandler(rdb, *key), ReadBufferSize: 16 << 10}
		err = srv.ListenAndServe(*addr)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	fmt.Fprintln(os.Stderr, "httpfloor:", err)
	os.Exit(1)
}

// incrHandler is fastincr's handler: one INCR of key per request, the
// count as {"position":N}, a 503 when Redis fails. (go-redis's default
// pool, as a peer's plain client would have it.)
func incrHandler(rdb redis.Cmdable, key string) fasthttp.RequestHandler {
	return func(c *fasthttp.RequestCtx) {
		_ = c.Request.Header.Peek("Authorization")
		n, err := rdb.Incr(context.Background(), key).Result()
		if err != nil {
			c.Error(`{"error":"redis"}`, fasthttp.StatusServiceUnavailable)
			return
		}
		var num [20]byte
		c.SetContentType("application/json; charset=utf-8")
		c.Response.AppendBodyString(`{"position":`)
		c.Response.AppendBody(strconv.AppendInt(num[:0], n, 10))
		c.Response.AppendBodyString("}")
	}
}
