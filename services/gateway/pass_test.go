package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/boxoffice/boxoffice/pkg/pass"
)

func passKeys(t testing.TB, kids ...string) pass.Keys {
	var items []string
	for _, kid := range kids {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		items = append(items, kid+":"+base64.RawURLEncoding.EncodeToString(b))
	}
	ks, err := pass.ParseKeys(items)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// The pass of an admitted user verifies with an independent JWKS client
// (lestrrat-go/jwx, not the go-jose and golang-jwt that made it) fetching
// the gateway's /.well-known/jwks.json, as docs/admission-pass.md says an
// origin does: signature, iss, exp, event_id.
func TestAdmissionPassVerifiesWithPublishedJWKS(t *testing.T) {
	hs := newHarness(t, false)
	keys := passKeys(t, "2026-11-b", "2026-11-a") // current, previous
	hs.srv.PassKeys, hs.srv.Pass = keys, pass.NewSigner(keys, "https://tickets.test")
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 3, "capacity": 1, "hold_seconds": 120})
	alice, bob := hs.token("alice", ""), hs.token("bob", "")
	j := hs.do("POST", "/api/booking/request", alice, map[string]any{"event_id": "e1"})
	if j.str("status") != "active" || j.str("pass") == "" {
		t.Fatalf("admitted join without a pass: %s", j.raw)
	}
	r := hs.do("POST", "/api/booking/request", bob, map[string]any{"event_id": "e1"})
	if r.str("status") != "queued" || r.str("pass") != "" {
		t.Fatalf("a queued join has a pass: %s", r.raw)
	}
	if r := hs.do("GET", "/api/booking/position?event_id=e1", bob, nil); r.str("pass") != "" {
		t.Fatalf("a waiting user has a pass: %s", r.raw)
	}
	p := hs.do("GET", "/api/booking/position?event_id=e1", alice, nil)
	if p.str("pass") == "" {
		t.Fatalf("position in the room without a pass: %s", p.raw)
	}

	gw := httptest.NewServer(hs.h)
	defer gw.Close()
	ctx := context.Background()
	set, err := jwk.Fetch(ctx, gw.URL+"/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 2 {
		t.Fatalf("JWKS has %d keys, want current and previous", set.Len())
	}
	verify := func(token, event string, at time.Time) (jwt.Token, error) {
		return jwt.Parse([]byte(token), jwt.WithKeySet(set), jwt.WithIssuer("https://tickets.test"),
			jwt.WithClaimValue("event_id", event), jwt.WithClock(jwt.ClockFunc(func() time.Time { return at })))
	}
	tok, err := verify(p.str("pass"), "e1", time.Now())
	if err != nil {
		t.Fatalf("pass does not verify: %v", err)
	}
	sub, _ := tok.Subject()
	exp, _ := tok.Expiration()
	var seq float64
	if err := tok.Get("seq", &seq); err != nil || sub != "alice" || int64(seq) != p.num("sequence") || exp.Unix() != p.num("expire_time") {
		t.Fatalf("claims: sub %q seq %v exp %v (%v); position %s", sub, seq, exp, err, p.raw)
	}
	if _, err := verify(p.str("pass"), "e2", time.Now()); err == nil {
		t.Fatal("a pass for e1 accepted for e2")
	}
	if _, err := verify(p.str("pass"), "e1", exp.Add(time.Minute)); err == nil {
		t.Fatal("an expired pass accepted")
	}
	// a pass signed by the previous key (before the rotation) still verifies
	old := pass.NewSigner(keys[1:], "https://tickets.test")
	op, _ := old.Sign("e1", "carol", 9, time.Now(), time.Now().Add(time.Minute))
	if _, err := verify(op, "e1", time.Now()); err != nil {
		t.Fatalf("previous key's pass: %v", err)
	}
	// our own documented validation agrees
	body := hs.do("GET", "/.well-known/jwks.json", "", nil).raw
	if _, err := pass.Verify([]byte(body), p.str("pass"), "https://tickets.test", "e1", time.Now()); err != nil {
		t.Fatal(err)
	}
}
