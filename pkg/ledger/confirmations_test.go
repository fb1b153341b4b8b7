package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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
	if _, err := l.RecordFailure(ctx, ledger.Failure{PaymentID: "young", EventID: "e1", UserID: "u-young", SeatID: "A1", Reason: "card_declined"}); err != nil {
		t.Fatal(err)
	}
	if u, err := l.OldestUnconfirmed(ctx, time.Minute, time.Time{}); err != nil || u.PaymentID != "p1" || !u.Webhooked {
		t.Fatalf("after a webhook: %+v %v, want p1 webhooked", u, err)
	}
	if _, err := l.RecordFailure(ctx, ledger.Failure{PaymentID: "p1", EventID: "e1", UserID: "u-p1", SeatID: "A1", Reason: "card_declined"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordSale(ctx, ledger.Sale{PaymentID: "p2", EventID: "e1", UserID: "u-p2", SeatID: "A1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.OldestUnconfirmed(ctx, time.Minute, time.Time{}); !errors.Is(err, ledger.ErrNoUnconfirmed) {
		t.Fatalf("all confirmed: %v", err)
	}
}

// An outage's start and end are recorded once each, whichever comes
// first (a recovery whose start was not recorded makes the row).
func TestRecordProviderOutages(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t)
	ctx := context.Background()
	t0 := time.UnixMilli(1_800_000_000_000).UTC()
	for range 2 {
		if err := l.RecordProviderDegraded(ctx, "e1", t0, 4, "breaker"); err != nil {
			t.Fatal(err)
		}
	}
	for _, by := range []string{"max_outage", "operator"} { // the first recovery stays
		if err := l.RecordProviderRecovered(ctx, "e1", t0, t0.Add(30*time.Minute), 3, by); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.RecordProviderRecovered(ctx, "e1", t0.Add(time.Hour), t0.Add(2*time.Hour), 1, "operator"); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordProviderDegraded(ctx, "e2", t0, 1, "operator"); err != nil {
		t.Fatal(err)
	}
	got, err := l.ProviderOutages(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.ProviderOutage{
		{EventID: "e1", PausedSince: t0, DegradedBy: "breaker", HoldsPaused: 4, RecoveredAt: t0.Add(30 * time.Minute), RecoveredBy: "max_outage", HoldsResumed: 3},
		{EventID: "e1", PausedSince: t0.Add(time.Hour), RecoveredAt: t0.Add(2 * time.Hour), RecoveredBy: "operator", HoldsResumed: 1},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Fatalf("outages (-want +got):\n%s", diff)
	}
	if got, err := l.ProviderOutages(ctx, "e2"); err != nil || len(got) != 1 || !got[0].RecoveredAt.IsZero() {
		t.Fatalf("e2: %+v %v, want one running outage", got, err)
	}
}
