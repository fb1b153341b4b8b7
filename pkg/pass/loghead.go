package pass

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A signed head of an event's admission log (docs/fairness.md): the same
// key and key set as the pass and the join receipts, header typ LogHeadType, so
// neither can be taken for the other. It says: at iat, the event's log had
// size entries and its last entry's hash was head.

// LogHeadType is the header typ of a signed admission-log head.
const LogHeadType = "bo-log-head+jwt"

// LogHeadClaims are a signed head's claims: iss, event_id, size (entries
// in the log), head (hex SHA-256 chain hash of entry size) and iat.
type LogHeadClaims struct {
	EventID string `json:"event_id"`
	Size    int64  `json:"size"`
	Head    string `json:"head"`
	jwt.RegisteredClaims
}

// SignLogHead returns the signed head of eventID's admission log with
// size entries ending in hash head, at now. A nil Signer returns "".
func (s *Signer) SignLogHead(eventID string, size int64, head string, now time.Time) (string, error) {
	if s == nil {
		return "", nil
	}
	t := jwt.NewWithClaims(signingMethod, LogHeadClaims{EventID: eventID, Size: size, Head: head,
		RegisteredClaims: jwt.RegisteredClaims{Issuer: s.issuer, IssuedAt: jwt.NewNumericDate(now)}})
	t.Header["kid"] = s.key.ID
	t.Header["typ"] = LogHeadType
	out, err := t.SignedString(s.key.Private)
	if err != nil {
		return "", fmt.Errorf("sign log head: %w", err)
	}
	return out, nil
}

// VerifyLogHead checks a signed head against a JWKS document: header typ
// LogHeadType, alg EdDSA, a kid of the set, a valid signature, iss equal
// to issuer, iat not after now, event_id equal to eventID.
func VerifyLogHead(jwks []byte, token, issuer, eventID string, now time.Time) (LogHeadClaims, error) {
	var c LogHeadClaims
	if err := verify(jwks, token, issuer, LogHeadType, now, &c, jwt.WithIssuedAt()); err != nil {
		return LogHeadClaims{}, err
	}
	if c.EventID != eventID {
		return LogHeadClaims{}, ErrWrongEvent
	}
	return c, nil
}
