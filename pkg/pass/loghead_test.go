package pass_test

import (
	"errors"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/pass"
)

// A signed log head verifies against the JWKS, for its event only, and is
// never taken for a pass or a ticket (nor they for a head).
func TestLogHeadIsNeitherPassNorTicket(t *testing.T) {
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
	head, err := s.SignLogHead("e1", 7, "ab12", now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pass.VerifyLogHead(jwks, head, "bo", "e1", now)
	if err != nil {
		t.Fatalf("VerifyLogHead: %v", err)
	}
	if c.Size != 7 || c.Head != "ab12" || c.EventID != "e1" || !c.IssuedAt.Time.Equal(now) {
		t.Fatalf("head claims %+v", c)
	}
	if _, err := pass.VerifyLogHead(jwks, head, "bo", "e2", now); !errors.Is(err, pass.ErrWrongEvent) {
		t.Fatalf("another event's head: %v", err)
	}
	// another signature: its second-to-last character (six bits of it,
	// where the last has padding) changed, never to itself
	bad := []byte(head)
	if bad[len(bad)-2] == 'A' {
		bad[len(bad)-2] = 'B'
	} else {
		bad[len(bad)-2] = 'A'
	}
	if _, err := pass.VerifyLogHead(jwks, string(bad), "bo", "e1", now); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("a bad signature: %v", err)
	}
	const rootType = "bo-receipt-root+jwt" // pkg/receipt's signed root
	if err := pass.VerifyTyped(jwks, head, rootType, now, &headClaims{}); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("a head taken for a receipt's root: %v", err)
	}
	root, _ := s.SignTyped(rootType, headClaims{EventID: "e1"})
	if _, err := pass.VerifyLogHead(jwks, root, "bo", "e1", now); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("a receipt's root taken for a head: %v", err)
	}
}
