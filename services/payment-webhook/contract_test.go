package main

import (
	"bytes"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
)

// The webhook operations against docs/openapi.yaml (pkg/httpapi/
// contracttest, as the gateway's contract test): every response of
// success, failure, duplicates and the error cases must be documented,
// with its schema. Requests are not validated (several are invalid on
// purpose); the webhook body schema is checked by the signed ones.
func TestOpenAPIContract(t *testing.T) {
	ct := contracttest.Load(t)
	hs := newHarness(t)
	hs.h = ct.Wrap(hs.h, nil)
	const success, failure = "/api/booking/payment/success", "/api/booking/payment/failure"
	pa := hs.pending("alice", "A1")
	pb := hs.pending("bob", "A2")
	for _, c := range []struct {
		path   string
		r      resp
		status int
	}{
		{success, hs.signed(success, body("alice", "A1", pa, "")), 200},
		{success, hs.signed(success, body("alice", "A1", pa, "")), 200},
		{failure, hs.signed(failure, failBody("bob", "A2", pb, "card_declined")), 200},
		{failure, hs.signed(failure, failBody("bob", "A2", pb, "card_declined")), 200},
		{failure, hs.signed(failure, failBody("alice", "A1", pa, "card_declined")), 409},
		{success, hs.signed(success, body("alice", "A1", "pay_other", "")), 409},
		{success, hs.signed(success, body("nobody", "A3", "pay_x", "")), 404},
		{success, hs.post(success, "", body("alice", "A1", pa, "")), 401},
		{success, hs.post(success, "t=1,v1=00", body("alice", "A1", pa, "")), 401},
		{success, hs.signed(success, []byte(`{"user_id":1}`)), 400},
		{failure, hs.signed(failure, []byte(`[]`)), 400},
		{success, hs.signed(success, bytes.Repeat([]byte("x"), 70<<10)), 413},
	} {
		if c.r.code != c.status {
			t.Errorf("%s: %d %s, want %d", c.path, c.r.code, c.r.raw, c.status)
		}
	}
	ct.Report()
}

// The port as main serves it (service.NewHTTPServer behind
// httpapi.Listener): exactly 16 KiB of request line and headers, and the
// 431 beyond in the Error format with the request's path.
func TestPortHeaderLimit(t *testing.T) {
	ct := contracttest.Load(t)
	hs := newHarness(t)
	ct.HeaderLimit(contracttest.ServeNetHTTP(t, hs.wh.Handler(), httpapi.Listener), "/api/booking/payment/success")
	ct.Report()
}
