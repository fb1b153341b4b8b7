package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// opHarness is the gateway with the ledger and the operators' accounts,
// sessions, tokens and audit trail, its logs captured.
type opHarness struct {
	*harness
	l    *ledger.Ledger
	ref  *fakeRefunder
	logs *observer.ObservedLogs
}

const opPassword = "a long operator passphrase"

func operatorHarness(t *testing.T) *opHarness {
	t.Helper()
	hs, l, ref := ledgerHarness(t)
	core, logs := observer.New(zap.DebugLevel)
	hs.srv.Log = zap.New(core)
	hs.srv.Operators = operators.New(l.Pool(), hs.srv.Redis, hs.srv.Prefix,
		operators.WithLockout(operators.Lockout{Attempts: 5, Window: time.Minute, PerIP: 1000}))
	hs.srv.Sessions = operators.NewSessions(hs.srv.Operators, operators.SessionConfig{})
	t.Cleanup(hs.srv.Sessions.Close)
	hs.srv.AuditPublisher = &operators.Publisher{Store: hs.srv.Operators, Kafka: hs.rec}
	hs.rebuild()
	return &opHarness{harness: hs, l: l, ref: ref, logs: logs}
}

// rebuild makes the handler again (routes are registered when it is built).
func (hs *harness) rebuild() {
	fh := hs.srv.FastHandler()
	hs.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fastserver.ServeRequest(fh, w, r) })
}

// account creates an account directly in the store.
func (h *opHarness) account(name string, role operators.Role) {
	h.t.Helper()
	if _, err := h.srv.Operators.CreateAccount(context.Background(), name, role, opPassword, "test"); err != nil {
		h.t.Fatal(err)
	}
}

