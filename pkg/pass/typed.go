package pass

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/boxoffice/boxoffice/pkg/jsonobj"
)

// Other tokens signed with the pass's keys (a join receipt's signed tree
// head, pkg/receipt) are told apart from a pass by their header typ
// (RFC 8725 explicit typing) and carry no exp, so both Verify (which
// requires typ JWT) and any validator following docs/admission-pass.md
// (which requires exp) refuse them as a pass; VerifyTyped refuses a pass.

// passType is the header typ of an admission pass.
const passType = "JWT"

// Issuer is the iss the signer writes ("" for a nil Signer).
func (s *Signer) Issuer() string {
	if s == nil {
		return ""
	}
	return s.issuer
}

// KeyID is the kid of the signing key ("" for a nil Signer).
func (s *Signer) KeyID() string {
	if s == nil {
		return ""
	}
	return s.key.ID
}

// SignTyped signs claims with the current key as a JWT whose header typ
// is typ, which must not be the pass's ("JWT"). A nil Signer returns "".
func (s *Signer) SignTyped(typ string, claims jwt.Claims) (string, error) {
	if s == nil {
		return "", nil
	}
	if typ == passType || typ == "" {
		return "", fmt.Errorf("sign %q: not a pass's typ", typ)
	}
	t := jwt.NewWithClaims(signingMethod, claims)
	t.Header["kid"] = s.key.ID
	t.Header["typ"] = typ
	out, err := t.SignedString(s.key.Private)
	if err != nil {
		return "", fmt.Errorf("sign %s: %w", typ, err)
	}
	return out, nil
}

// SignTypedJSON is SignTyped for claims already encoded as a JSON
// object: the token SignTyped makes of claims that encoding/json writes
// as these bytes (TestSignTypedJSONIsSignTypeds), without the reflection
// of golang-jwt's encoding, for a caller that signs on a hot path (a
// join receipt's root, pkg/receipt). The caller vouches that claims is
// one JSON object.
func (s *Signer) SignTypedJSON(typ string, claims []byte) (string, error) {
	if s == nil {
		return "", nil
	}
	if typ == passType || typ == "" {
		return "", fmt.Errorf("sign %q: not a pass's typ", typ)
	}
	if len(s.key.Private) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("sign %s: %w", typ, jwt.ErrInvalidKeyType)
	}
	// the header as golang-jwt writes it: encoding/json's map, keys sorted
	h := jsonobj.New(make([]byte, 0, 64+len(s.key.ID)+len(typ)))
	h.Str("alg", signingMethod.Alg())
	h.Str("kid", s.key.ID)
	h.Str("typ", typ)
	header := h.Bytes()
	enc := base64.RawURLEncoding
	n := enc.EncodedLen(len(header)) + 1 + enc.EncodedLen(len(claims))
	b := make([]byte, 0, n+1+enc.EncodedLen(ed25519.SignatureSize))
	b = enc.AppendEncode(b, header)
	b = append(b, '.')
	b = enc.AppendEncode(b, claims)
	sig := voi.Sign(voi.PrivateKey(s.key.Private), b)
	b = append(b, '.')
	b = enc.AppendEncode(b, sig)
	return string(b), nil
}

// VerifyTyped checks a token signed by SignTyped against a JWKS document
// and parses its claims into claims: header typ typ, alg EdDSA, a kid of
// the set, a valid signature, and exp (if any) after now. The issuer is
// not checked (the key is what vouches). An admission pass is refused
// (ErrInvalid).
func VerifyTyped(jwks []byte, token, typ string, now time.Time, claims jwt.Claims) error {
	return verify(jwks, token, "", typ, now, claims)
}

// verify parses token into claims with the key of its kid in jwks,
// requiring alg EdDSA, the header typ typ and, unless issuer is "", iss
// issuer (plus opts).
func verify(jwks []byte, token, issuer, typ string, now time.Time, claims jwt.Claims, opts ...jwt.ParserOption) error {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(jwks, &set); err != nil {
		return fmt.Errorf("%w: key set: %v", ErrInvalid, err)
	}
	opts = append(opts, jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if issuer != "" {
		opts = append(opts, jwt.WithIssuer(issuer))
	}
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if got, _ := t.Header["typ"].(string); got != typ {
			return nil, fmt.Errorf("header typ %q, want %q", got, typ)
		}
		kid, _ := t.Header["kid"].(string)
		keys := set.Key(kid)
		if len(keys) == 0 {
			return nil, fmt.Errorf("unknown kid %q", kid)
		}
		return keys[0].Key, nil
	}, opts...)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}
