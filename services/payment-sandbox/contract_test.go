package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// The sandbox's operations against docs/openapi.yaml (the gateway's
// contract test has the same check for the gateway): every response of
// the journey and its error cases must be documented, with its schema.
func TestOpenAPIContract(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml"))
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
	// the checkout page is HTML: validated as a string
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder)
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, h, _ := setup(t, 0)
	var violations []string
	check := func(validRequest bool, method, path, key, body string, form url.Values, status int) {
		t.Helper()
		w := call(h, method, path, key, body, form)
		if w.Code != status {
			t.Errorf("%s %s: %d %s, want %d", method, path, w.Code, w.Body, status)
		}
		var rd io.Reader = strings.NewReader(body)
		if form != nil {
			rd = strings.NewReader(form.Encode())
		}
		req := httptest.NewRequest(method, "http://sb.test"+path, rd)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		switch {
		case form != nil:
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		case body != "":
			req.Header.Set("Content-Type", "application/json")
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			violations = append(violations, fmt.Sprintf("%s %s: %v", method, path, err))
			return
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
		if validRequest {
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				violations = append(violations, fmt.Sprintf("%s %s request: %v", method, path, err))
			}
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: w.Code, Header: w.Header(),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
		out.SetBodyBytes(bytes.Clone(w.Body.Bytes()))
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			var me openapi3.MultiError
			if !errors.As(err, &me) {
				me = openapi3.MultiError{err}
			}
			for _, e := range me {
				violations = append(violations, fmt.Sprintf("%s %s → %d: %v", method, path, w.Code, e))
			}
		}
	}
	check(true, "POST", "/v1/payments", "k", createBody, nil, http.StatusCreated)
	check(true, "POST", "/v1/payments", "k", createBody, nil, http.StatusOK)
	check(true, "GET", "/v1/payments/p1", "k", "", nil, http.StatusOK)
	check(true, "GET", "/pay/p1", "", "", nil, http.StatusOK)
	check(true, "POST", "/pay/p1/pay", "", "", url.Values{}, http.StatusSeeOther)
	check(true, "POST", "/pay/p1/decline", "", "", url.Values{"reason": {"card_declined"}}, http.StatusConflict)
	check(false, "POST", "/v1/payments", "", createBody, nil, http.StatusUnauthorized)
	check(false, "GET", "/v1/payments/p1", "", "", nil, http.StatusUnauthorized)
	check(true, "GET", "/v1/payments/nope", "k", "", nil, http.StatusNotFound)
	check(true, "POST", "/v1/payments", "k", strings.Replace(createBody, `"u1"`, `"u2"`, 1), nil, http.StatusConflict)
	check(false, "POST", "/v1/payments", "k", `{"payment_id":""}`, nil, http.StatusBadRequest)
	check(true, "GET", "/pay/nope", "", "", nil, http.StatusNotFound)
	check(false, "POST", "/pay/p1/decline", "", "", url.Values{"reason": {"stolen"}}, http.StatusBadRequest)
	for _, v := range violations {
		t.Error(v)
	}
	if len(violations) > 0 {
		t.Errorf("%d contract violations", len(violations))
	}
}