// send is a request with the session cookie (nil: none) and headers (name,
// value pairs); it returns the response and its headers.
func (h *opHarness) send(method, path string, cookie *http.Cookie, body any, headers ...string) (resp, http.Header) {
	h.t.Helper()
	var rd *strings.Reader
	switch b := body.(type) {
	case nil:
		rd = strings.NewReader("")
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = strings.NewReader(string(j))
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.h.ServeHTTP(w, req)
	r := resp{code: w.Code, raw: w.Body.String()}
	_ = json.Unmarshal(w.Body.Bytes(), &r.body)
	if w.Code >= 400 {
		checkErrorFormat(h.t, r, path)
	}
	return r, w.Header()
}

// signIn signs name in and returns the session cookie.
func (h *opHarness) signIn(name, password string) *http.Cookie {
	h.t.Helper()
	r, hdr := h.send("POST", "/api/admin/sign-in", nil, map[string]string{"account": name, "password": password})
	if r.code != http.StatusOK {
		h.t.Fatalf("sign in %s: %d %s", name, r.code, r.raw)
	}
	resp := http.Response{Header: hdr}
	for _, c := range resp.Cookies() {
		if c.Name == operators.CookieName {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
				h.t.Fatalf("session cookie %+v", c)
			}
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	h.t.Fatalf("sign in %s: no session cookie: %v", name, hdr)
	return nil
}

// adminRoutes are the registered admin routes, by method and gin path.
func (h *opHarness) adminRoutes() []gin.RouteInfo {
	var out []gin.RouteInfo
	for _, r := range h.srv.Handler().(*gin.Engine).Routes() {
		if strings.HasPrefix(r.Path, "/api/admin/") {
			out = append(out, r)
		}
	}
	return out
}

// fill puts values into a gin path's parameters.
func fill(path string, params map[string]string) string {
	return regexp.MustCompile(`:[a-z_]+`).ReplaceAllStringFunc(path, func(p string) string {
		if v, ok := params[p[1:]]; ok {
			return url.PathEscape(v)
		}
		return "x"
	})
}

func isChange(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// TestViewerCannotChangeAnything: a viewer's session reads (events,
// orders, the report) and is refused, 403, on every route that changes
// something, whatever the body; an operator is refused every account,
// session and token route; nothing is recorded for the refusals.
func TestViewerCannotChangeAnything(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	h.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	h.account("vera", operators.Viewer)
	h.account("otto", operators.Operator)
	h.account("ada", operators.Admin)
	viewer, operator := h.signIn("vera", opPassword), h.signIn("otto", opPassword)
	params := map[string]string{"id": "e1", "order_id": "ord_x", "name": "ada", "channel": "partner"}

	for _, path := range []string{"/api/admin/events/e1", "/api/admin/events/e1/orders", "/api/admin/events/e1/report", "/api/admin/refunds", "/api/admin/me"} {
		if r, _ := h.send("GET", path, viewer, nil); r.code != http.StatusOK {
			t.Errorf("viewer GET %s: %d %s", path, r.code, r.raw)
		}
	}
	changes := 0
	// the console's controls among them, whatever else is added
	console := map[string]bool{"PATCH /api/admin/events/:id": false, "POST /api/admin/events/:id/seat-marks": false,
		"PUT /api/admin/provider": false, "POST /api/admin/orders/:order_id/cancel": false, "POST /api/admin/refunds/:order_id": false}
	for _, rt := range h.adminRoutes() {
		path := fill(rt.Path, params)
		need := requiredRole(rt.Method, rt.Path)
		if isChange(rt.Method) && need != operators.Viewer {
			changes++
			if _, ok := console[rt.Method+" "+rt.Path]; ok {
				console[rt.Method+" "+rt.Path] = true
			}
			r, _ := h.send(rt.Method, path, viewer, map[string]any{"paused": true, "role": "admin", "password": opPassword + "x"})
			if r.code != http.StatusForbidden || r.str("code") != httpapi.CodeForbidden {
				t.Errorf("viewer %s %s: %d %s, want 403", rt.Method, path, r.code, r.raw)
			}
		}
		if need == operators.Admin {
			r, _ := h.send(rt.Method, path, operator, map[string]any{"role": "admin"})
			if r.code != http.StatusForbidden {
				t.Errorf("operator %s %s: %d %s, want 403", rt.Method, path, r.code, r.raw)
			}
		}
	}
	if changes < 10 {
		t.Fatalf("only %d change routes found", changes)
	}
	for rt, seen := range console {
		if !seen {
			t.Errorf("the console's control %s is not among the change routes tried", rt)
		}
	}
	if acts, _, _ := h.srv.Operators.Audit(context.Background(), operators.AuditFilter{Actor: "vera"}); len(acts) != 0 {
		t.Errorf("refused calls recorded: %+v", acts)
	}
	e, _ := h.store.GetEvent(context.Background(), "e1")
	if e.Paused {
		t.Error("the viewer paused the event")
	}
}

// TestCrossSiteRequestsAreRefused: a signed-in browser's change sent from
// another origin is refused (403 cross_origin) and changes nothing; so is
// a sign-in from another site; the same request from the console's own
// origin, or without browser headers (a script with a token), passes.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	h.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	h.account("otto", operators.Operator)
	c := h.signIn("otto", opPassword)
	for name, hdr := range map[string][]string{
		"fetch from another site":   {"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
		"a form from a sibling":     {"Sec-Fetch-Site", "same-site", "Origin", "https://other.gw.test"},
		"old browser, other origin": {"Origin", "https://evil.example"},
	} {
		for _, rq := range []struct {
			method, path string
			body         any
		}{
			{"PATCH", "/api/admin/events/e1", map[string]any{"paused": true}},
			{"POST", "/api/admin/events/e1/seat-marks", map[string]any{"action": "kill", "seat_ids": []string{"A1"}}},
			{"PUT", "/api/admin/provider", map[string]any{"degraded": true}},
		} {
			r, _ := h.send(rq.method, rq.path, c, rq.body, hdr...)
			if r.code != http.StatusForbidden || r.str("code") != codeCrossOrigin {
				t.Errorf("%s %s, %s: %d %s, want 403 cross_origin", rq.method, rq.path, name, r.code, r.raw)
			}
		}
		r, _ := h.send("POST", "/api/admin/sign-in", nil, map[string]string{"account": "otto", "password": opPassword}, hdr...)
		if r.code != http.StatusForbidden || r.str("code") != codeCrossOrigin {
			t.Errorf("sign-in, %s: %d %s", name, r.code, r.raw)
		}
	}
	if e, _ := h.store.GetEvent(context.Background(), "e1"); e.Paused || e.Counts.Killed != 0 || !e.HoldsPausedSince.IsZero() {
		t.Fatalf("a cross-site request changed the event: paused %v, killed %d, provider degraded since %v", e.Paused, e.Counts.Killed, e.HoldsPausedSince)
	}
	for name, hdr := range map[string][]string{
		"same origin":         {"Sec-Fetch-Site", "same-origin", "Origin", "http://example.com"},
		"old browser, same":   {"Origin", "http://example.com"},
		"the public URL":      {"Origin", "http://gw.test"},
		"no browser headers":  {},
		"typed in the window": {"Sec-Fetch-Site", "none"},
	} {
		r, _ := h.send("PATCH", "/api/admin/events/e1", c, map[string]any{"capacity": 3}, hdr...)
		if r.code != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", name, r.code, r.raw)
		}
	}
}

// TestSignOutMakesAStolenCookieUseless: a copy of the cookie taken while
// the session lasted works until sign-out, and never after it.
func TestSignOutMakesAStolenCookieUseless(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	h.account("otto", operators.Operator)
	c := h.signIn("otto", opPassword)
	stolen := &http.Cookie{Name: c.Name, Value: c.Value}
	if r, _ := h.send("GET", "/api/admin/me", stolen, nil); r.code != http.StatusOK || r.str("account") != "otto" || r.str("via") != "session" {
		t.Fatalf("me: %d %s", r.code, r.raw)
	}
	r, hdr := h.send("POST", "/api/admin/sign-out", c, nil)
	if r.code != http.StatusNoContent || !strings.Contains(hdr.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign out: %d %s %v", r.code, r.raw, hdr)
	}
	for _, path := range []string{"/api/admin/me", "/api/admin/events/e1"} {
		r, _ := h.send("GET", path, stolen, nil)
		if r.code != http.StatusUnauthorized || r.str("code") != httpapi.CodeUnauthorized {
			t.Errorf("stolen cookie on %s after sign-out: %d %s", path, r.code, r.raw)
		}
	}
	// and an admin can end someone's session from afar
	h.account("ada", operators.Admin)
	admin := h.signIn("ada", opPassword)
	c = h.signIn("otto", opPassword)
	r, _ = h.send("GET", "/api/admin/accounts/otto/sessions", admin, nil)
	list, _ := r.body["sessions"].([]any)
	if r.code != http.StatusOK || len(list) != 1 {
		t.Fatalf("otto's sessions: %s", r.raw)
	}
	id := list[0].(map[string]any)["id"].(string)
	if r, _ := h.send("DELETE", "/api/admin/sessions/"+id, admin, nil); r.code != http.StatusOK || r.str("revoked_by") != "ada" {
		t.Fatalf("revoke: %d %s", r.code, r.raw)
	}
	if r, _ := h.send("GET", "/api/admin/me", c, nil); r.code != http.StatusUnauthorized {
		t.Errorf("revoked session: %d", r.code)
	}
}

// TestFiveWrongPasswordsLockTheAccountOverHTTP: the fifth wrong password
// answers 429 with Retry-After; the right one is then refused too, the
// same as for an account that does not exist.
func TestFiveWrongPasswordsLockTheAccountOverHTTP(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	h.account("otto", operators.Operator)
	for _, name := range []string{"otto", "ghost"} {
		for i := 1; i <= 5; i++ {
			r, hdr := h.send("POST", "/api/admin/sign-in", nil, map[string]string{"account": name, "password": "not the password " + strconv.Itoa(i)})
			switch {
			case i < 5 && (r.code != http.StatusUnauthorized || r.str("code") != codeBadCredentials):
				t.Fatalf("%s wrong #%d: %d %s", name, i, r.code, r.raw)
			case i == 5 && (r.code != http.StatusTooManyRequests || r.str("code") != codeSignInLocked || hdr.Get("Retry-After") != "60"):
				t.Fatalf("%s wrong #5: %d %s %v", name, r.code, r.raw, hdr)
			}
		}
		r, hdr := h.send("POST", "/api/admin/sign-in", nil, map[string]string{"account": name, "password": opPassword})
		if s, _ := strconv.Atoi(hdr.Get("Retry-After")); r.code != http.StatusTooManyRequests || s < 1 || s > 60 {
			t.Errorf("%s right password while locked: %d %s %v", name, r.code, r.raw, hdr)
		}
	}
	// an admin's reset unlocks it
	h.account("ada", operators.Admin)
	admin := h.signIn("ada", opPassword)
	if r, _ := h.send("POST", "/api/admin/accounts/otto/password", admin, map[string]string{"password": "the new passphrase"}); r.code != http.StatusOK {
		t.Fatalf("reset: %d %s", r.code, r.raw)
	}
	h.signIn("otto", "the new passphrase")
}

// TestPasswordsNeverAppearInLogs: every log line the gateway writes while
// accounts sign in (right, wrong, locked), are created, reset and change
// their password, with every field, contains no password.
func TestPasswordsNeverAppearInLogs(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	secrets := []string{opPassword, "wrong-guess-1234", "reset-passphrase-5678", "changed-passphrase-9012", "created-passphrase-3456"}
	h.account("ada", operators.Admin)
	admin := h.signIn("ada", opPassword)
	for range 6 {
		h.send("POST", "/api/admin/sign-in", nil, map[string]string{"account": "ada", "password": secrets[1]})
	}
	h.send("POST", "/api/admin/accounts", admin, map[string]string{"name": "bob", "role": "viewer", "password": secrets[4]})
	h.send("POST", "/api/admin/accounts", admin, map[string]string{"name": "bob", "role": "viewer", "password": secrets[4]}) // 409
	h.send("POST", "/api/admin/accounts", admin, map[string]string{"name": "b b", "role": "viewer", "password": secrets[4]})
	h.send("POST", "/api/admin/accounts/bob/password", admin, map[string]string{"password": secrets[2]})
	bob := h.signIn("bob", secrets[2])
	h.send("POST", "/api/admin/me/password", bob, map[string]string{"current_password": secrets[1], "new_password": secrets[3]})
	h.send("POST", "/api/admin/me/password", bob, map[string]string{"current_password": secrets[2], "new_password": secrets[3]})
	h.send("POST", "/api/admin/sign-in", nil, `{"account":"bob","password":"`+secrets[3]+`",`) // malformed

	entries := h.logs.All()
	if len(entries) < 5 {
		t.Fatalf("only %d log entries: the test sees nothing", len(entries))
	}
	for _, e := range entries {
		line := e.Message + " " + fmt.Sprint(e.ContextMap())
		for _, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("a password in the log: %s", line)
			}
		}
	}
	if len(h.logs.FilterMessage("operator sign-in refused").All()) == 0 {
		t.Error("refused sign-ins are not logged")
	}
}

