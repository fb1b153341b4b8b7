package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The webhook operations against docs/openapi.yaml (the gateway's
// contract test has the same check for the gateway): every response of
// success, failure, duplicates and the error cases must be documented,
// with its schema. Requests are not validated (several are invalid on
// purpose); the webhook body schema is checked by the signed ones.
func TestOpenAPIContract(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc.Servers = nil // match any host; TestOpenAPIServers (gateway) checks the lists
	for _, p := range doc.Paths.Map() {
		p.Servers = nil
		for _, op := range p.Operations() {
			op.Servers = nil
		}
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t)
	var violations []string
	inner := hs.h
	hs.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())

		name := r.Method + " " + r.URL.Path
		vr := r.Clone(context.Background())
		vr.Body = io.NopCloser(bytes.NewReader(body))
		route, params, err := router.FindRoute(vr)
		if err != nil {
			violations = append(violations, fmt.Sprintf("%s: %v", name, err))
			return
		}
		in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
		out.SetBodyBytes(rec.Body.Bytes())
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			var me openapi3.MultiError
			if !errors.As(err, &me) {
				me = openapi3.MultiError{err}
			}
			for _, e := range me {
				violations = append(violations, fmt.Sprintf("%s → %d: %v", name, rec.Code, e))
			}
		}
	})
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
		{failure, hs.signed(failure, body("bob", "A2", pb, "card_declined")), 200},
		{failure, hs.signed(failure, body("bob", "A2", pb, "card_declined")), 200},
		{failure, hs.signed(failure, body("alice", "A1", pa, "card_declined")), 409},
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
	for _, v := range violations {
		t.Error(v)
	}
	if len(violations) > 0 {
		t.Errorf("%d contract violations", len(violations))
	}
}
