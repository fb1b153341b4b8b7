package ledger

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// MigrateExcept applies the embedded migrations but those of the given
// versions, as a database migrated by an older release that lacked them.
func MigrateExcept(ctx context.Context, db *sql.DB, schema string, versions ...int64) error {
	return runMigrations(ctx, db, true, schema, goose.WithExcludeVersions(versions))
}

// SeatsTakenSQL is seatsTakenSQL, for the plan test.
var SeatsTakenSQL = seatsTakenSQL