// TestAPITokens: an admin issues a token for an account; it acts with the
// account's role until revoked; a revoked token is refused at once; the
// secret is shown once and never listed.
func TestAPITokens(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	h.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	h.account("ada", operators.Admin)
	h.account("ci", operators.Viewer)
	admin := h.signIn("ada", opPassword)
	r, _ := h.send("POST", "/api/admin/accounts/ci/tokens", admin, map[string]any{"name": "nightly report", "ttl_seconds": 3600})
	if r.code != http.StatusCreated {
		t.Fatalf("issue: %d %s", r.code, r.raw)
	}
	secret := r.str("secret")
	tok := r.body["token"].(map[string]any)
	if !operators.IsToken(secret) || tok["account"] != "ci" || tok["expires_at"] == nil {
		t.Fatalf("issued %s", r.raw)
	}
	if r := h.do("GET", "/api/admin/events/e1/report", secret, nil); r.code != http.StatusOK {
		t.Errorf("viewer token reads: %d %s", r.code, r.raw)
	}
	if r := h.do("PATCH", "/api/admin/events/e1", secret, map[string]any{"paused": true}); r.code != http.StatusForbidden {
		t.Errorf("viewer token changes: %d %s", r.code, r.raw)
	}
	if r, _ := h.send("PATCH", "/api/admin/accounts/ci", admin, map[string]any{"role": "operator"}); r.code != http.StatusOK {
		t.Fatalf("promote: %d %s", r.code, r.raw)
	}
	if r := h.do("PATCH", "/api/admin/events/e1", secret, map[string]any{"paused": true}); r.code != http.StatusOK {
		t.Errorf("operator token changes: %d %s", r.code, r.raw)
	}
	acts, _, _ := h.srv.Operators.Audit(context.Background(), operators.AuditFilter{Actor: "ci"})
	if len(acts) != 1 || acts[0].Via != operators.ViaToken || acts[0].Role != operators.Operator {
		t.Errorf("the token's change recorded as %+v", acts)
	}
	r, _ = h.send("GET", "/api/admin/accounts/ci/tokens", admin, nil)
	if strings.Contains(r.raw, secret) || r.code != http.StatusOK {
		t.Errorf("token list: %d %s", r.code, r.raw)
	}
	if r, _ := h.send("DELETE", "/api/admin/tokens/"+tok["id"].(string), admin, nil); r.code != http.StatusOK || r.str("revoked_at") == "" {
		t.Fatalf("revoke: %d %s", r.code, r.raw)
	}
	if r := h.do("GET", "/api/admin/events/e1", secret, nil); r.code != http.StatusUnauthorized {
		t.Errorf("revoked token: %d %s", r.code, r.raw)
	}
	// bearer JWTs can be turned off
	if r := h.do("GET", "/api/admin/events/e1", h.admin, nil); r.code != http.StatusOK {
		t.Fatalf("admin JWT: %d", r.code)
	}
	h.srv.NoAdminJWT = true
	if r := h.do("GET", "/api/admin/events/e1", h.admin, nil); r.code != http.StatusUnauthorized {
		t.Errorf("admin JWT with ADMIN_JWT=false: %d %s", r.code, r.raw)
	}
}

