package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sign makes a token with the canonical header over any payload bytes,
// signed with key: tokens golang-jwt would never produce, for the fuzzer.
func sign(key []byte, payload string) string {
	s := canonicalHeader + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return s + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signWith makes a token with any header and payload bytes.
func signWith(key []byte, header, payload string) string {
	s := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return s + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// A token is read strictly, by both parsers: the time claims are JSON
// numbers, it was not issued in the future, no member of the header or
// the claims is there twice (in any case: encoding/json matches names
// case-insensitively), and a header with "crit" (an extension that must
// be understood, RFC 7515 4.1.11; boxoffice understands none) is
// refused. Each is signed with the right key, so only the rule refuses it.
func TestTokensAreReadStrictly(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a, _ := New(secret)
	a = a.WithClock(func() time.Time { return now })
	const otherHeader = `{"typ":"JWT","alg":"HS256"}` // not canonical: golang-jwt
	for _, tc := range []struct{ name, header, payload string }{
		{"exp a string", "", `{"sub":"alice","exp":"1800000100"}`},
		{"nbf a string", "", `{"sub":"alice","exp":1800000100,"nbf":"1"}`},
		{"exp null", "", `{"sub":"alice","exp":1800000100,"exp":null}`},
		{"iat an hour ahead", "", `{"sub":"alice","exp":1800007200,"iat":1800003600}`},
		{"iat a string", "", `{"sub":"alice","exp":1800000100,"iat":"1"}`},
		{"sub twice", "", `{"sub":"alice","exp":1800000100,"sub":"admin"}`},
		{"sub twice in another case", "", `{"sub":"alice","exp":1800000100,"SUB":"admin"}`},
		{"role twice", "", `{"sub":"alice","role":"","exp":1800000100,"role":"admin"}`},
		{"unknown crit", `{"alg":"HS256","typ":"JWT","crit":["exp2"],"exp2":1}`, `{"sub":"alice","exp":1800000100}`},
		{"empty crit", `{"alg":"HS256","crit":[]}`, `{"sub":"alice","exp":1800000100}`},
		{"alg twice", `{"alg":"none","alg":"HS256"}`, `{"sub":"alice","exp":1800000100}`},
	} {
		headers := []string{tc.header}
		if tc.header == "" {
			headers = []string{`{"alg":"HS256","typ":"JWT"}`, otherHeader} // fast path, golang-jwt
		}
		for _, h := range headers {
			tok := signWith(secret, h, tc.payload)
			if _, err := a.parse(tok); err == nil {
				t.Errorf("%s: parse accepted %s.%s", tc.name, h, tc.payload)
			}
			if _, err := a.parseJWT(tok); err == nil {
				t.Errorf("%s: golang-jwt's parse accepted %s.%s", tc.name, h, tc.payload)
			}
		}
	}
	// what stays accepted: iat now or within the leeway, numbers as
	// numbers, a header without crit, by both parsers
	for _, payload := range []string{
		`{"sub":"alice","exp":1800000100,"iat":1800000004}`,
		`{"sub":"alice","exp":1800000100,"iat":1799990000,"nbf":1799990000}`,
		`{"sub":"alice","exp":1.8000001e9}`,
		`{"exp":1800000100, "sub":"alice", "x":{"sub":"y"}}`,
	} {
		for _, h := range []string{`{"alg":"HS256","typ":"JWT"}`, otherHeader} {
			tok := signWith(secret, h, payload)
			if _, err := a.parse(tok); err != nil {
				t.Errorf("parse refused %s.%s: %v", h, payload, err)
			}
			if _, err := a.parseJWT(tok); err != nil {
				t.Errorf("golang-jwt's parse refused %s.%s: %v", h, payload, err)
			}
		}
	}
}

// FuzzParseAgreesWithJWT: the fast path never accepts a token golang-jwt
// rejects, and when both accept they read the same claims; neither
// accepts what the strict reading refuses (a member twice, a time claim
// not a number, iat in the future, "crit"). Each input is checked twice:
// as a header and claims payload signed with the right key (the header ""
// is the canonical one, so the fast path's rules are reached) and the
// payload as a whole token (malformed and forged tokens).
func FuzzParseAgreesWithJWT(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	a, _ := New(secret)
	a = a.WithClock(func() time.Time { return now })
	for _, p := range []string{
		`{"sub":"alice","exp":1800000100}`,
		`{"sub":"alice","exp":1800000100,"role":"admin","nbf":1800000003}`,
		`{"sub":"alice","exp":1799999996}`,    // expired, within the leeway
		`{"sub":"alice","exp":1799999990}`,    // expired
		`{"sub":"alice","exp":"1800000100"}`,  // exp as a string
		`{"sub":"alice","exp":1800000100.9}`,  // fractional
		`{"sub":"alice","exp":1800000100} xx`, // trailing bytes
		`{"sub":"alice","exp":1800000100,"aud":5}`,
		`{"sub":"alice","exp":1800000100,"iat":"x"}`,
		`{"sub":"alice","exp":1800000100,"iat":1800003600}`, // issued an hour ahead
		`{"sub":"alice","exp":1800000100,"iat":1800000004}`, // within the leeway
		`{"sub":"alice","nbf":1800000100,"exp":1900000000}`,
		`{"SUB":"alice","EXP":1800000100}`,
		`{"sub":"alice","exp":1800000100,"sub":"admin"}`, // sub twice
		`{"sub":"alice","exp":1800000100,"Sub":"admin"}`,
		`{"sub":"alice","exp":1800000100,"exp":null}`,
		`{"sub":"alice","exp":null,"exp":1800000100}`,
		`{"sub":"alice","exp":1e400}`, // out of range
		`{"sub":"alice","exp":1800000100,"nbf":-1.5}`,
		`{"sub":"alice","exp":1800000100,"aud":["a","b"],"iss":"x","jti":"j","iat":1}`,
		`{"sub":"alice","exp":1800000100,"aud":null,"iat":null}`,
		`null`, `[]`, `{}`, ``,
	} {
		f.Add("", p)
		f.Add(`{"typ":"JWT","alg":"HS256"}`, p) // golang-jwt's path
	}
	for _, h := range []string{
		`{"alg":"HS256","typ":"JWT","crit":["exp2"],"exp2":1}`,
		`{"alg":"HS256","crit":[]}`,
		`{"alg":"none","alg":"HS256"}`,
		`{"alg":"HS256","typ":"JWT","typ":"JWT"}`,
		`{"alg":"HS256"}`,
	} {
		f.Add(h, `{"sub":"alice","exp":1800000100}`)
	}
	good, _ := a.Issue("bob", RoleAdmin, time.Hour)
	f.Add("", good)
	f.Add("", good[:len(good)-3]+"abc")
	f.Add("", good+".x")
	f.Add("", canonicalHeader+".."+good[len(good)-43:])
	f.Fuzz(func(t *testing.T, header, in string) {
		signed := sign(secret, in)
		if header != "" {
			signed = signWith(secret, header, in)
		}
		for _, tok := range []string{signed, in} {
			fast, ferr := a.parse(tok)
			slow, serr := a.parseJWT(tok)
			if ferr == nil && serr != nil {
				t.Fatalf("fast path accepted what golang-jwt rejects (%v): %q", serr, tok)
			}
			if ferr == nil && (fast.Subject != slow.Subject || fast.Role != slow.Role ||
				!fast.ExpiresAt.Equal(slow.ExpiresAt.Time)) {
				t.Fatalf("claims differ: fast %+v, golang-jwt %+v", fast, slow)
			}
			if serr == nil {
				if why := lax(tok, now.Add(5*time.Second)); why != "" {
					t.Fatalf("golang-jwt's parse accepted a token with %s: %q", why, tok)
				}
			}
		}
	})
}

// lax says what the strict reading refuses in an accepted token, found
// independently of strict.go: a member twice (names lower-cased), a time
// claim that is not a number, iat after latest, a "crit" header.
func lax(tok string, latest time.Time) string {
	parts := strings.Split(tok, ".")
	for i, part := range parts[:2] {
		raw, _ := base64.RawURLEncoding.DecodeString(part)
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		names := map[string]bool{}
		if _, err := dec.Token(); err != nil {
			return "no object"
		}
		for dec.More() {
			name, _ := dec.Token()
			n := strings.ToLower(name.(string))
			if names[n] {
				return "a member twice"
			}
			names[n] = true
			var v any
			_ = dec.Decode(&v)
			if i == 0 && n == "crit" {
				return "crit"
			}
			if _, isNum := v.(float64); i == 1 && (n == "exp" || n == "nbf" || n == "iat") && !isNum {
				return "a time claim not a number"
			}
			if f, _ := v.(float64); i == 1 && n == "iat" && f > float64(latest.Unix()) {
				return "iat in the future"
			}
		}
	}
	return ""
}

// TestParseFastPathAccepts: the tokens Issue makes take the fast path and
// are accepted with their claims; the rules match golang-jwt's on the
// fuzz seeds both ways where the bytes are well-formed.
func TestParseFastPathAccepts(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a, _ := New(secret)
	a = a.WithClock(func() time.Time { return now })
	tok, _ := a.Issue("carol", RoleAdmin, time.Hour)
	if tok[:len(canonicalHeader)] != canonicalHeader {
		t.Fatalf("Issue's header is not the canonical one: %s", tok)
	}
	c, err := a.parse(tok)
	if err != nil || c.Subject != "carol" || c.Role != RoleAdmin {
		t.Fatalf("parse = %+v, %v", c, err)
	}
	for payload, ok := range map[string]bool{
		`{"sub":"a","exp":1800000100}`:                  true,
		`{"sub":"a","exp":1799999996}`:                  true, // within the 5s leeway
		`{"sub":"a","exp":1799999995}`:                  false,
		`{"sub":"a"}`:                                   false,
		`{"sub":"a","exp":1800000100,"nbf":1800000004}`: true,
		`{"sub":"a","exp":1800000100,"nbf":1800000006}`: false,
		`{"sub":"a","exp":1800000100,"aud":5}`:          false,
		`{"sub":"a","exp":1800000100} trailing`:         false,
		`{"sub":"a","exp":1800000100,"role":"admin"}`:   true,
		`{"sub":"a","exp":"soon"}`:                      false,
	} {
		_, ferr := a.parse(sign(secret, payload))
		_, serr := a.parseJWT(sign(secret, payload))
		if (ferr == nil) != ok {
			t.Errorf("%s: fast path error %v, want ok=%v", payload, ferr, ok)
		}
		if ferr == nil && serr != nil {
			t.Errorf("%s: golang-jwt rejects (%v) what the fast path accepts", payload, serr)
		}
	}
	if _, err := a.parse(sign([]byte("another-secret-of-32-bytes-xxxxx"), `{"sub":"a","exp":1800000100}`)); err == nil {
		t.Error("wrong key accepted")
	}
}

// BenchmarkVerifyNew: verifying tokens never seen before (a join), the
// fast path against golang-jwt's parse.
func BenchmarkVerifyNew(b *testing.B) {
	a, _ := New(secret)
	toks := make([]string, 4096)
	for i := range toks {
		toks[i], _ = a.Issue(fmt.Sprintf("user-%d", i), "", time.Hour)
	}
	b.Run("fast", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := a.parse(toks[i%len(toks)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("golang-jwt", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := a.parseJWT(toks[i%len(toks)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzCompactClaimsAgree: whatever payload compactClaims reads,
// encoding/json reads too, into the same claims.
func FuzzCompactClaimsAgree(f *testing.F) {
	for _, p := range []string{
		`{"sub":"alice","exp":1800000100}`,
		`{"role":"admin","sub":"user-42","iat":1800000000,"exp":1800003600}`,
		`{"iss":"x","jti":"j","nbf":-15,"exp":0,"sub":"a/b"}`,
		`{"sub":"a","exp":-0}`, `{}`, `{"sub":"a",}`, `{"sub":"a""exp":1}`,
		`{"sub":"a","exp":01}`, `{"sub":"a","exp":1.5}`, `{"sub":"a","exp":1e3}`,
		`{"sub":"a","sub":"b"}`, `{"Sub":"a"}`, `{"sub":"a\u0062"}`, `{"sub":"é"}`,
		`{"sub":"a","exp":999999999999999}`, `{"sub":"a","exp":9999999999999999}`,
		`{"sub":"a","aud":"x"}`, `{"sub":null}`, `{"sub":"a"} `, ` {"sub":"a"}`,
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fast, ok := compactClaims([]byte(in))
		if !ok {
			return
		}
		slow, err := jsonClaims([]byte(in))
		if err != nil {
			t.Fatalf("compactClaims read what encoding/json rejects (%v): %q", err, in)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("claims differ for %q:\ncompact %+v\njson    %+v", in, fast, slow)
		}
	})
}

// TestCompactClaimsReadsIssuedTokens: the payloads Issue writes take the
// compact reader (so a join's verification does not fall back to
// encoding/json), and a payload outside its subset is left to it.
func TestCompactClaimsReadsIssuedTokens(t *testing.T) {
	a, _ := New(secret)
	for _, role := range []string{"", RoleAdmin} {
		tok, _ := a.Issue("user-7", role, time.Hour)
		payload := strings.Split(tok, ".")[1]
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := compactClaims(raw)
		if !ok || c.Subject != "user-7" || c.Role != role || c.ExpiresAt == nil || c.IssuedAt == nil {
			t.Fatalf("compactClaims(%s) = %+v, %v", raw, c, ok)
		}
	}
	for _, p := range []string{`{"sub":"a","exp":1.5}`, `{"sub":"a", "exp":1}`, `{"sub":"a","aud":["x"]}`, `{"sub":"a","sub":"b"}`} {
		if _, ok := compactClaims([]byte(p)); ok {
			t.Errorf("compactClaims read %s", p)
		}
	}
}
