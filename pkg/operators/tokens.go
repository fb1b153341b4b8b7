package operators

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// TokenPrefix starts every API token, so that it is told from a JWT at a
// glance (and by secret scanners).
const TokenPrefix = "bxo_"

// IsToken reports whether a bearer credential is an API token (not a JWT).
func IsToken(s string) bool { return strings.HasPrefix(s, TokenPrefix) }

// Token is an API token as the API shows it: never the secret, which is
// shown once when issued.
type Token struct {
	ID         string     `json:"id"`
	Account    string     `json:"account"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	CreatedBy  string     `json:"created_by"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	RevokedBy  string     `json:"revoked_by,omitempty"`
}

const tokenColumns = `id, account, name, created_at, created_by, expires_at, last_used_at, revoked_at, revoked_by`

func scanToken(row pgx.Row) (Token, error) {
	var t Token
	var by *string
	err := row.Scan(&t.ID, &t.Account, &t.Name, &t.CreatedAt, &t.CreatedBy, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt, &by)
	if errors.Is(err, pgx.ErrNoRows) {
		return Token{}, ErrNotFound
	}
	if by != nil {
		t.RevokedBy = *by
	}
	return t, err
}

func tokenHash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// MaxTokenNameLen bounds a token's name (what it is for).
const MaxTokenNameLen = 100

// IssueToken makes an API token for account, named for what it is for,
// valid for ttl (0: until revoked). It acts with the account's role at
// the time of each request. The secret is returned once; only its SHA-256
// is stored (it is 256 random bits: a slow hash would add nothing).
func (s *Store) IssueToken(ctx context.Context, account, name, by string, ttl time.Duration) (Token, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > MaxTokenNameLen || strings.ContainsFunc(name, unicode.IsControl) || !utf8.ValidString(name) {
		return Token{}, "", fmt.Errorf("%w: name must be 1-%d characters, no control characters", ErrInvalid, MaxTokenNameLen)
	}
	if !known(NormalizeName(account)) {
		return Token{}, "", ErrNotFound
	}
	if ttl < 0 {
		return Token{}, "", fmt.Errorf("%w: ttl must not be negative", ErrInvalid)
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	var expires *time.Time
	if ttl > 0 {
		t := s.now().Add(ttl)
		expires = &t
	}
	t, err := scanToken(s.pool.QueryRow(ctx, `INSERT INTO operator_tokens (id, account, name, hash, created_by, expires_at)
		SELECT $1, name, $3, $4, $5, $6 FROM operator_accounts WHERE name = $2 RETURNING `+tokenColumns,
		"tok_"+rand.Text(), NormalizeName(account), name, tokenHash(secret), by, expires))
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Token{}, "", err
		}
		return Token{}, "", wrap("issue token", err)
	}
	return t, secret, nil
}

// VerifyToken returns the principal of an API token: ErrNotFound when it
// is unknown, revoked or expired, or its account is disabled. It records
// the token's last use.
func (s *Store) VerifyToken(ctx context.Context, secret string) (Principal, error) {
	if !IsToken(secret) || len(secret) > 100 {
		return Principal{}, ErrNotFound
	}
	p := Principal{Via: ViaToken}
	err := s.pool.QueryRow(ctx, `UPDATE operator_tokens t SET last_used_at = now() FROM operator_accounts a
		WHERE t.hash = $1 AND a.name = t.account AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > $2)
			AND a.disabled_at IS NULL
		RETURNING t.id, a.name, a.role`, tokenHash(secret), s.now()).Scan(&p.TokenID, &p.Account, &p.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, ErrNotFound
	}
	if err != nil {
		return Principal{}, wrap("verify token", err)
	}
	return p, nil
}

// Tokens lists account's tokens, revoked ones too, newest first.
func (s *Store) Tokens(ctx context.Context, account string) ([]Token, error) {
	if !known(NormalizeName(account)) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+tokenColumns+` FROM operator_tokens WHERE account = $1 ORDER BY created_at DESC, id`,
		NormalizeName(account))
	if err != nil {
		return nil, wrap("tokens", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Token, error) { return scanToken(r) })
	return out, wrap("tokens", err)
}

// Token returns one token (never its secret).
func (s *Store) Token(ctx context.Context, id string) (Token, error) {
	if !validID(id) {
		return Token{}, ErrNotFound
	}
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM operator_tokens WHERE id = $1`, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Token{}, wrap("token", err)
	}
	return t, err
}

// RevokeToken revokes token id at once; revoking it again changes nothing
// and returns it as it is.
func (s *Store) RevokeToken(ctx context.Context, id, by string) (Token, error) {
	if !validID(id) {
		return Token{}, ErrNotFound
	}
	t, err := scanToken(s.pool.QueryRow(ctx, `UPDATE operator_tokens SET revoked_at = coalesce(revoked_at, now()),
		revoked_by = coalesce(revoked_by, $2) WHERE id = $1 RETURNING `+tokenColumns, id, by))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Token{}, wrap("revoke token", err)
	}
	return t, err
}
