package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
)

// The sandbox's operations against docs/openapi.yaml (pkg/httpapi/
// contracttest, as the gateway's contract test): every response of the
// journey and its error cases must be documented, with its schema, and the
// requests of the journey must conform.
func TestOpenAPIContract(t *testing.T) {
	// the checkout page is HTML: validated as a string
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder)
	ct := contracttest.Load(t)
	_, inner, _ := setup(t, 0)
	validRequest := false
	h := ct.Wrap(inner, func(*http.Request) bool { return validRequest })
	check := func(valid bool, method, path, key, body string, form url.Values, status int) {
		t.Helper()
		validRequest = valid
		if w := call(h, method, path, key, body, form); w.Code != status {
			t.Errorf("%s %s: %d %s, want %d", method, path, w.Code, w.Body, status)
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
	ct.Report()
}

// The port as main serves it (service.NewHTTPServer behind
// httpapi.Listener): exactly 16 KiB of request line and headers, and the
// 431 beyond in the Error format with the request's path.
func TestPortHeaderLimit(t *testing.T) {
	ct := contracttest.Load(t)
	_, h, _ := setup(t, 0)
	ct.HeaderLimit(contracttest.ServeNetHTTP(t, h, httpapi.Listener), "/v1/payments/p1")
	ct.Report()
}
