package pass

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The queue ticket is what a join hands a waiting user: a JWT signed with
// the same keys as the pass (and verifiable against the same JWKS) that
// says this user joined this event with this join sequence at this time.
// A client computes its place and ETA from its seq against the event's
// progress document (GET /api/events/{id}/progress), so waiting costs no
// per-user read. A ticket admits nobody: its header typ is TicketType
// (RFC 8725 explicit typing) and it has no exp, so both Verify (which
// requires typ JWT) and any validator following docs/admission-pass.md
// (which requires exp) refuse it as a pass; VerifyTicket refuses a pass.

// TicketType is the header typ of a queue ticket.
const TicketType = "bo-queue-ticket+jwt"

// TicketClaims are a queue ticket's claims: iss, sub (the user),
// event_id, seq (the join sequence) and iat.
type TicketClaims struct {
	EventID string `json:"event_id"`
	Seq     int64  `json:"seq"`
	jwt.RegisteredClaims
}

// SignTicket returns the queue ticket of user's join of eventID with join
// sequence seq, issued at now. A nil Signer returns "".
func (s *Signer) SignTicket(eventID, user string, seq int64, now time.Time) (string, error) {
	if s == nil {
		return "", nil
	}
	t := jwt.NewWithClaims(signingMethod, TicketClaims{EventID: eventID, Seq: seq,
		RegisteredClaims: jwt.RegisteredClaims{Issuer: s.issuer, Subject: user, IssuedAt: jwt.NewNumericDate(now)}})
	t.Header["kid"] = s.key.ID
	t.Header["typ"] = TicketType
	out, err := t.SignedString(s.key.Private)
	if err != nil {
		return "", fmt.Errorf("sign queue ticket: %w", err)
	}
	return out, nil
}

// VerifyTicket checks a queue ticket against a JWKS document: header typ
// TicketType, alg EdDSA, a kid of the set, a valid signature, iss equal to
// issuer, iat not after now, event_id equal to eventID, sub present. An
// admission pass is refused (ErrInvalid).
func VerifyTicket(jwks []byte, token, issuer, eventID string, now time.Time) (TicketClaims, error) {
	var c TicketClaims
	if err := verify(jwks, token, issuer, TicketType, now, &c, jwt.WithIssuedAt()); err != nil {
		return TicketClaims{}, err
	}
	if c.Subject == "" {
		return TicketClaims{}, fmt.Errorf("%w: no sub", ErrInvalid)
	}
	if c.EventID != eventID {
		return TicketClaims{}, ErrWrongEvent
	}
	return c, nil
}
