package stacktest

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// Operator creates an operator account with role in the stack's ledger
// (the gateway must have started: it migrated the schema) and returns its
// password, for tests that sign in as an operator would.
func (s *Stack) Operator(t testing.TB, name string, role operators.Role) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := ledger.Open(ctx, s.DatabaseURL, ledger.WithoutMigrationLock(), ledger.WithMaxConns(2))
	if err != nil {
		t.Fatalf("operator %s: %v", name, err)
	}
	defer l.Close()
	pw := "stacktest-" + rand.Text()
	if _, err := operators.New(l.Pool(), s.Redis, s.Prefix).CreateAccount(ctx, name, role, pw, "stacktest"); err != nil {
		t.Fatalf("operator %s: %v", name, err)
	}
	return pw
}
