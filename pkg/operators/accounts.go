package operators

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Account is an operator account as the API shows it (never its password
// hash).
type Account struct {
	Name              string     `json:"name"`
	Role              Role       `json:"role"`
	CreatedAt         time.Time  `json:"created_at"`
	CreatedBy         string     `json:"created_by"`
	UpdatedAt         time.Time  `json:"updated_at"`
	PasswordChangedAt time.Time  `json:"password_changed_at"`
	Disabled          bool       `json:"disabled"`
	DisabledAt        *time.Time `json:"disabled_at,omitempty"`
	// LockedUntil is set while sign-ins are refused for too many wrong
	// passwords.
	LockedUntil *time.Time `json:"locked_until,omitempty"`

	hash string
}

// Password length limits: long enough to resist guessing without other
// rules (NIST SP 800-63B), short enough that hashing stays cheap.
const (
	MinPasswordLen = 12
	MaxPasswordLen = 256
)

// MaxNameLen bounds an account name.
const MaxNameLen = 64

// NormalizeName is the account name as stored: trimmed, lower case.
func NormalizeName(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// CheckName validates a normalized account name: 1-64 characters of a-z,
// 0-9, '.', '_', '-' and '@' (an e-mail address fits), starting with a
// letter or digit.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w: name must be 1-%d characters", ErrInvalid, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-' || c == '@')
		if !ok {
			return fmt.Errorf("%w: name must be a-z, 0-9, '.', '_', '-' or '@', starting with a letter or digit", ErrInvalid)
		}
	}
	return nil
}

// known reports whether name (normalized) could be an account's: a name
// that could not is not looked up (PostgreSQL refuses some bytes, NUL).
func known(name string) bool { return CheckName(name) == nil }

// validID reports whether a session or token id could be one: printable
// ASCII without spaces, at most 64 bytes.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// CheckPassword validates a new password's length (in characters).
func CheckPassword(pw string) error {
	n := len([]rune(pw))
	if n < MinPasswordLen || len(pw) > MaxPasswordLen {
		return fmt.Errorf("%w: password must be %d to %d characters", ErrInvalid, MinPasswordLen, MaxPasswordLen)
	}
	return nil
}

// hash is the argon2id hash of pw, with at most cap(s.hashing)
// computations at once.
func (s *Store) hash(pw string) (string, error) {
	s.hashing <- struct{}{}
	defer func() { <-s.hashing }()
	return argon2id.CreateHash(pw, PasswordParams)
}

func (s *Store) matches(pw, hash string) bool {
	s.hashing <- struct{}{}
	defer func() { <-s.hashing }()
	ok, err := argon2id.ComparePasswordAndHash(pw, hash)
	return err == nil && ok
}

const accountColumns = `name, role, password_hash, created_at, created_by, updated_at, password_changed_at, disabled_at`

func scanAccount(row pgx.Row) (Account, error) {
	var a Account
	err := row.Scan(&a.Name, &a.Role, &a.hash, &a.CreatedAt, &a.CreatedBy, &a.UpdatedAt, &a.PasswordChangedAt, &a.DisabledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, ErrNotFound
	}
	a.Disabled = a.DisabledAt != nil
	return a, err
}

// CreateAccount creates an account with role and password; by names who
// did it (an account, "cli:<user>").
func (s *Store) CreateAccount(ctx context.Context, name string, role Role, password, by string) (Account, error) {
	name = NormalizeName(name)
	if err := CheckName(name); err != nil {
		return Account{}, err
	}
	if role.rank() == 0 {
		return Account{}, fmt.Errorf("%w: role must be viewer, operator or admin", ErrInvalid)
	}
	if err := CheckPassword(password); err != nil {
		return Account{}, err
	}
	h, err := s.hash(password)
	if err != nil {
		return Account{}, wrap("hash password", err)
	}
	a, err := scanAccount(s.pool.QueryRow(ctx, `INSERT INTO operator_accounts (name, role, password_hash, created_by)
		VALUES ($1, $2, $3, $4) RETURNING `+accountColumns, name, role, h, by))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return Account{}, ErrExists
	}
	return a, wrap("create account", err)
}

