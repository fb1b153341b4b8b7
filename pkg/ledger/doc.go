// Package ledger is boxoffice's system of record in PostgreSQL: event
// definitions, every payment id issued and its outcome, and orders (sold
// tickets and refunds due). Redis (pkg/booking) is the fast path and can be
// rebuilt from here (Restorer); the ledger is never rebuilt from Redis.
//
// The driver is jackc/pgx v5 with a pgxpool; the schema is the embedded SQL
// files of migrations/, applied by pressly/goose at Open. Queries are plain
// SQL strings next to the Go that uses them: there are a dozen of them,
// each small, and the few with conditional logic (an order that becomes
// refund_due when its seat is already sold, an upsert that keeps the first
// seat) read more clearly as SQL than as generated wrappers; sqlc would add
// a code generator to the build for no type the package does not already
// spell out. Every statement is idempotent on its natural key (payment id,
// event id), so a retried webhook or request writes nothing twice.
//
// Errors: ErrEventNotFound, ErrEventExists, ErrOrderNotFound,
// ErrNotRefundable are sentinels; anything else (PostgreSQL unreachable, a
// timeout) is returned wrapped, which the HTTP edge answers with 503 so
// that the caller retries. docs/ledger.md describes the schema, the write
// path and what is durable when.
package ledger
