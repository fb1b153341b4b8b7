package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// TestOperatorsOpenAPIContract: the operators' routes, their answers and
// their error cases, through the production handler, against
// docs/openapi.yaml. Requests invalid on purpose have only their answers
// validated.
func TestOperatorsOpenAPIContract(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ct, _ := contractChecked(t, h.harness)
	ok := func(method, path string, c *http.Cookie, body any, code int) resp {
		t.Helper()
		r, _ := h.send(method, path, c, body)
		if r.code != code {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.code, r.raw, code)
		}
		return r
	}
	bad := func(method, path string, c *http.Cookie, body any, code int, errCode string, headers ...string) {
		t.Helper()
		var r resp
		ct.invalidly(func() { r, _ = h.send(method, path, c, body, headers...) })
		want(t, r, code, errCode)
	}

	h.account("ada", operators.Admin)
	h.account("vera", operators.Viewer)
	admin, viewer := h.signIn("ada", opPassword), h.signIn("vera", opPassword)
	ok("GET", "/api/admin/me", admin, nil, 200)
	ok("GET", "/api/admin/accounts", admin, nil, 200)
	ok("POST", "/api/admin/accounts", admin, map[string]any{"name": "otto", "role": "operator", "password": opPassword}, 201)
	ok("GET", "/api/admin/accounts/otto", admin, nil, 200)
	ok("PATCH", "/api/admin/accounts/otto", admin, map[string]any{"role": "viewer"}, 200)
	ok("POST", "/api/admin/accounts/otto/password", admin, map[string]any{"password": "otto's new passphrase"}, 200)
	otto := h.signIn("otto", "otto's new passphrase")
	ok("POST", "/api/admin/me/password", otto, map[string]any{"current_password": "otto's new passphrase", "new_password": "otto's own passphrase"}, 204)
	r := ok("GET", "/api/admin/accounts/otto/sessions", admin, nil, 200)
	sid := r.body["sessions"].([]any)[0].(map[string]any)["id"].(string)
	ok("DELETE", "/api/admin/sessions/"+sid, admin, nil, 200)
	r = ok("POST", "/api/admin/accounts/otto/tokens", admin, map[string]any{"name": "ci", "ttl_seconds": 86400}, 201)
	tid := r.body["token"].(map[string]any)["id"].(string)
	ok("GET", "/api/admin/accounts/otto/tokens", admin, nil, 200)
	ok("DELETE", "/api/admin/tokens/"+tid, admin, nil, 200)
	ok("DELETE", "/api/admin/tokens/"+tid, admin, nil, 200)
	ok("GET", "/api/admin/audit", admin, nil, 200)
	r = ok("GET", "/api/admin/audit?limit=2&actor=ada&event_id=*", admin, nil, 200)
	ok("GET", "/api/admin/audit?cursor="+r.str("next_cursor")+"&after=2020-01-01T00:00:00Z&before=2999-01-01T00:00:00Z&action=account.update", admin, nil, 200)
	ok("POST", "/api/admin/sign-out", viewer, nil, 204)

	// the error cases
	bad("POST", "/api/admin/sign-in", nil, map[string]any{"account": "ada", "password": "wrong password!"}, 401, codeBadCredentials)
	bad("POST", "/api/admin/sign-in", nil, map[string]any{"account": "ada"}, 400, "invalid_body")
	bad("POST", "/api/admin/sign-in", nil, `{"account":`, 400, "invalid_body")
	bad("POST", "/api/admin/sign-in", nil, map[string]any{"account": "ada", "password": opPassword}, 403, codeCrossOrigin,
		"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	for range 4 {
		h.send("POST", "/api/admin/sign-in", nil, map[string]any{"account": "ghost", "password": "wrong password!"})
	}
	bad("POST", "/api/admin/sign-in", nil, map[string]any{"account": "ghost", "password": "wrong password!"}, 429, codeSignInLocked)
	bad("GET", "/api/admin/me", nil, nil, 401, "unauthorized")
	// the console's live document (console_test.go has the rest)
	bad("GET", "/api/admin/events/e1/live", nil, nil, 401, "unauthorized")
	bad("GET", "/api/admin/events/nope/live", admin, nil, 404, "event_not_found")
	bad("GET", "/api/admin/events/e1/live", nil, nil, 403, "forbidden", "Authorization", "Bearer "+h.token("fan", ""))
	bad("GET", "/api/admin/me", viewer, nil, 401, "unauthorized") // signed out
	bad("GET", "/api/admin/accounts", otto, nil, 401, "unauthorized")
	otto = h.signIn("otto", "otto's own passphrase")
	bad("GET", "/api/admin/accounts", otto, nil, 403, "forbidden")
	bad("GET", "/api/admin/audit", otto, nil, 403, "forbidden")
	bad("POST", "/api/admin/me/password", otto, map[string]any{"current_password": "wrong password!", "new_password": "yet another passphrase"}, 401, codeBadCredentials)
	bad("POST", "/api/admin/me/password", otto, map[string]any{"current_password": "otto's own passphrase", "new_password": "short"}, 400, "invalid_body")
	bad("POST", "/api/admin/me/password", nil, map[string]any{"current_password": "x", "new_password": "yet another passphrase"}, 403, "forbidden",
		"Authorization", "Bearer "+h.harness.admin) // a JWT has no password
	bad("POST", "/api/admin/accounts", admin, map[string]any{"name": "otto", "role": "viewer", "password": opPassword}, 409, codeAccountExists)
	bad("POST", "/api/admin/accounts", admin, map[string]any{"name": "Bad Name", "role": "viewer", "password": opPassword}, 400, "invalid_body")
	bad("POST", "/api/admin/accounts", admin, map[string]any{"name": "bob", "role": "root", "password": opPassword}, 400, "invalid_body")
	bad("GET", "/api/admin/accounts/nobody", admin, nil, 404, codeNotFound)
	bad("PATCH", "/api/admin/accounts/ada", admin, map[string]any{"disabled": true}, 409, codeLastAdmin)
	bad("PATCH", "/api/admin/accounts/ada", admin, map[string]any{}, 400, "invalid_body")
	bad("PATCH", "/api/admin/accounts/otto", admin, map[string]any{"paused": true}, 400, "invalid_body")
	bad("POST", "/api/admin/accounts/otto/password", admin, map[string]any{"password": "short"}, 400, "invalid_body")
	bad("POST", "/api/admin/accounts/nobody/tokens", admin, map[string]any{"name": "x"}, 404, codeNotFound)
	bad("POST", "/api/admin/accounts/otto/tokens", admin, map[string]any{"name": ""}, 400, "invalid_body")
	bad("POST", "/api/admin/accounts/otto/tokens", admin, map[string]any{"name": "x", "ttl_seconds": -1}, 400, "invalid_body")
	bad("GET", "/api/admin/accounts/nobody/sessions", admin, nil, 404, codeNotFound)
	bad("DELETE", "/api/admin/sessions/ses_nope", admin, nil, 404, codeNotFound)
	bad("DELETE", "/api/admin/tokens/tok_nope", admin, nil, 404, codeNotFound)
	bad("GET", "/api/admin/audit?after=noon", admin, nil, 400, "invalid_argument")
	bad("GET", "/api/admin/audit?limit=501", admin, nil, 400, "invalid_argument")
	bad("PATCH", "/api/admin/accounts/otto", admin, map[string]any{"role": "admin"}, 403, codeCrossOrigin, "Origin", "https://evil.example")
	bad("GET", "/api/admin/events/e1", nil, nil, 401, "unauthorized", "Authorization", "Bearer "+operators.TokenPrefix+"revoked-or-made-up")
	ct.Report()
}

