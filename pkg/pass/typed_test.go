package pass_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/boxoffice/boxoffice/pkg/pass"
)

type headClaims struct {
	EventID string `json:"event_id"`
	jwt.RegisteredClaims
}

// A token of another typ verifies as that typ against the same JWKS as
// the pass, and is never taken for an admission pass (nor a pass for it).
func TestTypedIsNeverAPass(t *testing.T) {
	keys, err := pass.ParseKeys([]string{"k1:" + seed(t)})
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := keys.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	s := pass.NewSigner(keys, "bo")
	now := time.Unix(1_800_000_000, 0)
	const typ = "bo-test+jwt"
	typed, err := s.SignTyped(typ, headClaims{EventID: "e1",
		RegisteredClaims: jwt.RegisteredClaims{Issuer: s.Issuer(), Subject: "alice", IssuedAt: jwt.NewNumericDate(now)}})
	if err != nil {
		t.Fatal(err)
	}
	admission, err := s.Sign("e1", "alice", 42, now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var c headClaims
	if err := pass.VerifyTyped(jwks, typed, typ, now, &c); err != nil {
		t.Fatalf("VerifyTyped: %v", err)
	}
	if c.Subject != "alice" || c.EventID != "e1" || c.Issuer != "bo" || !c.IssuedAt.Time.Equal(now) {
		t.Fatalf("claims %+v", c)
	}
	if _, err := pass.Verify(jwks, typed, "bo", "e1", now.Add(time.Minute)); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("Verify(typed) = %v, want ErrInvalid", err)
	}
	if _, err := pass.Verify(jwks, admission, "", "e1", now.Add(time.Minute)); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("Verify without an issuer = %v, want ErrInvalid", err)
	}
	for name, tc := range map[string]struct{ token, typ string }{
		"a pass":       {admission, typ},
		"another typ":  {typed, "bo-other+jwt"},
		"tampered":     {typed[:len(typed)-4] + "AAAA", typ},
		"not a token":  {"x.y.z", typ},
		"unknown kid":  {mustSign(t, "k9", typ), typ},
		"no signature": {typed[:len(typed)-86], typ},
	} {
		if err := pass.VerifyTyped(jwks, tc.token, tc.typ, now, &headClaims{}); !errors.Is(err, pass.ErrInvalid) {
			t.Errorf("%s: VerifyTyped = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := s.SignTyped("JWT", headClaims{}); err == nil {
		t.Fatal("SignTyped signed a pass's typ")
	}
	var none *pass.Signer
	if tk, err := none.SignTyped(typ, headClaims{}); tk != "" || err != nil || none.Issuer() != "" || none.KeyID() != "" {
		t.Fatalf("nil signer: %q, %v", tk, err)
	}
}

// mustSign signs a typed token with a key kid that the test's JWKS does
// not hold.
func mustSign(t *testing.T, kid, typ string) string {
	keys, err := pass.ParseKeys([]string{kid + ":" + seed(t)})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := pass.NewSigner(keys, "bo").SignTyped(typ, headClaims{EventID: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// SignTypedJSON makes the very token SignTyped makes of the claims that
// encode to its bytes (Ed25519 is deterministic), whatever the kid and
// typ hold, and refuses what SignTyped refuses.
func TestSignTypedJSONIsSignTypeds(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, kid := range []string{"k1", `k<"2">&\`, "ключ"} {
		keys, err := pass.ParseKeys([]string{kid + ":" + seed(t)})
		if err != nil {
			t.Fatal(err)
		}
		s := pass.NewSigner(keys, "bo")
		for _, typ := range []string{"bo-receipt-root+jwt", "a<b>+jwt"} {
			for _, c := range []headClaims{{}, {EventID: "e1", RegisteredClaims: jwt.RegisteredClaims{Issuer: "https://bo/<x>", IssuedAt: jwt.NewNumericDate(now)}}} {
				want, err := s.SignTyped(typ, c)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := json.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.SignTypedJSON(typ, raw)
				if err != nil || got != want {
					t.Fatalf("kid %q typ %q: SignTypedJSON = %q, %v; SignTyped %q", kid, typ, got, err, want)
				}
			}
		}
		if _, err := s.SignTypedJSON("JWT", []byte("{}")); err == nil {
			t.Fatal("SignTypedJSON signed a pass's typ")
		}
	}
	var none *pass.Signer
	if tk, err := none.SignTypedJSON("bo-test+jwt", []byte("{}")); tk != "" || err != nil {
		t.Fatalf("nil signer: %q, %v", tk, err)
	}
}
