package pass

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestSignaturesAreStdlibs: the signing method makes crypto/ed25519's
// signature (Ed25519 is deterministic), so a pass or typed token is the very
// token golang-jwt's own EdDSA would make, for keys and messages of every
// length; and it refuses a key that is not an Ed25519 private key.
func TestSignaturesAreStdlibs(t *testing.T) {
	for i := range 50 {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, i*37)
		if _, err := rand.Read(msg); err != nil {
			t.Fatal(err)
		}
		got, err := signingMethod.Sign(string(msg), priv)
		if err != nil {
			t.Fatal(err)
		}
		if want := ed25519.Sign(priv, msg); string(got) != string(want) {
			t.Fatalf("message of %d bytes: signature %x, crypto/ed25519's %x", len(msg), got, want)
		}
		if err := jwt.SigningMethodEdDSA.Verify(string(msg), got, priv.Public()); err != nil {
			t.Fatalf("golang-jwt does not verify it: %v", err)
		}
	}
	keys, err := ParseKeys([]string{"k1:" + strings.Repeat("A", 43)})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSigner(keys, "bo")
	now := time.Unix(1_800_000_000, 0)
	claims := Claims{EventID: "e1", Seq: 7, RegisteredClaims: jwt.RegisteredClaims{Issuer: "bo", Subject: "alice", IssuedAt: jwt.NewNumericDate(now)}}
	std := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	std.Header["kid"], std.Header["typ"] = "k1", "bo-test+jwt"
	want, err := std.SignedString(keys[0].Private)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.SignTyped("bo-test+jwt", claims); err != nil || got != want {
		t.Fatalf("token %q, %v; golang-jwt's EdDSA makes %q", got, err, want)
	}
	for _, bad := range []any{"a string", []byte("short"), ed25519.PrivateKey(make([]byte, 10)), keys[0].Private.Public()} {
		if _, err := signingMethod.Sign("x", bad); !errors.Is(err, jwt.ErrInvalidKeyType) {
			t.Fatalf("Sign with %T: %v, want ErrInvalidKeyType", bad, err)
		}
	}
}

// BenchmarkEdDSA: one signature of a receipt tree head's signing input, by
// crypto/ed25519 (golang-jwt's EdDSA) and by the signing method the
// signer uses (curve25519-voi).
func BenchmarkEdDSA(b *testing.B) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	input := strings.Repeat("x", 190) // a tree head's header.claims
	for _, m := range []struct {
		name string
		m    jwt.SigningMethod
	}{{"stdlib", jwt.SigningMethodEdDSA}, {"voi", signingMethod}} {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.m.Sign(input, priv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