// TestOperatorBodiesTheDocumentRefuses: every body of the operators'
// routes that docs/openapi.yaml refuses (made from its schemas by
// contracttest.Refusals: null, other types, out of range, too long, NUL
// and newline bytes, outside enums and patterns, text/plain and no
// Content-Type) is a 400 naming the field, or a 415, and writes nothing:
// no account, no token, no audit record, no session.
func TestOperatorBodiesTheDocumentRefuses(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ct := contracttest.Load(t)
	h.h = ct.Wrap(h.h, nil)
	ctx := context.Background()
	h.account("ada", operators.Admin)
	h.account("otto", operators.Operator)
	admin := h.signIn("ada", opPassword)
	otto := h.signIn("otto", opPassword)
	records := func() int {
		acts, _, err := h.srv.Operators.Audit(ctx, operators.AuditFilter{Limit: operators.MaxAuditPage})
		if err != nil {
			t.Fatal(err)
		}
		return len(acts)
	}
	before := records()
	n := 0
	for _, op := range []struct {
		method, path string
		cookie       *http.Cookie
		valid        func() map[string]any
	}{
		{"POST", "/api/admin/sign-in", nil, func() map[string]any { return map[string]any{"account": "otto", "password": "not otto's password"} }},
		{"POST", "/api/admin/me/password", otto, func() map[string]any {
			return map[string]any{"current_password": opPassword, "new_password": "a fresh passphrase"}
		}},
		{"POST", "/api/admin/accounts", admin, func() map[string]any {
			n++
			return map[string]any{"name": fmt.Sprintf("new%d", n), "role": "viewer", "password": opPassword}
		}},
		{"PATCH", "/api/admin/accounts/otto", admin, func() map[string]any { return map[string]any{"role": "viewer", "disabled": false} }},
		{"POST", "/api/admin/accounts/otto/password", admin, func() map[string]any { return map[string]any{"password": "a fresh passphrase"} }},
		{"POST", "/api/admin/accounts/otto/tokens", admin, func() map[string]any { return map[string]any{"name": "ci", "ttl_seconds": 60} }},
	} {
		for _, rf := range ct.Refusals(op.method, op.path, op.valid) {
			r, _ := h.send(op.method, op.path, op.cookie, string(rf.Body), "Content-Type", rf.ContentType)
			status := http.StatusBadRequest
			if rf.Field == "" {
				status = http.StatusUnsupportedMediaType
			}
			if r.code != status || (rf.Field != "" && !strings.Contains(r.str("message"), rf.Leaf())) {
				t.Errorf("%s %s %s: %d %s; want %d naming %q", op.method, op.path, rf.Name, r.code, r.raw, status, rf.Leaf())
			}
		}
	}
	if got := records(); got != before {
		t.Errorf("refused bodies wrote %d audit records", got-before)
	}
	accounts, _ := h.srv.Operators.Accounts(ctx)
	tokens, _ := h.srv.Operators.Tokens(ctx, "otto")
	sessions, _ := h.srv.Operators.Sessions(ctx, "otto")
	if len(accounts) != 2 || len(tokens) != 0 || len(sessions) != 1 {
		t.Errorf("refused bodies wrote: %d accounts, %d tokens, %d sessions of otto", len(accounts), len(tokens), len(sessions))
	}
	// hostile ids in paths and queries are 4xx, never a 503
	for _, path := range []string{"/api/admin/accounts/a%00b", "/api/admin/accounts/a%00b/tokens", "/api/admin/accounts/a%00b/sessions",
		"/api/admin/audit?actor=a%00b", "/api/admin/audit?action=%0A"} {
		if r, _ := h.send("GET", path, admin, nil); r.code >= 500 || r.code < 400 {
			t.Errorf("GET %s: %d %s", path, r.code, r.raw)
		}
	}
	for _, path := range []string{"/api/admin/sessions/a%00b", "/api/admin/tokens/a%00b"} {
		if r, _ := h.send("DELETE", path, admin, nil); r.code != http.StatusNotFound {
			t.Errorf("DELETE %s: %d %s", path, r.code, r.raw)
		}
	}
	if r, _ := h.send("POST", "/api/admin/sign-in", nil, map[string]any{"account": "a\x00b", "password": "whatever it is"}); r.code != http.StatusUnauthorized {
		t.Errorf("sign-in with a NUL in the name: %d %s", r.code, r.raw)
	}
	ct.Report()
}