// auditOf returns the records of action, newest first.
func (h *opHarness) auditOf(action string) []operators.Action {
	h.t.Helper()
	acts, _, err := h.srv.Operators.Audit(context.Background(), operators.AuditFilter{Action: action})
	if err != nil {
		h.t.Fatal(err)
	}
	return acts
}

func obj(t *testing.T, b json.RawMessage) map[string]any {
	t.Helper()
	if len(b) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEveryAdminActionIsAudited: each admin route that changes something,
// called through the API, writes one audit record with who, how, from
// where, and the values before and after, and its operator_action fact
// once; the guard saw no change answered without a record; and every
// change route of the admin API is among those exercised here.
func TestEveryAdminActionIsAudited(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ctx := context.Background()
	h.account("ada", operators.Admin)
	h.account("otto", operators.Operator)
	admin, operator := h.signIn("ada", opPassword), h.signIn("otto", opPassword)
	exercised := map[string]bool{}
	call := func(c *http.Cookie, method, route, path string, body any, code int) resp {
		t.Helper()
		exercised[method+" "+route] = true
		r, _ := h.send(method, path, c, body, "X-Forwarded-For", "198.51.100.1")
		if r.code != code {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.code, r.raw, code)
		}
		return r
	}
	check := func(action, actor, eventID, target string, before, after map[string]any) operators.Action {
		t.Helper()
		acts := h.auditOf(action)
		if len(acts) == 0 {
			t.Fatalf("no %s record", action)
		}
		a := acts[0]
		if a.Actor != actor || a.EventID != eventID || a.Target != target || a.RemoteAddr != "127.0.0.1" || a.RequestID == "" {
			t.Errorf("%s: %+v", action, a)
		}
		for k, v := range before {
			if got := obj(t, a.Before)[k]; fmt.Sprint(got) != fmt.Sprint(v) {
				t.Errorf("%s before[%s] = %v, want %v (%s)", action, k, got, v, a.Before)
			}
		}
		for k, v := range after {
			if got := obj(t, a.After)[k]; fmt.Sprint(got) != fmt.Sprint(v) {
				t.Errorf("%s after[%s] = %v, want %v (%s)", action, k, got, v, a.After)
			}
		}
		if before == nil && len(a.Before) != 0 {
			t.Errorf("%s has a before: %s", action, a.Before)
		}
		return a
	}

	call(operator, "POST", "/api/admin/events", "/api/admin/events", map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4,
		"capacity": 2, "hold_seconds": 300}, http.StatusCreated)
	check(operators.ActionEventCreate, "otto", "e1", "", nil, map[string]any{"name": "Show", "seats": 4, "capacity": 2, "hold_seconds": 300, "paused": false})

	// pause, capacity, rate, hold time: before and after of what changed
	call(operator, "PATCH", "/api/admin/events/:id", "/api/admin/events/e1", map[string]any{"paused": true, "capacity": 5,
		"admit_per_minute": 60, "hold_seconds": 120}, http.StatusOK)
	a := check(operators.ActionEventUpdate, "otto", "e1", "", map[string]any{"paused": false, "capacity": 2, "admit_per_minute": 0, "hold_seconds": 300},
		map[string]any{"paused": true, "capacity": 5, "admit_per_minute": 60, "hold_seconds": 120})
	if len(obj(t, a.Before)) != 4 || len(obj(t, a.After)) != 4 {
		t.Errorf("update records more than what changed: %s -> %s", a.Before, a.After)
	}

	call(admin, "POST", "/api/admin/events/:id/restore", "/api/admin/events/e1/restore", nil, http.StatusConflict) // Redis has it: nothing done
	if err := redisDel(h.harness, "e1"); err != nil {
		t.Fatal(err)
	}
	call(admin, "POST", "/api/admin/events/:id/restore", "/api/admin/events/e1/restore", nil, http.StatusOK)
	check(operators.ActionEventRestore, "ada", "e1", "", nil, map[string]any{"seats": 4, "sold": 0})

	// a payment provider outage declared and ended; a repeat changes nothing
	call(operator, "PUT", "/api/admin/provider", "/api/admin/provider", map[string]any{"degraded": true}, http.StatusOK)
	call(operator, "PUT", "/api/admin/provider", "/api/admin/provider", map[string]any{"degraded": true}, http.StatusOK)
	check(operators.ActionProviderDeclare, "otto", "", "", map[string]any{"degraded": false}, map[string]any{"degraded": true, "events_changed": 1})
	if n := len(h.auditOf(operators.ActionProviderDeclare)); n != 1 {
		t.Errorf("%d provider records after a repeat, want 1", n)
	}
	call(operator, "PUT", "/api/admin/provider", "/api/admin/provider", map[string]any{"degraded": false}, http.StatusOK)

	call(operator, "PUT", "/api/admin/events/:id/waitlist", "/api/admin/events/e1/waitlist", map[string]any{"offer_seconds": 120}, http.StatusOK)
	check(operators.ActionEventUpdate, "otto", "e1", "waitlist", map[string]any{"offer_seconds": 0, "early": false},
		map[string]any{"offer_seconds": 120, "early": false})

	late, err := h.l.RecordSale(ctx, ledger.Sale{PaymentID: "pay_late", EventID: "e1", UserID: "bob", SeatID: "A2", RefundReason: ledger.RefundLate})
	if err != nil {
		t.Fatal(err)
	}
	call(operator, "POST", "/api/admin/refunds/:order_id", "/api/admin/refunds/"+late.OrderID, nil, http.StatusOK)
	call(operator, "POST", "/api/admin/refunds/:order_id", "/api/admin/refunds/"+late.OrderID, nil, http.StatusOK) // a repeat: no record
	check(operators.ActionOrderRefund, "otto", "e1", late.OrderID, map[string]any{"status": "refund_due"}, map[string]any{"status": "refunded"})
	if n := len(h.auditOf(operators.ActionOrderRefund)); n != 1 {
		t.Errorf("%d refund records, want 1", n)
	}
	sold, err := h.l.RecordSale(ctx, ledger.Sale{PaymentID: "pay_carol", EventID: "e1", UserID: "carol", SeatID: "A3"})
	if err != nil {
		t.Fatal(err)
	}
	call(operator, "POST", "/api/admin/orders/:order_id/cancel", "/api/admin/orders/"+sold.OrderID+"/cancel", map[string]any{"reason": "fraud"}, http.StatusOK)
	call(operator, "POST", "/api/admin/orders/:order_id/cancel", "/api/admin/orders/"+sold.OrderID+"/cancel", map[string]any{"reason": "fraud"}, http.StatusOK) // a repeat: no record
	check(operators.ActionOrderCancel, "otto", "e1", sold.OrderID, map[string]any{"status": "completed"},
		map[string]any{"status": "cancelled", "reason": "fraud", "seat_ids": []any{"A3"}})
	if n := len(h.auditOf(operators.ActionOrderCancel)); n != 1 {
		t.Errorf("%d cancellation records, want 1", n)
	}

	sale := map[string]any{"sale_id": "s1", "seat_ids": []string{"A1"}, "customer_ref": "walk-up"}
	bo := call(operator, "POST", "/api/admin/events/:id/box-office/sales", "/api/admin/events/e1/box-office/sales", sale, http.StatusCreated)
	call(operator, "POST", "/api/admin/events/:id/box-office/sales", "/api/admin/events/e1/box-office/sales", sale, http.StatusOK) // a repeat: no record
	boxOrder, _ := bo.body["order"].(map[string]any)
	check(operators.ActionBoxOfficeSell, "otto", "e1", fmt.Sprint(boxOrder["order_id"]), nil,
		map[string]any{"sale_id": "s1", "seat_ids": []any{"A1"}, "channel": "box_office", "customer_ref": "walk-up"})
	if n := len(h.auditOf(operators.ActionBoxOfficeSell)); n != 1 {
		t.Errorf("%d box-office sale records, want 1", n)
	}

	seatMarks := "/api/admin/events/e1/seat-marks"
	call(operator, "POST", "/api/admin/events/:id/seat-marks", seatMarks, map[string]any{"action": "kill", "seat_ids": []string{"A4"}}, http.StatusOK)
	call(operator, "POST", "/api/admin/events/:id/seat-marks", seatMarks, map[string]any{"action": "kill", "seat_ids": []string{"A4"}}, http.StatusOK) // a repeat: no record
	check(operators.ActionSeatsKill, "otto", "e1", "", nil, map[string]any{"seat_ids": []any{"A4"}, "purpose": ""})
	call(operator, "POST", "/api/admin/events/:id/seat-marks", seatMarks, map[string]any{"action": "hold", "purpose": "artist", "seat_ids": []string{"A4"}}, http.StatusOK)
	check(operators.ActionSeatsHold, "otto", "e1", "", nil, map[string]any{"seat_ids": []any{"A4"}, "purpose": "artist"})
	call(operator, "POST", "/api/admin/events/:id/seat-marks", seatMarks, map[string]any{"action": "release", "seat_ids": []string{"A4"}}, http.StatusOK)
	check(operators.ActionSeatsRelease, "otto", "e1", "", nil, map[string]any{"seat_ids": []any{"A4"}})
	call(operator, "POST", "/api/admin/events/:id/seat-marks", seatMarks, map[string]any{"action": "allocate", "channel": "partner", "seat_ids": []string{"A4"}}, http.StatusOK)
	check(operators.ActionSeatsAllocate, "otto", "e1", "", nil, map[string]any{"seat_ids": []any{"A4"}, "channel": "partner"})
	release := "/api/admin/events/e1/allocations/partner/release"
	call(operator, "POST", "/api/admin/events/:id/allocations/:channel/release", release, nil, http.StatusOK)
	call(operator, "POST", "/api/admin/events/:id/allocations/:channel/release", release, nil, http.StatusOK) // a repeat: no record
	check(operators.ActionAllocationRelease, "otto", "e1", "partner", nil, map[string]any{"seat_ids": []any{"A4"}})
	for _, act := range []string{operators.ActionSeatsKill, operators.ActionSeatsHold, operators.ActionSeatsRelease,
		operators.ActionSeatsAllocate, operators.ActionAllocationRelease} {
		if n := len(h.auditOf(act)); n != 1 {
			t.Errorf("%d %s records, want 1", n, act)
		}
	}
	r := call(operator, "POST", "/api/admin/events/:id/codes", "/api/admin/events/e1/codes", map[string]any{"count": 2, "uses": 3, "phase": "fanclub"}, http.StatusCreated)
	check(operators.ActionCodesCreate, "otto", "e1", "", nil, map[string]any{"count": 2, "uses": 3, "seats": 0, "phase": "fanclub",
		"batch_id": r.body["batch"].(map[string]any)["batch_id"]})
	if a := h.auditOf(operators.ActionCodesCreate); len(a) != 1 || strings.Contains(string(a[0].After), r.body["codes"].([]any)[0].(string)) {
		t.Errorf("codes records %+v", a)
	}
	call(operator, "PUT", "/api/admin/events/:id/phase", "/api/admin/events/e1/phase", map[string]any{"phase": "fanclub", "audience": "code"}, http.StatusOK)
	call(operator, "PUT", "/api/admin/events/:id/phase", "/api/admin/events/e1/phase", map[string]any{"phase": "fanclub", "audience": "code"}, http.StatusOK) // a repeat: no record
	check(operators.ActionPhaseSet, "otto", "e1", "", map[string]any{"phase": "", "audience": "public"}, map[string]any{"phase": "fanclub", "audience": "code"})
	if n := len(h.auditOf(operators.ActionPhaseSet)); n != 1 {
		t.Errorf("%d phase records, want 1", n)
	}
	rfc := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	call(operator, "PUT", "/api/admin/events/:id/phases", "/api/admin/events/e1/phases", map[string]any{"on_phase_change": "leave",
		"phases": []map[string]any{{"id": "now", "starts_at": rfc(-time.Hour), "ends_at": rfc(time.Hour), "audience": "public"}}}, http.StatusOK)
	check(operators.ActionPhaseSchedule, "otto", "e1", "", map[string]any{"on_phase_change": "keep"}, map[string]any{"on_phase_change": "leave"})
	// the phase it made current: phase.set by the schedule, not by otto
	if a := h.auditOf(operators.ActionPhaseSet); len(a) != 2 || a[0].Actor != "schedule" || a[0].Via != operators.ViaSystem ||
		obj(t, a[0].After)["phase"] != "now" || obj(t, a[0].Before)["phase"] != "fanclub" {
		t.Errorf("the schedule's phase change: %+v", a)
	}
	call(operator, "PUT", "/api/admin/events/:id/registration", "/api/admin/events/e1/registration",
		map[string]any{"phase": "verified", "opens_at": rfc(-time.Hour), "closes_at": rfc(-time.Second)}, http.StatusOK)
	check(operators.ActionRegistrationOpen, "otto", "e1", "", nil, map[string]any{"phase": "verified"})
	call(operator, "POST", "/api/admin/events/:id/registration/draw", "/api/admin/events/e1/registration/draw",
		map[string]any{"method": "first_come", "count": 5}, http.StatusOK)
	check(operators.ActionSelectionDraw, "otto", "e1", "", nil, map[string]any{"method": "first_come", "selected": 0, "registered": 0})

	if _, err := h.srv.Store.CreateEvent(ctx, booking.EventConfig{ID: "pre", Rows: 1, SeatsPerRow: 4, Capacity: 2,
		SalesStart: time.Now().Add(3 * time.Hour).Truncate(time.Second), EarlyJoin: time.Hour}); err != nil {
		t.Fatal(err)
	}
	call(operator, "PUT", "/api/admin/events/:id/beacon", "/api/admin/events/pre/beacon", map[string]any{"round": 9, "source": "drand"}, http.StatusOK)
	check(operators.ActionDrawBeacon, "otto", "pre", "", nil, map[string]any{"beacon_round": 9, "beacon_source": "drand"})
	call(operator, "PUT", "/api/admin/events/:id/beacon", "/api/admin/events/pre/beacon", map[string]any{"round": 9, "value": strings.Repeat("ab", 32)}, http.StatusOK)
	check(operators.ActionDrawBeacon, "otto", "pre", "", map[string]any{"beacon_round": 9}, map[string]any{"beacon": strings.Repeat("ab", 32)})
	call(operator, "PUT", "/api/admin/events/:id/beacon", "/api/admin/events/pre/beacon", map[string]any{"round": 9}, http.StatusOK) // a repeat: no record
	if n := len(h.auditOf(operators.ActionDrawBeacon)); n != 2 {
		t.Errorf("%d beacon records, want 2", n)
	}

	call(admin, "POST", "/api/admin/accounts", "/api/admin/accounts", map[string]string{"name": "vera", "role": "viewer", "password": opPassword}, http.StatusCreated)
	check(operators.ActionAccountCreate, "ada", "", "vera", nil, map[string]any{"role": "viewer"})
	call(admin, "PATCH", "/api/admin/accounts/:name", "/api/admin/accounts/vera", map[string]any{"role": "operator"}, http.StatusOK)
	check(operators.ActionAccountUpdate, "ada", "", "vera", map[string]any{"role": "viewer", "disabled": false}, map[string]any{"role": "operator", "disabled": false})
	call(admin, "POST", "/api/admin/accounts/:name/password", "/api/admin/accounts/vera/password", map[string]string{"password": "vera's new passphrase"}, http.StatusOK)
	check(operators.ActionAccountPassword, "ada", "", "vera", nil, nil)
	vera := h.signIn("vera", "vera's new passphrase")
	call(vera, "POST", "/api/admin/me/password", "/api/admin/me/password", map[string]string{"current_password": "vera's new passphrase",
		"new_password": "vera's own passphrase"}, http.StatusNoContent)
	check(operators.ActionAccountPassword, "vera", "", "vera", nil, nil)

	r = call(admin, "POST", "/api/admin/accounts/:name/tokens", "/api/admin/accounts/vera/tokens", map[string]string{"name": "ci"}, http.StatusCreated)
	tokID := r.body["token"].(map[string]any)["id"].(string)
	check(operators.ActionTokenIssue, "ada", "", "vera", nil, map[string]any{"token_id": tokID, "name": "ci"})
	call(admin, "DELETE", "/api/admin/tokens/:id", "/api/admin/tokens/"+tokID, nil, http.StatusOK)
	check(operators.ActionTokenRevoke, "ada", "", "vera", map[string]any{"token_id": tokID, "revoked": false}, map[string]any{"revoked": true})

	sessions, _ := h.srv.Operators.Sessions(ctx, "vera")
	call(admin, "DELETE", "/api/admin/sessions/:id", "/api/admin/sessions/"+sessions[0].ID, nil, http.StatusOK)
	check(operators.ActionSessionRevoke, "ada", "", "vera", map[string]any{"session_id": sessions[0].ID, "revoked": false}, map[string]any{"revoked": true})
	call(admin, "DELETE", "/api/admin/sessions/:id", "/api/admin/sessions/"+sessions[0].ID, nil, http.StatusOK) // again: nothing
	if n := len(h.auditOf(operators.ActionSessionRevoke)); n != 1 {
		t.Errorf("%d session revocations recorded, want 1", n)
	}
	// signing in and out are no actions on the system (the session list
	// and the log keep them)
	exercised["POST /api/admin/sign-in"] = true
	call(admin, "POST", "/api/admin/sign-out", "/api/admin/sign-out", nil, http.StatusNoContent)

	if n := h.srv.unaudited.Load(); n != 0 {
		t.Errorf("%d admin changes answered without an audit record", n)
	}
	// every record's fact went out, once
	all, _, _ := h.srv.Operators.Audit(ctx, operators.AuditFilter{})
	facts := h.rec.Topic(events.TopicOperatorAction)
	if len(facts) != len(all) {
		t.Errorf("%d operator_action facts for %d records", len(facts), len(all))
	}
	for _, f := range facts {
		if f.Action == "" || f.Via == "" || f.Role == "" || f.EventID == "" {
			t.Errorf("fact %+v", f)
		}
	}
	// every change route of the admin API was exercised
	for _, rt := range h.adminRoutes() {
		if isChange(rt.Method) && !exercised[rt.Method+" "+rt.Path] {
			t.Errorf("%s %s changes something but is not exercised here: add it, with its audit record", rt.Method, rt.Path)
		}
	}
}

