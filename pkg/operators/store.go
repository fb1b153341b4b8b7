package operators

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Errors. Validation errors wrap ErrInvalid and say which value is wrong.
var (
	ErrInvalid        = errors.New("invalid")
	ErrNotFound       = errors.New("not found")
	ErrExists         = errors.New("account already exists")
	ErrBadCredentials = errors.New("wrong account name or password")
	// ErrLastAdmin refuses to disable or demote the last enabled admin:
	// nobody could manage accounts any more (the operators command on the
	// server still can).
	ErrLastAdmin = errors.New("the last enabled admin cannot be disabled or demoted")
)

// LockedError is a sign-in refused without looking at the password:
// the account had too many wrong passwords (Scope "account"), or the
// client address too many failed sign-ins (Scope "ip"), recently.
type LockedError struct {
	Scope      string
	RetryAfter time.Duration
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("too many failed sign-ins (%s); retry after %s", e.Scope, e.RetryAfter.Round(time.Second))
}

// Lockout is the sign-in limit policy.
type Lockout struct {
	// Attempts wrong passwords within Window lock the account for
	// Window from the last of them (default 5 in 15 min).
	Attempts int
	Window   time.Duration
	// PerIP failed sign-ins from one client address (an IPv6 /64)
	// within Window refuse every further sign-in from it until the
	// window ends (default 20).
	PerIP int
}

func (l Lockout) withDefaults() Lockout {
	if l.Attempts <= 0 {
		l.Attempts = 5
	}
	if l.Window <= 0 {
		l.Window = 15 * time.Minute
	}
	if l.PerIP <= 0 {
		l.PerIP = 20
	}
	return l
}

// PasswordParams are the argon2id parameters of new password hashes:
// OWASP's recommendation of 19 MiB of memory, two passes, one lane. A
// hash keeps its own parameters, so changing these affects only passwords
// set afterwards.
var PasswordParams = &argon2id.Params{Memory: 19 * 1024, Iterations: 2, Parallelism: 1, SaltLength: 16, KeyLength: 32}

// Store keeps accounts, sessions, tokens and the audit trail in
// PostgreSQL and the sign-in counters in Redis. Safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	rdb     redis.Cmdable
	prefix  string
	lockout Lockout
	now     func() time.Time

	// hashing bounds the argon2id computations running at once: each
	// takes PasswordParams.Memory, and a burst of sign-ins must not take
	// the gateway's memory
	hashing chan struct{}
	dummy   func() string // a hash to check unknown accounts' passwords against
}

// Option configures New.
type Option func(*Store)

// WithLockout sets the sign-in limits (default: Lockout's defaults).
func WithLockout(l Lockout) Option { return func(s *Store) { s.lockout = l.withDefaults() } }

// WithClock sets the clock of expiry decisions made in Go (tests).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns a Store on the ledger's pool (the tables are the ledger's
// migrations) and Redis under prefix (the REDIS_PREFIX of the gateway).
func New(pool *pgxpool.Pool, rdb redis.Cmdable, prefix string, opts ...Option) *Store {
	s := &Store{pool: pool, rdb: rdb, prefix: prefix, lockout: Lockout{}.withDefaults(), now: time.Now,
		hashing: make(chan struct{}, 2)}
	s.dummy = sync.OnceValue(func() string {
		h, _ := argon2id.CreateHash("no account has this password", PasswordParams)
		return h
	})
	for _, o := range opts {
		o(s)
	}
	return s
}

// Lockout is the sign-in limit policy in force.
func (s *Store) Lockout() Lockout { return s.lockout }

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("operators: %s: %w", op, err)
}