// Account returns one account, with LockedUntil from the sign-in counters.
func (s *Store) Account(ctx context.Context, name string) (Account, error) {
	if !known(NormalizeName(name)) {
		return Account{}, ErrNotFound
	}
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM operator_accounts WHERE name = $1`, NormalizeName(name)))
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Account{}, err
		}
		return Account{}, wrap("account", err)
	}
	s.lockState(ctx, &a)
	return a, nil
}

// Accounts lists every account by name.
func (s *Store) Accounts(ctx context.Context) ([]Account, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+accountColumns+` FROM operator_accounts ORDER BY name`)
	if err != nil {
		return nil, wrap("accounts", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Account, error) { return scanAccount(r) })
	if err != nil {
		return nil, wrap("accounts", err)
	}
	for i := range out {
		s.lockState(ctx, &out[i])
	}
	return out, nil
}

// AccountChange is a change of an account's role or state; nil fields
// stay.
type AccountChange struct {
	Role     *Role
	Disabled *bool
}

// UpdateAccount applies c and returns the account before and after.
// Disabling an account revokes its sessions and tokens at once. The last
// enabled admin cannot be disabled or demoted (ErrLastAdmin).
func (s *Store) UpdateAccount(ctx context.Context, name string, c AccountChange, by string) (before, after Account, err error) {
	name = NormalizeName(name)
	if !known(name) {
		return Account{}, Account{}, ErrNotFound
	}
	if c.Role != nil && c.Role.rank() == 0 {
		return Account{}, Account{}, fmt.Errorf("%w: role must be viewer, operator or admin", ErrInvalid)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// one admin change at a time: the last-admin rule reads every
		// admin row
		if _, err := tx.Exec(ctx, `LOCK TABLE operator_accounts IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		var err error
		if before, err = scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+` FROM operator_accounts WHERE name = $1`, name)); err != nil {
			return err
		}
		role, disabled := before.Role, before.Disabled
		if c.Role != nil {
			role = *c.Role
		}
		if c.Disabled != nil {
			disabled = *c.Disabled
		}
		if before.Role == Admin && !before.Disabled && (role != Admin || disabled) {
			var admins int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM operator_accounts WHERE role = 'admin' AND disabled_at IS NULL`).Scan(&admins); err != nil {
				return err
			}
			if admins <= 1 {
				return ErrLastAdmin
			}
		}
		if after, err = scanAccount(tx.QueryRow(ctx, `UPDATE operator_accounts SET role = $2,
				disabled_at = CASE WHEN $3 THEN coalesce(disabled_at, now()) END,
				updated_at = CASE WHEN role <> $2 OR (disabled_at IS NOT NULL) <> $3 THEN now() ELSE updated_at END
			WHERE name = $1 RETURNING `+accountColumns, name, role, disabled)); err != nil {
			return err
		}
		if disabled && !before.Disabled {
			return revokeAll(ctx, tx, name, by)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrLastAdmin) {
			return Account{}, Account{}, err
		}
		return Account{}, Account{}, wrap("update account", err)
	}
	return before, after, nil
}

// SetPassword replaces an account's password (an admin's reset, the
// operators command, or the account's own change), revokes every session
// and token of the account but keepSession (the session of an operator
// changing their own password), and lifts a lockout. It returns the
// account after the change.
func (s *Store) SetPassword(ctx context.Context, name, password, by, keepSession string) (Account, error) {
	name = NormalizeName(name)
	if err := CheckPassword(password); err != nil {
		return Account{}, err
	}
	if !known(name) {
		return Account{}, ErrNotFound
	}
	h, err := s.hash(password)
	if err != nil {
		return Account{}, wrap("hash password", err)
	}
	var a Account
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if a, err = scanAccount(tx.QueryRow(ctx, `UPDATE operator_accounts SET password_hash = $2, password_changed_at = now(),
			updated_at = now() WHERE name = $1 RETURNING `+accountColumns, name, h)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE operator_sessions SET revoked_at = now(), revoked_by = $2
			WHERE account = $1 AND revoked_at IS NULL AND id <> $3`, name, by, keepSession); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Account{}, err
		}
		return Account{}, wrap("set password", err)
	}
	if err := s.rdb.Del(ctx, s.accountKey(name)).Err(); err != nil {
		return a, wrap("lift lockout", err)
	}
	return a, nil
}

// CheckAccountPassword reports whether pw is name's password (an
// operator confirming their own before changing it). It counts a wrong
// one towards the lockout, like a sign-in.
func (s *Store) CheckAccountPassword(ctx context.Context, name, pw string) error {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM operator_accounts WHERE name = $1`, NormalizeName(name)))
	if err != nil {
		return wrap("account", err)
	}
	if !s.matches(pw, a.hash) {
		if _, err := s.fail(ctx, a.Name, nil); err != nil {
			return err
		}
		return ErrBadCredentials
	}
	return nil
}

// revokeAll revokes every open session and token of account.
func revokeAll(ctx context.Context, tx pgx.Tx, account, by string) error {
	if _, err := tx.Exec(ctx, `UPDATE operator_sessions SET revoked_at = now(), revoked_by = $2
		WHERE account = $1 AND revoked_at IS NULL`, account, by); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE operator_tokens SET revoked_at = now(), revoked_by = $2
		WHERE account = $1 AND revoked_at IS NULL`, account, by)
	return err
}
