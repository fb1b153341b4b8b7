// Command httpfloor serves a trivial JSON answer (read one header, write 66
// bytes) with one of four HTTP stacks, to measure what the server itself
// costs per request and per idle connection on a machine, apart from any
// handler work. docs/benchmarks.md ("HTTP") quotes it; run.sh drives it.
//
//	httpfloor -mode std|adapt|fast|fastreduce [-addr 127.0.0.1:18200]
//
// std: net/http. adapt: the net/http handler behind fasthttpadaptor. fast:
// fasthttp with the gateway's 16 KiB read buffer. fastreduce: fast with
// ReduceMemoryUsage.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

var body = []byte(`{"event_id":"x","position":12345,"status":"waiting","ahead":12344}`)

func main() {
	mode := flag.String("mode", "std", "std, adapt, fast or fastreduce")
	addr := flag.String("addr", "127.0.0.1:18200", "listen address")
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
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	fmt.Fprintln(os.Stderr, "httpfloor:", err)
	os.Exit(1)
}
