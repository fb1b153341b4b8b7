package main

import (
	"strings"
	"testing"
)

// The checkout page cannot be framed (its Pay button could be clicked
// through a decoy), runs no script, and lets its forms post only here and
// to the return URL's origin.
func TestCheckoutPageSecurityHeaders(t *testing.T) {
	_, h, _ := setup(t, 0)
	if w := call(h, "POST", "/v1/payments", "k", createBody, nil); w.Code != 201 {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	w := call(h, "GET", "/pay/p1", "", "", nil)
	hd := w.Header()
	csp := hd.Get("Content-Security-Policy")
	if w.Code != 200 || hd.Get("X-Frame-Options") != "DENY" || hd.Get("X-Content-Type-Options") != "nosniff" ||
		hd.Get("Referrer-Policy") == "" || !strings.Contains(csp, "frame-ancestors 'none'") ||
		!strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "form-action 'self' http://gw.test") {
		t.Fatalf("page: %d %v", w.Code, hd)
	}
	if b := w.Body.String(); strings.Contains(b, "<style") || strings.Contains(b, "<script") || strings.Contains(b, " style=") {
		t.Fatalf("inline style or script, which the CSP blocks: %s", b)
	}
	w = call(h, "GET", "/checkout.css", "", "", nil)
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/css") || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("style: %d %v", w.Code, w.Header())
	}
}
