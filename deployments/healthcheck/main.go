// Command healthcheck is the container health probe of the boxoffice
// images: distroless has no shell, curl or wget, so compose health checks
// run this instead. It GETs one URL (default http://127.0.0.1:9101/healthz)
// and exits 0 on a 2xx answer within the timeout, 1 otherwise, printing
// why on stderr. It uses only the standard library so it builds outside
// the go.work workspace (GOWORK=off, no go.mod).
//
//	healthcheck [-timeout 2s] http://127.0.0.1:9101/readyz
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 2*time.Second, "overall request timeout")
	flag.Parse()
	url := "http://127.0.0.1:9101/healthz"
	if flag.NArg() > 0 {
		url = flag.Arg(0)
	}
	if err := probe(url, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}

func probe(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %s %s", url, resp.Status, body)
	}
	return nil
}