// TestAuditTrailCannotBeChangedThroughAnyRoute: every route of the
// gateway, with every method it takes, called by an admin with bodies that
// name the record's fields, leaves every existing audit record as it was
// (new ones may only be added).
func TestAuditTrailCannotBeChangedThroughAnyRoute(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ctx := context.Background()
	h.account("ada", operators.Admin)
	admin := h.signIn("ada", opPassword)
	h.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 2})
	h.send("PATCH", "/api/admin/events/e1", admin, map[string]any{"paused": true})
	snapshot := func() map[int64]string {
		acts, _, err := h.srv.Operators.Audit(ctx, operators.AuditFilter{Limit: operators.MaxAuditPage})
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]string{}
		for _, a := range acts {
			b, _ := json.Marshal(a)
			out[a.ID] = string(b)
		}
		return out
	}
	before := snapshot()
	if len(before) < 2 {
		t.Fatalf("only %d records", len(before))
	}
	var first int64
	for id := range before {
		if first == 0 || id < first {
			first = id
		}
	}
	body := map[string]any{"id": first, "actor": "mallory", "action": "nothing", "before": map[string]any{}, "after": map[string]any{},
		"at": "2000-01-01T00:00:00Z", "event_id": "e1"}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	for _, rt := range h.srv.Handler().(*gin.Engine).Routes() {
		if rt.Path == "/api/admin/sign-out" {
			continue // would end the admin's session
		}
		for _, m := range methods {
			path := fill(rt.Path, map[string]string{"id": strconv.FormatInt(first, 10), "name": "ada", "order_id": strconv.FormatInt(first, 10)})
			h.send(m, path, admin, body)
			h.send(m, path+"?id="+strconv.FormatInt(first, 10), admin, body)
		}
	}
	for _, m := range methods {
		for _, path := range []string{"/api/admin/audit", "/api/admin/audit/" + strconv.FormatInt(first, 10)} {
			if r, _ := h.send(m, path, admin, body); m != "GET" && r.code != http.StatusNotFound && r.code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d %s", m, path, r.code, r.raw)
			}
		}
	}
	after := snapshot()
	for id, rec := range before {
		if after[id] != rec {
			t.Errorf("record %d changed:\n was %s\n now %s", id, rec, after[id])
		}
	}
}

