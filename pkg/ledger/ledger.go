package ledger

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/prometheus/client_golang/prometheus"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Sentinel errors.
var (
	ErrEventNotFound = errors.New("event not found in the ledger")
	ErrEventExists   = errors.New("event already exists in the ledger with another definition")
	ErrOrderNotFound = errors.New("order not found")
	ErrNotRefundable = errors.New("order is not due for a refund")
)

// DefaultCurrency is the currency of a payment recorded without one.
const DefaultCurrency = "EUR"

// Ledger reads and writes the system of record. Safe for concurrent use.
type Ledger struct {
	pool *pgxpool.Pool
	now  func() time.Time
	// lost changes its calls recorded before their own (nil: not counted)
	recorded *prometheus.CounterVec
}

type options struct {
	noLock   bool
	maxConns int32
	reg      prometheus.Registerer
}

// Option configures Open.
type Option func(*options)

// WithoutMigrationLock skips goose's advisory lock: for tests that each
// migrate their own schema (the lock is database wide and would make them
// wait for one another). Services keep the lock, so instances starting
// together migrate once.
func WithoutMigrationLock() Option { return func(o *options) { o.noLock = true } }

// WithMaxConns bounds the pool (default DefaultMaxConns, or the URL's
// pool_max_conns).
func WithMaxConns(n int32) Option { return func(o *options) { o.maxConns = n } }

// WithRegisterer counts on reg, in boxoffice_ledger_recorded_changes_total
// (shared with the reconciliation's Metrics of the same registry), the
// lost changes a call records before its own: a phase, seat mark or
// allocation change Redis took whose ledger transaction rolled back,
// followed by the next change of the same phase, seats or channel before
// the reconciliation recorded it.
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }

// DefaultMaxConns is the pool size when neither the URL (pool_max_conns)
// nor WithMaxConns sets one. pgxpool's own default, max(4, CPUs), is 4 on
// a 2-core machine and caps success webhooks at a few hundred per second:
// each one waits for its commit's WAL flush, and PostgreSQL flushes
// concurrent commits together, so throughput grows with the commits in
// flight (docs/benchmarks.md). Connections open on demand; an idle
// service holds few. Mind max_connections (100 by default) across
// instances.
const DefaultMaxConns = 20

// Open connects to the database at url (a postgres:// URL or DSN; unknown
// parameters such as search_path become session settings), applies the
// migrations and returns the Ledger. It fails when PostgreSQL does not
// answer: a service starts only with its system of record.
func Open(ctx context.Context, url string, opts ...Option) (*Ledger, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("ledger: DATABASE_URL: %w", err)
	}
	switch {
	case o.maxConns > 0:
		cfg.MaxConns = o.maxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if err := migrate(ctx, cfg, o.noLock); err != nil {
		pool.Close()
		return nil, err
	}
	l := &Ledger{pool: pool, now: time.Now}
	if o.reg != nil {
		l.recorded = recordedChanges(o.reg)
	}
	return l, nil
}

// countRecorded counts n lost changes of kind its call recorded (after
// the call's commit).
func (l *Ledger) countRecorded(kind string, n int) {
	if l.recorded != nil && n > 0 {
		l.recorded.WithLabelValues(kind).Add(float64(n))
	}
}

// migrate applies every migration not applied yet, over its own
// database/sql connection (goose speaks database/sql).
func migrate(ctx context.Context, cfg *pgxpool.Config, noLock bool) error {
	db := stdlib.OpenDB(*cfg.ConnConfig)
	defer db.Close()
	return Migrate(ctx, db, noLock, cfg.ConnConfig.RuntimeParams["search_path"])
}

// Migrate applies the embedded migrations to db with goose (Open does it).
// Unless noLock, it holds a PostgreSQL advisory lock while it does, so
// instances starting together migrate once; the lock's id is derived from
// schema (the search_path, "" for the default), so migrations of different
// schemas do not wait for each other. The lock is retried every second
// for up to five minutes.
func Migrate(ctx context.Context, db *sql.DB, noLock bool, schema string) error {
	return runMigrations(ctx, db, noLock, schema)
}

func runMigrations(ctx context.Context, db *sql.DB, noLock bool, schema string, extra ...goose.ProviderOption) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	var popts []goose.ProviderOption
	if !noLock {
		h := fnv.New64a()
		h.Write([]byte("boxoffice-ledger|" + schema))
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64()>>1)), lock.WithLockTimeout(1, 300))
		if err != nil {
			return fmt.Errorf("ledger: migration lock: %w", err)
		}
		popts = append(popts, goose.WithSessionLocker(locker))
	}
	// A migration numbered below the newest applied one is applied, not
	// refused: branches developed side by side number theirs independently
	// (docs/ledger.md, "Migrations").
	popts = append(popts, goose.WithAllowOutofOrder(true))
	popts = append(popts, extra...)
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, popts...)
	if err != nil {
		return fmt.Errorf("ledger: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	return nil
}

// Close closes the pool.
func (l *Ledger) Close() { l.pool.Close() }

// Pool is the connection pool, for tests and health checks.
func (l *Ledger) Pool() *pgxpool.Pool { return l.pool }

// Ping checks that PostgreSQL answers (readiness).
func (l *Ledger) Ping(ctx context.Context) error {
	if err := l.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("ledger: %s: %w", op, err)
}

// rowsOf collects rows with scan; a small helper over pgx.CollectRows.
func rowsOf[T any](rows pgx.Rows, err error, scan func(pgx.CollectableRow) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scan)
}
