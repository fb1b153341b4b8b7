package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// canonicalHeader is the base64url of {"alg":"HS256","typ":"JWT"}: the
// header of every token Issue makes, and of most HS256 libraries' tokens.
const canonicalHeader = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"

var (
	errMalformed = errors.New("token is malformed")
	errSignature = errors.New("signature is invalid")
	errExpired   = errors.New("token is expired")
	errNoExp     = errors.New("token has no exp claim")
	errNotYet    = errors.New("token is not valid yet")
)

// parse verifies a token and returns its claims. A token with the
// canonical header takes a fast path: no header decoding (the header is
// known to say HS256), a pooled HMAC keyed once, and the signature checked
// before the claims are decoded. Any other header goes through golang-jwt
// (parseJWT). The fast path never accepts what golang-jwt rejects
// (FuzzParseAgreesWithJWT): it decodes the same claims type, applies the
// same exp/nbf rules with the same leeway, and is stricter about trailing
// bytes after the claims object.
//
// Why: a join verifies a token never seen before (the cache cannot help),
// and golang-jwt's parse was about a seventh of the gateway's CPU per join.
func (a *Authority) parse(token string) (claims, error) {
	head, rest, ok := strings.Cut(token, ".")
	if !ok || head != canonicalHeader {
		return a.parseJWT(token)
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || strings.IndexByte(sig, '.') >= 0 {
		return claims{}, errMalformed
	}
	var sigBuf, sumBuf [sha256.Size]byte
	if base64.RawURLEncoding.DecodedLen(len(sig)) != sha256.Size {
		return claims{}, errSignature
	}
	if n, err := base64.RawURLEncoding.Decode(sigBuf[:], []byte(sig)); err != nil || n != sha256.Size {
		return claims{}, errSignature
	}
	mac, _ := a.macs.Get().(hash.Hash)
	if mac == nil {
		mac = hmac.New(sha256.New, a.secret)
	}
	mac.Reset()
	_, _ = io.WriteString(mac, token[:len(head)+1+len(payload)])
	sum := mac.Sum(sumBuf[:0])
	a.macs.Put(mac)
	if !hmac.Equal(sum, sigBuf[:]) {
		return claims{}, errSignature
	}

	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return claims{}, errMalformed
	}
	c, err := decodeClaims(raw)
	if err != nil {
		return claims{}, errMalformed
	}
	now := a.now()
	if c.ExpiresAt == nil {
		return claims{}, errNoExp
	}
	if !now.Before(c.ExpiresAt.Add(a.leeway)) {
		return claims{}, errExpired
	}
	if c.NotBefore != nil && now.Add(a.leeway).Before(c.NotBefore.Time) {
		return claims{}, errNotYet
	}
	return c, nil
}

// wireClaims is the claims payload as golang-jwt decodes it (the same
// fields, names and types, with encoding/json), except that the three
// times are *json.Number: *jwt.NumericDate's UnmarshalJSON runs a second
// json.Unmarshal for each time claim, which was half of the fast path's
// cost (BenchmarkVerifyNew). The pointers keep a null's meaning (absent,
// also after an earlier value under the same name), and decodeClaims
// turns each number into a time exactly as NumericDate does.
type wireClaims struct {
	Role string           `json:"role,omitempty"`
	Iss  string           `json:"iss,omitempty"`
	Sub  string           `json:"sub,omitempty"`
	Aud  jwt.ClaimStrings `json:"aud,omitempty"`
	Exp  *json.Number     `json:"exp,omitempty"`
	Nbf  *json.Number     `json:"nbf,omitempty"`
	Iat  *json.Number     `json:"iat,omitempty"`
	Jti  string           `json:"jti,omitempty"`
}

// decodeClaims decodes a payload into claims; an error where golang-jwt's
// decoding of claims fails.
func decodeClaims(raw []byte) (claims, error) {
	var w wireClaims
	if err := json.Unmarshal(raw, &w); err != nil {
		return claims{}, err
	}
	c := claims{Role: w.Role, RegisteredClaims: jwt.RegisteredClaims{Issuer: w.Iss, Subject: w.Sub, Audience: w.Aud, ID: w.Jti}}
	for _, t := range []struct {
		n   *json.Number
		dst **jwt.NumericDate
	}{{w.Exp, &c.ExpiresAt}, {w.Nbf, &c.NotBefore}, {w.Iat, &c.IssuedAt}} {
		if t.n == nil {
			continue
		}
		f, err := strconv.ParseFloat(string(*t.n), 64)
		if err != nil {
			return claims{}, err
		}
		// as jwt.NumericDate.UnmarshalJSON (newNumericDateFromSeconds)
		round, frac := math.Modf(f)
		*t.dst = jwt.NewNumericDate(time.Unix(int64(round), int64(frac*1e9)))
	}
	return c, nil
}
