package pass_test

import (
	"errors"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/pass"
)

// A queue ticket verifies as a ticket against the same JWKS as the pass,
// and is never taken for an admission pass (nor a pass for a ticket).
func TestTicketIsNeverAPass(t *testing.T) {
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
	ticket, err := s.SignTicket("e1", "alice", 42, now)
	if err != nil {
		t.Fatal(err)
	}
	admission, err := s.Sign("e1", "alice", 42, now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c, err := pass.VerifyTicket(jwks, ticket, "bo", "e1", now.Add(time.Hour))
	if err != nil {
		t.Fatalf("VerifyTicket: %v", err)
	}
	if c.Subject != "alice" || c.EventID != "e1" || c.Seq != 42 || !c.IssuedAt.Time.Equal(now) {
		t.Fatalf("ticket claims %+v", c)
	}
	if c.ExpiresAt != nil {
		t.Fatalf("a ticket has no exp (a validator of passes requires one): %v", c.ExpiresAt)
	}
	if _, err := pass.Verify(jwks, ticket, "bo", "e1", now.Add(time.Minute)); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("Verify(ticket) = %v, want ErrInvalid", err)
	}
	if _, err := pass.VerifyTicket(jwks, admission, "bo", "e1", now.Add(time.Minute)); !errors.Is(err, pass.ErrInvalid) {
		t.Fatalf("VerifyTicket(pass) = %v, want ErrInvalid", err)
	}
	for _, tc := range []struct {
		name, token, event, issuer string
		at                         time.Time
		want                       error
	}{
		{"another event", ticket, "e2", "bo", now, pass.ErrWrongEvent},
		{"another issuer", ticket, "e1", "other", now, pass.ErrInvalid},
		{"issued in the future", ticket, "e1", "bo", now.Add(-time.Minute), pass.ErrInvalid},
		{"tampered", ticket[:len(ticket)-4] + "AAAA", "e1", "bo", now, pass.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pass.VerifyTicket(jwks, tc.token, tc.issuer, tc.event, tc.at); !errors.Is(err, tc.want) {
				t.Fatalf("VerifyTicket: %v, want %v", err, tc.want)
			}
		})
	}
	var none *pass.Signer
	if tk, err := none.SignTicket("e1", "alice", 1, now); tk != "" || err != nil {
		t.Fatalf("nil signer: %q, %v", tk, err)
	}
}

// BenchmarkSignTicket is what a queued join pays for its ticket.
func BenchmarkSignTicket(b *testing.B) {
	keys, err := pass.ParseKeys([]string{"k1:" + seed(b)})
	if err != nil {
		b.Fatal(err)
	}
	s := pass.NewSigner(keys, "bo")
	now := time.Now()
	for b.Loop() {
		if _, err := s.SignTicket("e1", "user-1234567", 1_000_000, now); err != nil {
			b.Fatal(err)
		}
	}
}
