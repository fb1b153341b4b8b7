package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// serveReal runs the gateway's real fasthttp server on loopback.
func (hs *harness) serveReal(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := hs.srv.FastServer()
	go func() { _ = srv.Serve(httpapi.Listener(ln)) }() // as fastserver.Serve
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// sendHead sends a request line and headers announcing a body of n bytes,
// without the body, and returns the status the server answers with.
func sendHead(t *testing.T, addr, method, path, token string, n int) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, auth, n)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s: no answer before the body was sent: %v", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Bodies are limited per route before they are read: 64 KiB everywhere,
// the large limit only for an admin creating an event.
func TestBodyLimitsBeforeReading(t *testing.T) {
	hs := newHarness(t, false)
	addr := hs.serveReal(t)
	user := hs.token("u1", "")
	for _, tc := range []struct{ method, path, token string }{
		{"POST", "/api/booking/request", user},
		{"POST", "/api/booking/request", ""},
		{"POST", "/api/booking/select-seat", user},
		{"POST", "/api/admin/events", ""},
		{"POST", "/api/admin/events", user},
		{"PATCH", "/api/admin/events/e1", hs.admin},
		{"POST", "/api/auth/dev-token", ""},
	} {
		if code := sendHead(t, addr, tc.method, tc.path, tc.token, 1<<20); code != http.StatusRequestEntityTooLarge {
			t.Errorf("%s %s (token %v) with 1 MiB announced: %d, want 413", tc.method, tc.path, tc.token != "", code)
		}
	}
	// An admin's large seat map still goes through.
	ids := make([]string, 100_000)
	for i := range ids {
		ids[i] = fmt.Sprintf(`"S%d"`, i)
	}
	body := `{"id":"big","seats":[` + strings.Join(ids, ",") + `]}`
	if len(body) <= 64<<10 {
		t.Fatal("test body too small")
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/admin/events", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+hs.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("admin create with %d bytes: %d %s", len(body), resp.StatusCode, b)
	}
}
