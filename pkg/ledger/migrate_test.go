package ledger_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

// Two branches developed side by side may number their migrations so that a
// database gets a higher version before a lower one (a development database
// that ran one branch, then main). Open applies the missing lower version
// instead of refusing to start.
func TestOpenAppliesAMigrationMissedBelowTheNewest(t *testing.T) {
	t.Parallel()
	dsn := ledgertest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// without 00003, and without 00037, which builds on it (it changes
	// 00003's trigger function): a database that lacked a migration
	// lacked those built on it too
	if err := ledger.MigrateExcept(ctx, db, u.Query().Get("search_path"), 3, 37); err != nil {
		t.Fatalf("migrate without 00003: %v", err)
	}
	l := ledgertest.Open(t, dsn)
	if _, _, err := l.CreateEvent(ctx, booking.EventConfig{ID: "e", Rows: 1, SeatsPerRow: 2}); err != nil {
		t.Fatalf("create after the missed migration: %v", err)
	}
}
