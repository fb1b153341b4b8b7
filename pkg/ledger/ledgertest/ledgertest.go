// Package ledgertest gives each test its own PostgreSQL schema with the
// ledger's migrations applied, so tests run in parallel and twice in a row
// against the one local PostgreSQL (scripts/ensure-infra.sh creates the
// development role and database). The schema is dropped when the test ends.
//
// The database is LEDGER_TEST_DATABASE_URL, else DATABASE_URL, else
// DefaultURL. A test is skipped, not failed, only when
// LEDGER_TEST_OPTIONAL=1 and PostgreSQL does not answer.
package ledgertest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/ledger"
)

// DefaultURL is the development database of scripts/ensure-infra.sh.
const DefaultURL = "postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable"

// BaseURL is the database tests use (see the package comment).
func BaseURL() string {
	for _, k := range []string{"LEDGER_TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return DefaultURL
}

// URL creates a fresh schema for the test and returns a database URL whose
// connections use it (search_path). The schema is dropped at cleanup.
func URL(t testing.TB) string {
	t.Helper()
	base := BaseURL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		if os.Getenv("LEDGER_TEST_OPTIONAL") == "1" {
			t.Skipf("PostgreSQL not reachable at %s: %v", base, err)
		}
		t.Fatalf("PostgreSQL not reachable at %s (run scripts/ensure-infra.sh): %v", base, err)
	}
	defer conn.Close(ctx)
	schema := "lt_" + strings.ToLower(rand.Text()[:12])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("database URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// New returns a Ledger over a fresh schema of the test's own, closed at
// cleanup.
func New(t testing.TB) *ledger.Ledger {
	t.Helper()
	return Open(t, URL(t))
}

// Open opens a Ledger at url (from URL), closed at cleanup.
func Open(t testing.TB, url string, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := ledger.Open(ctx, url, append([]ledger.Option{ledger.WithoutMigrationLock()}, opts...)...)
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}