// TestAuditAPI: GET /api/admin/audit with each filter, pages, and bad
// parameters.
func TestAuditAPI(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	h.account("ada", operators.Admin)
	h.account("otto", operators.Operator)
	h.account("vera", operators.Viewer)
	admin, operator, viewer := h.signIn("ada", opPassword), h.signIn("otto", opPassword), h.signIn("vera", opPassword)
	start := time.Now().UTC().Add(-time.Second)
	h.send("POST", "/api/admin/events", operator, map[string]any{"id": "e1", "rows": 1, "seats_per_row": 2})
	h.send("POST", "/api/admin/events", operator, map[string]any{"id": "e2", "rows": 1, "seats_per_row": 2})
	h.send("PATCH", "/api/admin/events/e1", admin, map[string]any{"paused": true})
	h.send("POST", "/api/admin/accounts", admin, map[string]any{"name": "bob", "role": "viewer", "password": opPassword})

	list := func(query string) (int, []map[string]any, string) {
		r, _ := h.send("GET", "/api/admin/audit"+query, operator, nil)
		var out []map[string]any
		for _, a := range r.body["actions"].([]any) {
			out = append(out, a.(map[string]any))
		}
		return r.code, out, r.str("next_cursor")
	}
	for q, want := range map[string][]string{
		"":                       {"account.create", "event.update", "event.create", "event.create"},
		"?actor=otto":            {"event.create", "event.create"},
		"?event_id=e1":           {"event.update", "event.create"},
		"?event_id=*":            {"account.create"},
		"?action=event.update":   {"event.update"},
		"?actor=ada&event_id=e1": {"event.update"},
		"?after=" + start.Format(time.RFC3339Nano): {"account.create", "event.update", "event.create", "event.create"},
		"?after=2999-01-01T00:00:00Z":              nil,
		"?before=2000-01-01T00:00:00Z":             nil,
	} {
		code, acts, _ := list(q)
		var got []string
		for _, a := range acts {
			got = append(got, a["action"].(string))
		}
		if code != http.StatusOK || !slices.Equal(got, want) {
			t.Errorf("audit%s: %d %v, want %v", q, code, got, want)
		}
	}
	_, p1, next := list("?limit=3")
	_, p2, last := list("?limit=3&cursor=" + next)
	if len(p1) != 3 || len(p2) != 1 || next == "" || last != "" {
		t.Errorf("pages: %d, %d, cursor %q then %q", len(p1), len(p2), next, last)
	}
	for _, q := range []string{"?after=yesterday", "?before=1", "?limit=0", "?limit=501", "?cursor=abc", "?cursor=-1", "?event_id=a%20b"} {
		r, _ := h.send("GET", "/api/admin/audit"+q, operator, nil)
		want(t, r, http.StatusBadRequest, httpapi.CodeInvalidArgument)
	}
	r, _ := h.send("GET", "/api/admin/audit", viewer, nil)
	want(t, r, http.StatusForbidden, httpapi.CodeForbidden)
	r, _ = h.send("GET", "/api/admin/audit", nil, nil)
	want(t, r, http.StatusUnauthorized, httpapi.CodeUnauthorized)
}
