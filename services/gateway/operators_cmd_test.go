package main

import (
	"context"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestOperatorsCommand: `gateway operators` adds the first admin (its
// password from standard input, or made and printed once), refuses to add
// one twice unless -reset, sets a new password, lists the accounts, and
// records each change in the audit trail as cli:<user>.
func TestOperatorsCommand(t *testing.T) {
	dbURL := ledgertest.URL(t)
	rdb, prefix := redistest.Client(t), redistest.Prefix(t)
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("REDIS_PREFIX", prefix)
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errOut strings.Builder
		code := operatorsCommand(args, strings.NewReader(stdin), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	if code, out, errOut := run("first admin passphrase\n", "add", "-name", "Root", "-role", "admin", "-password-stdin"); code != 0 ||
		!strings.Contains(out, "root (admin) added") || strings.Contains(out, "passphrase") {
		t.Fatalf("add root: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := run("another long passphrase\n", "add", "-name", "root", "-password-stdin"); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("add root again: %d %q", code, errOut)
	}
	if code, out, _ := run("reset admin passphrase\n", "add", "-name", "root", "-password-stdin", "-reset"); code != 0 || !strings.Contains(out, "reset") {
		t.Errorf("add root -reset: %d %q", code, out)
	}
	code, out, _ := run("", "add", "-name", "viewer1", "-role", "viewer")
	m := regexp.MustCompile(`(?m)^password: (\S+)$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("add with a made password: %d %q", code, out)
	}
	l := ledgertest.Open(t, dbURL)
	store := operators.New(l.Pool(), rdb, prefix)
	ctx := context.Background()
	ip := netip.MustParseAddr("127.0.0.1")
	if a, err := store.SignIn(ctx, "viewer1", m[1], ip); err != nil || a.Role != operators.Viewer {
		t.Errorf("sign in with the printed password: %+v %v", a, err)
	}
	if _, err := store.SignIn(ctx, "root", "reset admin passphrase", ip); err != nil {
		t.Errorf("root after -reset: %v", err)
	}
	if code, _, _ := run("viewer's new passphrase\n", "set-password", "-name", "viewer1", "-password-stdin"); code != 0 {
		t.Errorf("set-password: %d", code)
	}
	if _, err := store.SignIn(ctx, "viewer1", "viewer's new passphrase", ip); err != nil {
		t.Errorf("after set-password: %v", err)
	}
	if code, _, errOut := run("short\n", "set-password", "-name", "viewer1", "-password-stdin"); code != 1 || !strings.Contains(errOut, "password must be") {
		t.Errorf("a short password: %d %q", code, errOut)
	}
	code, out, _ = run("", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^root\s+admin\s+enabled`).MatchString(out) || !regexp.MustCompile(`(?m)^viewer1\s+viewer\s+enabled`).MatchString(out) {
		t.Errorf("list: %d\n%s", code, out)
	}
	for _, args := range [][]string{{}, {"remove", "-name", "x"}, {"add"}, {"add", "-bogus"}} {
		if code, _, _ := run("", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
	acts, _, err := store.Audit(ctx, operators.AuditFilter{})
	if err != nil || len(acts) != 4 {
		t.Fatalf("audit: %d records %v, want 4", len(acts), err)
	}
	for _, a := range acts {
		if !strings.HasPrefix(a.Actor, "cli:") || a.Via != operators.ViaCLI || a.Role != operators.Admin {
			t.Errorf("record %+v", a)
		}
	}
	if acts[3].Action != operators.ActionAccountCreate || acts[3].Target != "root" {
		t.Errorf("first record %+v", acts[3])
	}
}
