package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Tokens are read strictly, on the fast path and through golang-jwt
// alike (TestTokensAreReadStrictly): a header or claims member given twice
// is refused rather than the last one winning (a "sub" smuggled in after
// the one a reviewer reads; encoding/json matches names
// case-insensitively, so "SUB" counts as "sub"); exp, nbf and iat must be
// JSON numbers (encoding/json reads "1800000000", a string, into the
// json.Number golang-jwt uses); a token issued in the future is refused;
// and so is a header with "crit", the extensions a recipient must
// understand (RFC 7515 section 4.1.11), since boxoffice understands none.

var (
	errDuplicate = errors.New("a member is given twice")
	errTimeType  = errors.New("exp, nbf and iat must be JSON numbers")
	errCrit      = errors.New(`the header has "crit": no extension is understood`)
	errIssued    = errors.New("token is issued in the future")
)

// timeClaims are the names of exp, nbf and iat as foldName folds them.
var timeClaims = map[string]bool{foldName("exp"): true, foldName("nbf"): true, foldName("iat"): true}

// checkMembers checks that raw holds one JSON object in which no member
// name is given twice, names compared as encoding/json matches them to
// fields (bytes.EqualFold), and, with times, that exp, nbf and iat are
// numbers.
func checkMembers(raw []byte, times bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return err
	} else if tok != json.Delim('{') {
		return fmt.Errorf("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := foldName(tok.(string)) // a member name: the decoder checked
		if seen[name] {
			return fmt.Errorf("%w: %q", errDuplicate, tok)
		}
		seen[name] = true
		if times && timeClaims[name] {
			v, err := dec.Token()
			if err != nil {
				return err
			}
			if _, ok := v.(json.Number); !ok {
				return errTimeType
			}
			continue
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// foldName maps each rune of s to the smallest of its case-folding orbit
// (unicode.SimpleFold), so that foldName(a) == foldName(b) exactly when
// bytes.EqualFold(a, b): "SUB", "sub" and "ſub" (long s) are one name.
func foldName(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}

// UnmarshalJSON decodes claims after checkMembers, so that golang-jwt's
// parse (parseJWT), which decodes into *claims, reads them as strictly
// as the fast path.
func (c *claims) UnmarshalJSON(b []byte) error {
	if err := checkMembers(b, true); err != nil {
		return err
	}
	type plain claims // the same fields, without this method
	return json.Unmarshal(b, (*plain)(c))
}
