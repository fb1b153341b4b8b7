package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

// OldestUnconfirmed finds the oldest payment still waiting for its
// webhook past the wait, and says whether any webhook came since.
func TestOldestUnconfirmed(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	pay := func(id string, age time.Duration) {
		t.Helper()
		if err := l.RecordPayment(ctx, ledger.Payment{PaymentID: id, EventID: "e1", UserID: "u-" + id, SeatID: "A1", Amount: 100}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Pool().Exec(ctx, `UPDATE payments SET created_at = now() - make_interval(secs => $2), updated_at = now() - make_interval(secs => $2)
			WHERE payment_id = $1`, id, age.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.OldestUnconfirmed(ctx, time.Minute, time.Time{}); !errors.Is(err, ledger.ErrNoUnconfirmed) {
		t.Fatalf("no payments: %v", err)
	}
	pay("young", 10*time.Second)
	if _, err := l.OldestUnconfirmed(ctx, time.Minute, time.Time{}); !errors.Is(err, ledger.ErrNoUnconfirmed) {
		t.Fatalf("a payment within the wait: %v", err)
	}
	pay("p2", 2*time.Minute)
	pay("p1", 3*time.Minute)
	u, err := l.OldestUnconfirmed(ctx, time.Minute, time.Time{})
	if err != nil || u.PaymentID != "p1" || u.Webhooked {
		t.Fatalf("oldest: %+v %v, want p1 without webhooks since", u, err)
	}
	if u2, err := l.OldestUnconfirmed(ctx, time.Minute, u.CreatedAt); err != nil || u2.PaymentID != "p2" {
		t.Fatalf("after p1: %+v %v, want p2", u2, err)
	}
	// a webhook for the young payment: the provider confirms
	if err := l.RecordFailure(ctx, "young", "e1", "u-young", "A1", "card_declined"); err != nil {
		t.Fatal(err)
	}
	if u, err := l.OldestUnconfirmed(ctx, time.Minute, time.Time{}); err != nil || u.PaymentID != "p1" || !u.Webhooked {
		t.Fatalf("after a webhook: %+v %v, want p1 webhooked", u, err)
	}
	if err := l.RecordFailure(ctx, "p1", "e1", "u-p1", "A1", "card_declined"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p2", EventID: "e1", UserID: "u-p2", SeatID: "A1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.OldestUnconfirmed(ctx, time.Minute, time.Time{}); !errors.Is(err, ledger.ErrNoUnconfirmed) {
		t.Fatalf("all confirmed: %v", err)
	}
}
