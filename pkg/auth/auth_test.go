package auth

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func TestIssueVerify(t *testing.T) {
	a, err := New(secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.Issue("alice", RoleAdmin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.Verify(tok)
	if err != nil || id.UserID != "alice" || !id.Admin() {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
}

func TestVerifyRejects(t *testing.T) {
	a, _ := New(secret)
	other, _ := New([]byte("another-secret-of-32-bytes-xxxxx"))
	past := a.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) })
	expired, _ := past.Issue("alice", "", time.Hour)
	wrongKey, _ := other.Issue("alice", "", time.Hour)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	noExp, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice"}).SignedString(secret)
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(secret)
	noSub, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"exp": time.Now().Add(time.Hour).Unix()}).SignedString(secret)
	badSub, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "a{b}", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(secret)
	// a box-office sale's buyer (booking.BoxOfficeBuyer): no fan acts as one
	boxBuyer, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "box-office:s1", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(secret)
	if _, err := a.Issue("box-office:s1", "", time.Hour); err == nil {
		t.Error("Issue made a token for a box-office buyer")
	}
	good, _ := a.Issue("alice", "", time.Hour)
	// the signature's second-to-last character changed, never to itself
	bad := []byte(good)
	if bad[len(bad)-2] == 'x' {
		bad[len(bad)-2] = 'y'
	} else {
		bad[len(bad)-2] = 'x'
	}
	tampered := string(bad)
	for name, tok := range map[string]string{
		"empty": "", "garbage": "abc.def.ghi", "expired": expired, "wrong key": wrongKey,
		"alg none": none, "no exp": noExp, "hs512": hs512, "no sub": noSub, "bad sub": badSub,
		"tampered": tampered, "box-office buyer": boxBuyer,
	} {
		if _, err := a.Verify(tok); err == nil {
			t.Errorf("%s: Verify accepted the token", name)
		} else if !errors.Is(err, ErrInvalidToken) && !errors.Is(err, ErrNoToken) {
			t.Errorf("%s: error %v wraps neither sentinel", name, err)
		}
	}
}

func TestNewRejectsShortSecret(t *testing.T) {
	if _, err := New([]byte("short")); err == nil {
		t.Fatal("New accepted a 5-byte secret")
	}
}

// TestVerifyHonoursExpiry: a token that worked stops working when it
// expires (no verification is remembered).
func TestVerifyHonoursExpiry(t *testing.T) {
	now := time.Now()
	a, _ := New(secret)
	a = a.WithClock(func() time.Time { return now })
	tok, _ := a.Issue("alice", "", time.Minute)
	if _, err := a.Verify(tok); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(tok); err != nil {
		t.Fatalf("second verify: %v", err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := a.Verify(tok); err == nil {
		t.Fatal("expired token accepted")
	}
}

// BenchmarkVerify: Verify as a join calls it (a token it has not seen) and
// as a poll does (a token it verified before), among 150,000 users'
// tokens. Run with -benchtime 150000x, so that every join's token is new:
//
//	go test -run '^$' -bench 'Verify$' -benchtime 150000x ./pkg/auth/
func BenchmarkVerify(b *testing.B) {
	const n = 150_000
	a, _ := New(secret)
	toks := make([]string, 2*n)
	for i := range toks {
		toks[i], _ = a.Issue(fmt.Sprintf("user-%d", i), "", time.Hour)
	}
	for _, tok := range toks[:n] {
		if _, err := a.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		toks []string
	}{{"poll", toks[:n]}, {"join", toks[n:]}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := a.Verify(bc.toks[(i*7919)%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The channel claim is signed and read on both paths: the compact form
// Issue writes and encoding/json's (a space makes the payload not compact).
func TestChannelClaim(t *testing.T) {
	a, err := New(secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.IssueChannel("alice", "", "partner", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := a.Verify(tok); err != nil || id.Channel != "partner" || id.Admin() {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
	for _, raw := range []string{`{"channel":"box_office","sub":"bob"}`, `{"sub":"bob", "channel":"box_office"}`} {
		c, err := decodeClaims([]byte(raw))
		if err != nil || c.Channel != "box_office" || c.Subject != "bob" {
			t.Fatalf("decode %s = %+v, %v", raw, c, err)
		}
	}
	if id, _ := a.Verify(mustIssue(t, a)); id.Channel != "" {
		t.Fatalf("a token without the claim has channel %q", id.Channel)
	}
}

func mustIssue(t *testing.T, a *Authority) string {
	t.Helper()
	tok, err := a.Issue("carol", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
