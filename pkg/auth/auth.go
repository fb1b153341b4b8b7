// Package auth issues and verifies boxoffice's bearer tokens: JWTs signed
// with HS256 and a shared secret, whose subject (sub) is the user id and
// whose role claim is "admin" for operators. It knows no transport: the
// gin and fasthttp middleware that read the header and answer 401/403
// (missing, malformed, wrongly signed, unsigned ("alg":"none") or expired
// tokens; a valid token without the admin role on an admin route) are
// httpapi.Authenticate, httpapi.RequireAdmin, and the gateway's
// fastserver.Identity.
package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/boxoffice/boxoffice/pkg/ids"
)

// RoleAdmin opens the admin API.
const RoleAdmin = "admin"

// MinSecretLen is the shortest accepted HS256 secret.
const MinSecretLen = 16

// Errors of Verify.
var (
	ErrNoToken      = errors.New("missing bearer token")
	ErrInvalidToken = errors.New("invalid or expired token")
)

// Identity is who a verified token names.
type Identity struct {
	UserID string
	Role   string
	// Channel is the sales channel the token's holder buys through (a
	// partner, the box office; claim "channel", "" none): seats allocated
	// to it are theirs to take (pkg/booking allocations.go).
	Channel string
}

// Admin reports whether the identity has the admin role.
func (i Identity) Admin() bool { return i.Role == RoleAdmin }

type claims struct {
	Role    string `json:"role,omitempty"`
	Channel string `json:"channel,omitempty"`
	jwt.RegisteredClaims
}

// Authority signs and verifies tokens with one secret. Safe for concurrent use.
//
// Every Verify checks the token in full: there is no cache of verified
// tokens. A token from Issue takes the fast path (hs256.go); a cache of
// verified tokens saved a poll less than it cost every new token (a join),
// and the web page reads the exact position rarely (BenchmarkVerify, run
// as its comment says; docs/benchmarks.md "HS256 fast path").
type Authority struct {
	secret []byte
	now    func() time.Time
	leeway time.Duration
	macs   sync.Pool // of HMAC-SHA256 hashes keyed with secret (hs256.go)
}

// parseJWT is golang-jwt's parse and validation with the rules of
// Verify: HS256 only, exp required, nbf and iat honoured, all with the
// leeway, and read strictly (strict.go: the claims by their
// UnmarshalJSON, the header here).
func (a *Authority) parseJWT(token string) (claims, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, a.key,
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(a.leeway),
		jwt.WithTimeFunc(a.now),
	)
	return c, err
}

// key is parseJWT's key function: the secret, for a header read strictly
// (no member twice, no "crit").
func (a *Authority) key(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, errCrit
	}
	head, _, _ := strings.Cut(t.Raw, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head) // golang-jwt decoded it already
	if err != nil {
		return nil, err
	}
	if err := checkMembers(raw, false); err != nil {
		return nil, err
	}
	return a.secret, nil
}

// New returns an Authority for secret (at least MinSecretLen bytes).
func New(secret []byte) (*Authority, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("auth: secret must be at least %d bytes", MinSecretLen)
	}
	return &Authority{secret: secret, now: time.Now, leeway: 5 * time.Second}, nil
}

// WithClock returns a copy of a that reads time from now (tests).
func (a *Authority) WithClock(now func() time.Time) *Authority {
	return &Authority{secret: a.secret, now: now, leeway: a.leeway}
}

// Issue returns a token for userID with role ("" or RoleAdmin) valid for ttl.
func (a *Authority) Issue(userID, role string, ttl time.Duration) (string, error) {
	return a.IssueChannel(userID, role, "", ttl)
}

// IssueChannel is Issue with the signed channel claim (channel "" none):
// a token for a fan who buys through a partner or presale channel.
func (a *Authority) IssueChannel(userID, role, channel string, ttl time.Duration) (string, error) {
	if !ids.ValidUser(userID) {
		return "", fmt.Errorf("auth: bad user id %q (ids beginning %s are reserved)", userID, ids.ReservedUserPrefix)
	}
	if ttl <= 0 {
		return "", errors.New("auth: ttl must be positive")
	}
	now := a.now()
	c := claims{Role: role, Channel: channel, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   userID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.secret)
}

// Verify checks a token's signature (HS256 only), expiry (required) and
// subject and returns the identity. Errors wrap ErrInvalidToken.
func (a *Authority) Verify(token string) (Identity, error) {
	if token == "" {
		return Identity{}, ErrNoToken
	}
	c, err := a.parse(token)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if !ids.ValidUser(c.Subject) {
		return Identity{}, fmt.Errorf("%w: bad subject", ErrInvalidToken)
	}
	return Identity{UserID: c.Subject, Role: c.Role, Channel: c.Channel}, nil
}

// BearerToken returns the token of an "Authorization: Bearer <token>" header.
func BearerToken(h string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
