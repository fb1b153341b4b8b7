package operators_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

const pw = "correct horse battery"

var ip = netip.MustParseAddr("203.0.113.9")

// newStore is a Store on a ledger schema and a Redis prefix of the test's
// own.
func newStore(t *testing.T, opts ...operators.Option) (*operators.Store, *pgxpool.Pool) {
	t.Helper()
	pool := ledgertest.New(t).Pool()
	return operators.New(pool, redistest.Client(t), redistest.Prefix(t), opts...), pool
}

func mustCreate(t *testing.T, s *operators.Store, name string, role operators.Role) operators.Account {
	t.Helper()
	a, err := s.CreateAccount(context.Background(), name, role, pw, "test")
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return a
}

func TestAccounts(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	a := mustCreate(t, s, " Alice@Example.org ", operators.Admin)
	if a.Name != "alice@example.org" || a.Role != operators.Admin || a.Disabled || a.CreatedBy != "test" {
		t.Fatalf("created %+v", a)
	}
	if _, err := s.CreateAccount(ctx, "alice@example.org", operators.Viewer, pw, "test"); !errors.Is(err, operators.ErrExists) {
		t.Errorf("a second alice: %v, want ErrExists", err)
	}
	for name, c := range map[string]struct {
		name, pw string
		role     operators.Role
	}{
		"short password": {"bob", "too short", operators.Viewer},
		"long password":  {"bob", strings.Repeat("x", 257), operators.Viewer},
		"bad name":       {"bob smith", pw, operators.Viewer},
		"leading dot":    {".bob", pw, operators.Viewer},
		"empty name":     {"", pw, operators.Viewer},
		"unknown role":   {"bob", pw, "root"},
	} {
		if _, err := s.CreateAccount(ctx, c.name, c.role, c.pw, "test"); !errors.Is(err, operators.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}

	// the password is stored as an argon2id hash only
	var hash string
	if err := pool.QueryRow(ctx, `SELECT password_hash FROM operator_accounts WHERE name = 'alice@example.org'`).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(hash, pw) {
		t.Errorf("stored password %q is not an argon2id hash", hash)
	}

	// the last enabled admin stays one
	yes, op := true, operators.Operator
	if _, _, err := s.UpdateAccount(ctx, "alice@example.org", operators.AccountChange{Disabled: &yes}, "test"); !errors.Is(err, operators.ErrLastAdmin) {
		t.Errorf("disable the last admin: %v", err)
	}
	if _, _, err := s.UpdateAccount(ctx, "alice@example.org", operators.AccountChange{Role: &op}, "test"); !errors.Is(err, operators.ErrLastAdmin) {
		t.Errorf("demote the last admin: %v", err)
	}
	mustCreate(t, s, "carol", operators.Admin)
	before, after, err := s.UpdateAccount(ctx, "alice@example.org", operators.AccountChange{Role: &op}, "carol")
	if err != nil || before.Role != operators.Admin || after.Role != operators.Operator {
		t.Fatalf("demote alice: %+v -> %+v, %v", before, after, err)
	}
	if _, _, err := s.UpdateAccount(ctx, "nobody", operators.AccountChange{Role: &op}, "carol"); !errors.Is(err, operators.ErrNotFound) {
		t.Errorf("update an unknown account: %v", err)
	}
	list, err := s.Accounts(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "alice@example.org" || list[1].Name != "carol" {
		t.Errorf("Accounts = %+v, %v", list, err)
	}
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	mustCreate(t, s, "alice", operators.Operator)
	if a, err := s.SignIn(ctx, "ALICE", pw, ip); err != nil || a.Name != "alice" || a.Role != operators.Operator {
		t.Fatalf("sign in: %+v, %v", a, err)
	}
	for name, c := range map[string][2]string{"wrong password": {"alice", pw + "!"}, "unknown account": {"mallory", pw}} {
		if _, err := s.SignIn(ctx, c[0], c[1], ip); !errors.Is(err, operators.ErrBadCredentials) {
			t.Errorf("%s: %v, want ErrBadCredentials", name, err)
		}
	}
	// a disabled account cannot sign in, with the right password, and says
	// no more than a wrong password does
	mustCreate(t, s, "root", operators.Admin)
	yes := true
	if _, _, err := s.UpdateAccount(ctx, "alice", operators.AccountChange{Disabled: &yes}, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SignIn(ctx, "alice", pw, ip); !errors.Is(err, operators.ErrBadCredentials) {
		t.Errorf("disabled account: %v, want ErrBadCredentials", err)
	}
}

// TestFiveWrongPasswordsLockTheAccount: the fifth wrong password in the
// window locks the account: the right password is refused too, until the
// window has passed; then it signs in and the count starts again. An
// unknown name locks the same way (a lock says nothing of whether the
// account exists), and a success clears the count.
func TestFiveWrongPasswordsLockTheAccount(t *testing.T) {
	t.Parallel()
	const window = time.Minute
	s, pool := newStore(t, operators.WithLockout(operators.Lockout{Attempts: 5, Window: window, PerIP: 100}))
	ctx := context.Background()
	mustCreate(t, s, "alice", operators.Operator)
	mustCreate(t, s, "bob", operators.Operator)

	// four wrong, then right: the count is cleared
	for range 4 {
		if _, err := s.SignIn(ctx, "bob", "wrong password!", ip); !errors.Is(err, operators.ErrBadCredentials) {
			t.Fatalf("bob wrong: %v", err)
		}
	}
	if _, err := s.SignIn(ctx, "bob", pw, ip); err != nil {
		t.Fatalf("bob after four wrong: %v", err)
	}
	if _, err := s.SignIn(ctx, "bob", "wrong password!", ip); !errors.Is(err, operators.ErrBadCredentials) {
		t.Fatalf("bob's count was not cleared: %v", err)
	}

	for _, name := range []string{"alice", "nobody"} {
		for i := 1; i <= 5; i++ {
			_, err := s.SignIn(ctx, name, "wrong password!", ip)
			var le *operators.LockedError
			switch {
			case i < 5 && !errors.Is(err, operators.ErrBadCredentials):
				t.Fatalf("%s wrong #%d: %v", name, i, err)
			case i == 5 && (!errors.As(err, &le) || le.Scope != "account" || le.RetryAfter != window):
				t.Fatalf("%s wrong #5: %v, want locked for the window", name, err)
			}
		}
		_, err := s.SignIn(ctx, name, pw, ip)
		var le *operators.LockedError
		if !errors.As(err, &le) || le.RetryAfter <= 0 || le.RetryAfter > window {
			t.Fatalf("%s right password while locked: %v", name, err)
		}
	}
	a, err := s.Account(ctx, "alice")
	if err != nil || a.LockedUntil == nil {
		t.Errorf("alice while locked: %+v, %v (want locked_until)", a, err)
	}
	// an admin's password reset lifts a lock at once
	if _, err := s.SetPassword(ctx, "alice", "a brand new passphrase", "root", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SignIn(ctx, "alice", "a brand new passphrase", ip); err != nil {
		t.Errorf("after a reset: %v", err)
	}

	// the lock ends with its window (a short one, two attempts, on a
	// prefix of its own)
	const short = 1500 * time.Millisecond
	s2 := operators.New(pool, redistest.Client(t), redistest.Prefix(t)+":short",
		operators.WithLockout(operators.Lockout{Attempts: 2, Window: short, PerIP: 100}))
	var le *operators.LockedError
	for range 2 {
		_, err = s2.SignIn(ctx, "bob", "wrong password!", ip)
	}
	if !errors.As(err, &le) {
		t.Fatalf("bob not locked: %v", err)
	}
	deadline := time.Now().Add(30 * short)
	for {
		_, err := s2.SignIn(ctx, "bob", pw, ip)
		if err == nil {
			break
		}
		if !errors.As(err, &le) || time.Now().After(deadline) {
			t.Fatalf("bob after the window: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFailedSignInsPerAddress: one address guessing many names is stopped
// after PerIP failures, also for a name it never tried; another address
// is not.
func TestFailedSignInsPerAddress(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, operators.WithLockout(operators.Lockout{Attempts: 5, Window: time.Minute, PerIP: 3}))
	ctx := context.Background()
	mustCreate(t, s, "alice", operators.Viewer)
	v6 := netip.MustParseAddr("2001:db8:1:2::1")
	for i, name := range []string{"a", "b", "c"} {
		if _, err := s.SignIn(ctx, name, "wrong password!", v6); !errors.Is(err, operators.ErrBadCredentials) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	// the same /64
	var le *operators.LockedError
	if _, err := s.SignIn(ctx, "alice", pw, netip.MustParseAddr("2001:db8:1:2::ffff")); !errors.As(err, &le) || le.Scope != "ip" {
		t.Errorf("after 3 failures from the /64: %v, want locked (ip)", err)
	}
	if _, err := s.SignIn(ctx, "alice", pw, ip); err != nil {
		t.Errorf("another address: %v", err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	now := time.Now()
	clock := func() time.Time { return now }
	s, pool := newStore(t, operators.WithClock(func() time.Time { return clock() }))
	ctx := context.Background()
	mustCreate(t, s, "root", operators.Admin)
	mustCreate(t, s, "ci", operators.Operator)
	tok, secret, err := s.IssueToken(ctx, "ci", "deploy pipeline", "root", 0)
	if err != nil || !operators.IsToken(secret) || tok.Account != "ci" || tok.CreatedBy != "root" || tok.ExpiresAt != nil {
		t.Fatalf("issue: %+v %q %v", tok, secret, err)
	}
	p, err := s.VerifyToken(ctx, secret)
	if err != nil || p.Account != "ci" || p.Role != operators.Operator || p.Via != operators.ViaToken || p.TokenID != tok.ID {
		t.Fatalf("verify: %+v %v", p, err)
	}
	// the role is the account's at each request
	admin := operators.Admin
	if _, _, err := s.UpdateAccount(ctx, "ci", operators.AccountChange{Role: &admin}, "root"); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.VerifyToken(ctx, secret); p.Role != operators.Admin {
		t.Errorf("role after promotion: %s", p.Role)
	}
	// only a hash is stored
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM operator_tokens WHERE position($1 in encode(hash, 'escape')) > 0
		OR name = $1`, secret).Scan(&n); err != nil || n != 0 {
		t.Errorf("the secret is stored: %d %v", n, err)
	}
	list, err := s.Tokens(ctx, "ci")
	if err != nil || len(list) != 1 || list[0].LastUsedAt == nil {
		t.Errorf("Tokens = %+v, %v", list, err)
	}

	for name, bad := range map[string]string{"unknown": operators.TokenPrefix + "nope", "jwt-like": "a.b.c", "empty": ""} {
		if _, err := s.VerifyToken(ctx, bad); !errors.Is(err, operators.ErrNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if r, err := s.RevokeToken(ctx, tok.ID, "root"); err != nil || r.RevokedAt == nil || r.RevokedBy != "root" {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	if _, err := s.VerifyToken(ctx, secret); !errors.Is(err, operators.ErrNotFound) {
		t.Errorf("revoked token: %v", err)
	}

	// expiry, and a disabled account's tokens
	_, short, err := s.IssueToken(ctx, "ci", "short", "root", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * time.Hour)
	clock = func() time.Time { return later }
	if _, err := s.VerifyToken(ctx, short); !errors.Is(err, operators.ErrNotFound) {
		t.Errorf("expired token: %v", err)
	}
	clock = func() time.Time { return now }
	_, other, err := s.IssueToken(ctx, "ci", "other", "root", 0)
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	if _, _, err := s.UpdateAccount(ctx, "ci", operators.AccountChange{Disabled: &yes}, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.VerifyToken(ctx, other); !errors.Is(err, operators.ErrNotFound) {
		t.Errorf("token of a disabled account: %v", err)
	}
	if _, _, err := s.IssueToken(ctx, "nobody", "x", "root", 0); !errors.Is(err, operators.ErrNotFound) {
		t.Errorf("token for an unknown account: %v", err)
	}
}

// TestSessions: a session cookie is HttpOnly and SameSite=Strict (and
// Secure, under the __Host- prefix, when configured); it names its account
// while its session lasts, and is worth nothing once the session is ended,
// revoked, or its account disabled, even replayed exactly as it was.
func TestSessions(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	alice := mustCreate(t, s, "alice", operators.Operator)
	mustCreate(t, s, "root", operators.Admin)
	ss := operators.NewSessions(s, operators.SessionConfig{Secure: true})
	t.Cleanup(ss.Close)

	start := func() *http.Cookie {
		t.Helper()
		w := httptest.NewRecorder()
		if _, err := ss.Start(ctx, w, alice, "203.0.113.9", "test-agent"); err != nil {
			t.Fatal(err)
		}
		cs := w.Result().Cookies()
		if len(cs) != 1 {
			t.Fatalf("cookies: %v", w.Header())
		}
		c := cs[0]
		if c.Name != operators.SecureCookieName || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/" ||
			c.Domain != "" || c.MaxAge != 0 || len(c.Value) < 40 {
			t.Fatalf("cookie %+v", c)
		}
		return c
	}
	resolve := func(c *http.Cookie) (operators.Principal, context.Context, bool) {
		t.Helper()
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(c)
		p, sctx, ok, err := ss.Resolve(httptest.NewRecorder(), r)
		if err != nil {
			t.Fatal(err)
		}
		return p, sctx, ok
	}

	c := start()
	p, sctx, ok := resolve(c)
	if !ok || p.Account != "alice" || p.Role != operators.Operator || p.Via != operators.ViaSession || p.SessionID == "" {
		t.Fatalf("resolve: %+v %v", p, ok)
	}
	list, err := s.Sessions(ctx, "alice")
	if err != nil || len(list) != 1 || list[0].ID != p.SessionID || list[0].RemoteAddr != "203.0.113.9" || list[0].UserAgent != "test-agent" {
		t.Fatalf("Sessions = %+v, %v", list, err)
	}
	// sign-out: the same cookie, replayed, is refused
	w := httptest.NewRecorder()
	if err := ss.End(sctx, w, "alice"); err != nil {
		t.Fatal(err)
	}
	if cl := w.Result().Cookies(); len(cl) != 1 || cl[0].MaxAge >= 0 {
		t.Errorf("sign-out does not clear the cookie: %v", w.Header())
	}
	if _, _, ok := resolve(c); ok {
		t.Error("the cookie still works after sign-out")
	}

	// an admin revokes a session
	c = start()
	p, _, _ = resolve(c)
	if r, err := s.RevokeSession(ctx, p.SessionID, "root"); err != nil || r.RevokedBy != "root" {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	if _, _, ok := resolve(c); ok {
		t.Error("the cookie still works after its session was revoked")
	}
	// a new password ends every session
	c = start()
	if _, err := s.SetPassword(ctx, "alice", "another passphrase", "root", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := resolve(c); ok {
		t.Error("the cookie still works after a password reset")
	}
	// disabling the account ends them too
	c = start()
	yes := true
	if _, _, err := s.UpdateAccount(ctx, "alice", operators.AccountChange{Disabled: &yes}, "root"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := resolve(c); ok {
		t.Error("the cookie still works after the account was disabled")
	}
	// a made-up cookie is nothing
	if _, _, ok := resolve(&http.Cookie{Name: operators.SecureCookieName, Value: "forged"}); ok {
		t.Error("a forged cookie resolved")
	}
}

// TestAuditTrailIsAppendOnly: the table refuses UPDATE, DELETE and
// TRUNCATE from the service's own role, the owner of the table.
func TestAuditTrailIsAppendOnly(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	a, err := s.Record(ctx, operators.Action{Actor: "alice", Via: operators.ViaSession, Role: operators.Operator,
		Action: operators.ActionEventUpdate, EventID: "e1", Before: operators.Object(map[string]any{"paused": false}),
		After: operators.Object(map[string]any{"paused": true})})
	if err != nil || a.ID == 0 || a.At.IsZero() {
		t.Fatalf("record: %+v %v", a, err)
	}
	for _, stmt := range []string{
		`UPDATE operator_actions SET actor = 'mallory'`,
		`UPDATE operator_actions SET after = '{"paused": false}' WHERE id = 1`,
		`DELETE FROM operator_actions`,
		`DELETE FROM operator_actions WHERE id = 1`,
		`TRUNCATE operator_actions CASCADE`,
	} {
		_, err := pool.Exec(ctx, stmt)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("%s: %v, want refused (42501)", stmt, err)
		}
	}
	got, _, err := s.Audit(ctx, operators.AuditFilter{})
	if err != nil || len(got) != 1 || got[0].Actor != "alice" || string(got[0].After) != `{"paused": true}` {
		t.Errorf("after the attempts: %+v %v", got, err)
	}
}

func TestAuditFilters(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	s, _ := newStore(t, operators.WithClock(func() time.Time { now = now.Add(time.Minute); return now }))
	ctx := context.Background()
	rec := func(actor, action, event string) operators.Action {
		a, err := s.Record(ctx, operators.Action{Actor: actor, Via: operators.ViaToken, Role: operators.Admin, Action: action, EventID: event})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a1 := rec("alice", operators.ActionEventCreate, "e1")
	a2 := rec("bob", operators.ActionEventUpdate, "e1")
	a3 := rec("alice", operators.ActionEventUpdate, "e2")
	a4 := rec("alice", operators.ActionAccountCreate, "")
	ids := func(as []operators.Action) []int64 {
		var out []int64
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	for name, c := range map[string]struct {
		f    operators.AuditFilter
		want []int64
	}{
		"all, newest first": {operators.AuditFilter{}, []int64{a4.ID, a3.ID, a2.ID, a1.ID}},
		"actor":             {operators.AuditFilter{Actor: "alice"}, []int64{a4.ID, a3.ID, a1.ID}},
		"event":             {operators.AuditFilter{EventID: "e1"}, []int64{a2.ID, a1.ID}},
		"action":            {operators.AuditFilter{Action: operators.ActionEventUpdate}, []int64{a3.ID, a2.ID}},
		"after":             {operators.AuditFilter{After: a3.At}, []int64{a4.ID, a3.ID}},
		"before":            {operators.AuditFilter{Before: a2.At}, []int64{a1.ID}},
		"all three":         {operators.AuditFilter{Actor: "alice", EventID: "e2", Action: operators.ActionEventUpdate}, []int64{a3.ID}},
		"none":              {operators.AuditFilter{Actor: "nobody"}, nil},
	} {
		got, next, err := s.Audit(ctx, c.f)
		if err != nil || next != 0 || !equal(ids(got), c.want) {
			t.Errorf("%s: %v next %d %v, want %v", name, ids(got), next, err, c.want)
		}
	}
	// pages of two
	p1, next, err := s.Audit(ctx, operators.AuditFilter{Limit: 2})
	if err != nil || !equal(ids(p1), []int64{a4.ID, a3.ID}) || next != a3.ID {
		t.Fatalf("page 1: %v %d %v", ids(p1), next, err)
	}
	p2, next, err := s.Audit(ctx, operators.AuditFilter{Limit: 2, Cursor: next})
	if err != nil || !equal(ids(p2), []int64{a2.ID, a1.ID}) || next != 0 {
		t.Fatalf("page 2: %v %d %v", ids(p2), next, err)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
