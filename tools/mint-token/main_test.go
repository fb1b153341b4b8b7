package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/auth"
)

// The tokens are the gateway's: pkg/auth verifies each, for the right
// user and role, and refuses them under another secret.
func TestTokensVerify(t *testing.T) {
	const secret = "mint-token-test-secret-0123456789"
	var out bytes.Buffer
	if err := run(&out, secret, "u", "", 3, auth.RoleAdmin, time.Hour); err != nil {
		t.Fatal(err)
	}
	toks := strings.Fields(out.String())
	if len(toks) != 3 {
		t.Fatalf("%d tokens, want 3: %q", len(toks), out.String())
	}
	a, _ := auth.New([]byte(secret))
	other, _ := auth.New([]byte("another-secret-0123456789abcdef"))
	for i, tok := range toks {
		id, err := a.Verify(tok)
		if err != nil {
			t.Fatalf("token %d: %v", i, err)
		}
		if want := "u" + string(rune('0'+i)); id.UserID != want || !id.Admin() {
			t.Errorf("token %d: %+v, want admin %s", i, id, want)
		}
		if _, err := other.Verify(tok); err == nil {
			t.Errorf("token %d verifies under another secret", i)
		}
	}
	if err := run(&out, "", "u", "", 1, "", time.Hour); err == nil {
		t.Error("no JWT_SECRET: no error")
	}
}
