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
// same exp/nbf/iat rules with the same leeway and the same strict reading
// (strict.go), and is stricter about trailing bytes after the claims
// object.
//
// Why: every request verifies its token, a join's never seen before, and
// golang-jwt's parse was about a seventh of the gateway's CPU per join.
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
	if c.IssuedAt != nil && now.Before(c.IssuedAt.Add(-a.leeway)) {
		return claims{}, errIssued
	}
	return c, nil
}

// wireClaims is the claims payload as golang-jwt decodes it (the same
// fields, names and types, with encoding/json), except that the three
// times are *json.Number: *jwt.NumericDate's UnmarshalJSON runs a second
// json.Unmarshal for each time claim, a large part of the fast path's
// cost (BenchmarkVerifyNew). The pointers keep a null's meaning (absent,
// also after an earlier value under the same name), and decodeClaims
// turns each number into a time exactly as NumericDate does.
type wireClaims struct {
	Role    string           `json:"role,omitempty"`
	Channel string           `json:"channel,omitempty"`
	Iss     string           `json:"iss,omitempty"`
	Sub     string           `json:"sub,omitempty"`
	Aud     jwt.ClaimStrings `json:"aud,omitempty"`
	Exp     *json.Number     `json:"exp,omitempty"`
	Nbf     *json.Number     `json:"nbf,omitempty"`
	Iat     *json.Number     `json:"iat,omitempty"`
	Jti     string           `json:"jti,omitempty"`
}

// decodeClaims decodes a payload into claims; an error where golang-jwt's
// decoding of claims fails. The compact form every common issuer writes
// is read by compactClaims; anything else by encoding/json.
func decodeClaims(raw []byte) (claims, error) {
	if c, ok := compactClaims(raw); ok {
		return c, nil
	}
	return jsonClaims(raw)
}

// jsonClaims decodes any payload with encoding/json, as golang-jwt does,
// after checkMembers as claims.UnmarshalJSON does.
func jsonClaims(raw []byte) (claims, error) {
	if err := checkMembers(raw, true); err != nil {
		return claims{}, err
	}
	var w wireClaims
	if err := json.Unmarshal(raw, &w); err != nil {
		return claims{}, err
	}
	c := claims{Role: w.Role, Channel: w.Channel, RegisteredClaims: jwt.RegisteredClaims{Issuer: w.Iss, Subject: w.Sub, Audience: w.Aud, ID: w.Jti}}
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

// compactClaims reads a payload written the way Issue and most issuers
// write one, and reports false for anything else, which decodeClaims then
// gives to encoding/json: no whitespace; each key at most once and spelled
// exactly as a claim this package reads (role, channel, iss, sub, jti, exp, nbf,
// iat; not aud); strings of printable ASCII with no escapes; times as
// integers of at most 15 digits. On that subset encoding/json would
// decode the same claims (FuzzCompactClaimsAgree). Why: encoding/json was
// most of the cost of verifying a new token, which every join does
// (BenchmarkVerifyNew; docs/benchmarks.md "HS256 fast path").
func compactClaims(raw []byte) (claims, bool) {
	var c claims
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return c, false
	}
	var seen uint8
	i := 1
	for i < len(raw)-1 {
		if i > 1 {
			if raw[i] != ',' {
				return c, false
			}
			i++
		}
		key, n := compactString(raw[i:])
		if n == 0 || i+n >= len(raw) || raw[i+n] != ':' {
			return c, false
		}
		i += n + 1
		var bit uint8
		var str *string
		var date **jwt.NumericDate
		switch key {
		case "role":
			bit, str = 1, &c.Role
		case "iss":
			bit, str = 2, &c.Issuer
		case "sub":
			bit, str = 4, &c.Subject
		case "jti":
			bit, str = 8, &c.ID
		case "exp":
			bit, date = 16, &c.ExpiresAt
		case "nbf":
			bit, date = 32, &c.NotBefore
		case "iat":
			bit, date = 64, &c.IssuedAt
		case "channel":
			bit, str = 128, &c.Channel
		default:
			return c, false
		}
		if seen&bit != 0 {
			return c, false
		}
		seen |= bit
		if str != nil {
			if *str, n = compactString(raw[i:]); n == 0 {
				return c, false
			}
		} else {
			var secs int64
			if secs, n = compactInt(raw[i:]); n == 0 {
				return c, false
			}
			*date = jwt.NewNumericDate(time.Unix(secs, 0))
		}
		i += n
	}
	return c, i == len(raw)-1
}

// compactString reads a JSON string of printable ASCII without escapes at
// the start of b: its text and its length with the quotes (0: not one).
func compactString(b []byte) (string, int) {
	if len(b) < 2 || b[0] != '"' {
		return "", 0
	}
	for j := 1; j < len(b); j++ {
		switch ch := b[j]; {
		case ch == '"':
			return string(b[1:j]), j + 1
		case ch < 0x20 || ch > 0x7e || ch == '\\':
			return "", 0
		}
	}
	return "", 0
}

// compactInt reads a JSON integer of at most 15 digits (exact as a
// float64, as encoding/json and NumericDate go through one) at the start
// of b: its value and its length (0: not one, or followed by a fraction or
// exponent).
func compactInt(b []byte) (int64, int) {
	j, neg := 0, false
	if j < len(b) && b[j] == '-' {
		j, neg = 1, true
	}
	start := j
	var v int64
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		v = v*10 + int64(b[j]-'0')
		j++
	}
	digits := j - start
	if digits == 0 || digits > 15 || (digits > 1 && b[start] == '0') {
		return 0, 0
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, 0
	}
	if neg {
		v = -v
	}
	return v, j
}
