package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
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

// FuzzParseAgreesWithJWT: the fast path never accepts a token golang-jwt
// rejects, and when both accept they read the same claims. Each input is
// checked twice: as a claims payload signed with the right key (so the
// claim rules are reached) and as a whole token (malformed and forged
// tokens).
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
		`{"sub":"alice","nbf":1800000100,"exp":1900000000}`,
		`{"SUB":"alice","EXP":1800000100}`,
		`{"sub":"alice","exp":1800000100,"exp":null}`, // a null after a value: absent
		`{"sub":"alice","exp":null,"exp":1800000100}`,
		`{"sub":"alice","exp":1e400}`, // out of range
		`{"sub":"alice","exp":1800000100,"nbf":-1.5}`,
		`{"sub":"alice","exp":1800000100,"aud":["a","b"],"iss":"x","jti":"j","iat":1}`,
		`{"sub":"alice","exp":1800000100,"aud":null,"iat":null}`,
		`null`, `[]`, `{}`, ``,
	} {
		f.Add(p)
	}
	good, _ := a.Issue("bob", RoleAdmin, time.Hour)
	f.Add(good)
	f.Add(good[:len(good)-3] + "abc")
	f.Add(good + ".x")
	f.Add(canonicalHeader + ".." + good[len(good)-43:])
	f.Fuzz(func(t *testing.T, in string) {
		for _, tok := range []string{sign(secret, in), in} {
			fast, ferr := a.parse(tok)
			slow, serr := a.parseJWT(tok)
			if ferr == nil && serr != nil {
				t.Fatalf("fast path accepted what golang-jwt rejects (%v): %q", serr, tok)
			}
			if ferr == nil && (fast.Subject != slow.Subject || fast.Role != slow.Role ||
				!fast.ExpiresAt.Equal(slow.ExpiresAt.Time)) {
				t.Fatalf("claims differ: fast %+v, golang-jwt %+v", fast, slow)
			}
		}
	})
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
