// Package pass is the admission pass: a JWT that boxoffice hands a user
// when they are admitted to an event's booking room, signed with an
// Ed25519 key (alg EdDSA) named by its kid, so that any origin or CDN
// worker can check offline, against the public keys served at
// /.well-known/jwks.json, that this user was admitted to this event and
// until when. Claims: iss, sub (the user), event_id, seq (the join
// sequence), iat, exp (the hold's deadline). Keys come from configuration
// (ParseKeys): the first signs, the others are previous keys still served
// so that passes signed before a rotation stay valid until they expire.
// docs/admission-pass.md is the validation contract; Verify implements it.
package pass

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// Key is one signing key and its id.
type Key struct {
	ID      string
	Private ed25519.PrivateKey
}

// Keys are the configured keys: Keys[0] signs, every key is published.
type Keys []Key

// ParseKeys parses PASS_KEYS items "kid:seed", seed the 32-byte Ed25519
// seed in base64url (padding optional; `openssl rand 32 | basenc
// --base64url`). The first item is the current key.
func ParseKeys(items []string) (Keys, error) {
	var ks Keys
	seen := map[string]bool{}
	for _, it := range items {
		kid, seed, ok := strings.Cut(strings.TrimSpace(it), ":")
		if !ok || kid == "" {
			return nil, errors.New(`pass key: want "kid:base64url-seed"`)
		}
		if seen[kid] {
			return nil, fmt.Errorf("pass key %q given twice", kid)
		}
		seen[kid] = true
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seed, "="))
		if err != nil || len(raw) != ed25519.SeedSize {
			return nil, fmt.Errorf("pass key %q: the seed must be %d bytes in base64url", kid, ed25519.SeedSize)
		}
		ks = append(ks, Key{ID: kid, Private: ed25519.NewKeyFromSeed(raw)})
	}
	return ks, nil
}

// JWKS is the public key set (RFC 7517) of ks, as served at
// /.well-known/jwks.json.
func (ks Keys) JWKS() ([]byte, error) {
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(ks))}
	for _, k := range ks {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Private.Public(), KeyID: k.ID,
			Algorithm: string(jose.EdDSA), Use: "sig"})
	}
	return json.Marshal(set)
}

// Claims are a pass's claims.
type Claims struct {
	EventID string `json:"event_id"`
	Seq     int64  `json:"seq"`
	jwt.RegisteredClaims
}

// Signer issues passes with the current key.
type Signer struct {
	key    Key
	issuer string
}

// NewSigner returns a signer with ks[0]; nil when ks is empty (no passes).
func NewSigner(ks Keys, issuer string) *Signer {
	if len(ks) == 0 {
		return nil
	}
	return &Signer{key: ks[0], issuer: issuer}
}

// Sign returns the pass of user admitted to eventID with join sequence
// seq until deadline, issued at now. A nil Signer returns "".
func (s *Signer) Sign(eventID, user string, seq int64, now, deadline time.Time) (string, error) {
	if s == nil {
		return "", nil
	}
	t := jwt.NewWithClaims(signingMethod, Claims{EventID: eventID, Seq: seq,
		RegisteredClaims: jwt.RegisteredClaims{Issuer: s.issuer, Subject: user,
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(deadline)}})
	t.Header["kid"] = s.key.ID
	out, err := t.SignedString(s.key.Private)
	if err != nil {
		return "", fmt.Errorf("sign pass: %w", err)
	}
	return out, nil
}

// signingMethod is golang-jwt's EdDSA (alg "EdDSA", RFC 8037) whose
// Ed25519 signature is made by curve25519-voi instead of crypto/ed25519:
// the same deterministic signature (RFC 8032; TestSignaturesAreStdlibs)
// in less CPU (BenchmarkEdDSA; docs/benchmarks.md, "Signing the pass and
// the receipts": every batch of queued joins signs a receipt tree head,
// every poll in the room a pass).
// Verification stays golang-jwt's, on crypto/ed25519.
var signingMethod jwt.SigningMethod = voiEdDSA{}

type voiEdDSA struct{}

func (voiEdDSA) Alg() string { return jwt.SigningMethodEdDSA.Alg() }

func (voiEdDSA) Verify(signingString string, sig []byte, key any) error {
	return jwt.SigningMethodEdDSA.Verify(signingString, sig, key)
}

func (voiEdDSA) Sign(signingString string, key any) ([]byte, error) {
	k, ok := key.(ed25519.PrivateKey)
	if !ok || len(k) != ed25519.PrivateKeySize {
		return nil, jwt.ErrInvalidKeyType
	}
	// the same 64-byte layout (seed, then public key)
	return voi.Sign(voi.PrivateKey(k), []byte(signingString)), nil
}

// Errors of Verify.
var (
	ErrInvalid    = errors.New("pass: invalid")
	ErrWrongEvent = errors.New("pass: for another event")
)

// Verify is the documented validation (docs/admission-pass.md) against a
// JWKS document: header typ JWT (a receipt's tree head is refused), alg EdDSA only, a kid of the set, a valid signature, iss
// equal to issuer, exp in the future (at now, with no leeway), event_id
// equal to eventID, sub present. It returns the claims.
func Verify(jwks []byte, token, issuer, eventID string, now time.Time) (Claims, error) {
	var c Claims
	if issuer == "" {
		return Claims{}, fmt.Errorf("%w: no issuer to check", ErrInvalid)
	}
	if err := verify(jwks, token, issuer, passType, now, &c, jwt.WithExpirationRequired(), jwt.WithIssuedAt()); err != nil {
		return Claims{}, err
	}
	if c.Subject == "" {
		return Claims{}, fmt.Errorf("%w: no sub", ErrInvalid)
	}
	if c.EventID != eventID {
		return Claims{}, ErrWrongEvent
	}
	return c, nil
}
