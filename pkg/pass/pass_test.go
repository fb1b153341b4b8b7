package pass_test

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/boxoffice/boxoffice/pkg/pass"
)

func seed(t testing.TB) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestPassRotationAndValidation(t *testing.T) {
	old, cur := "k1:"+seed(t), "k2:"+seed(t)
	before, err := pass.ParseKeys([]string{old})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	deadline := now.Add(10 * time.Minute)
	oldPass, err := pass.NewSigner(before, "https://gw.test").Sign("e1", "alice", 7, now, deadline)
	if err != nil {
		t.Fatal(err)
	}
	// rotated: k2 signs, k1 is still published
	after, err := pass.ParseKeys([]string{cur, old})
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := after.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	newPass, _ := pass.NewSigner(after, "https://gw.test").Sign("e1", "bob", 8, now, deadline)
	for _, tc := range []struct {
		name, token, event string
		at                 time.Time
		want               error
	}{
		{"current key", newPass, "e1", now.Add(time.Minute), nil},
		{"previous key", oldPass, "e1", now.Add(time.Minute), nil},
		{"another event", newPass, "e2", now.Add(time.Minute), pass.ErrWrongEvent},
		{"expired", newPass, "e1", deadline.Add(time.Second), pass.ErrInvalid},
		{"tampered", newPass[:len(newPass)-4] + "AAAA", "e1", now, pass.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := pass.Verify(jwks, tc.token, "https://gw.test", tc.event, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if err == nil && (c.Subject == "" || c.Seq == 0 || !c.ExpiresAt.Time.Equal(deadline)) {
				t.Fatalf("claims: %+v", c)
			}
		})
	}
	// a key that is no longer published
	onlyNew, _ := pass.ParseKeys([]string{cur})
	jwksNew, _ := onlyNew.JWKS()
	if _, err := pass.Verify(jwksNew, oldPass, "https://gw.test", "e1", now); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("retired key accepted: %v", err)
	}
	// another issuer
	if _, err := pass.Verify(jwks, newPass, "https://evil.test", "e1", now); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("issuer not checked: %v", err)
	}
	// alg confusion: HS256 keyed with anything is refused
	h := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "https://gw.test", "sub": "x", "event_id": "e1",
		"exp": deadline.Unix()})
	h.Header["kid"] = "k2"
	hs, _ := h.SignedString([]byte("whatever"))
	if _, err := pass.Verify(jwks, hs, "https://gw.test", "e1", now); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("HS256 accepted: %v", err)
	}
	for _, bad := range [][]string{{"nokid"}, {":" + seed(t)}, {"k:short"}, {old, old}} {
		if _, err := pass.ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
		}
	}
	if s := pass.NewSigner(nil, "x"); s != nil {
		t.Fatal("a signer without keys")
	}
	if p, err := (*pass.Signer)(nil).Sign("e1", "u", 1, now, deadline); p != "" || err != nil {
		t.Fatal("a nil signer signed")
	}
}
