package fault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// skewed runs the payment-webhook and the timeout consumer on process
// clocks set off the host's by webhook and timeout (the stacktest build's
// BOXOFFICE_TEST_CLOCK_SKEW): the scripts judge every deadline by Redis's
// clock, so the sale's invariants hold and no payment made within its
// hold is refunded. The hold is long enough (6 s) that most payments are
// made well within it.
func skewed(webhook, timeout time.Duration) fault {
	skews := []struct {
		name string
		d    time.Duration
	}{{stacktest.PaymentWebhook, webhook}, {stacktest.TimeoutConsumer, timeout}}
	restart := func(t *testing.T, su *suite, on bool) {
		for _, sk := range skews {
			p := su.s.Service(sk.name)
			if !p.Exited() {
				p.Stop(10 * time.Second)
			}
			v := ""
			if on {
				v = sk.d.String()
			}
			su.s.Setenv(t, sk.name, "BOXOFFICE_TEST_CLOCK_SKEW", v)
			before, _ := os.ReadFile(p.Log)
			su.s.Restart(t, sk.name)
			b, _ := os.ReadFile(p.Log)
			if said := strings.Contains(string(b[min(len(before), len(b)):]), "clock is set off the host's"); said != on {
				t.Fatalf("%s: skew %q, but its log says set off: %v; log:\n%s", sk.name, v, said, tailOf(p.Log))
			}
		}
	}
	return fault{name: fmt.Sprintf("clocks: payment-webhook %+v, timeout-consumer %+v", webhook, timeout), exactlyOnce: true,
		hold: 6 * time.Second, grace: 3 * time.Second,
		setup:  func(t *testing.T, su *suite) { restart(t, su, true) },
		inject: func(*testing.T, *suite) {},
		after: func(t *testing.T, su *suite, ev string, us []*stacktest.Buyer) {
			defer restart(t, su, false)
			l := openLedger(t, su)
			orders, err := l.EventOrders(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range orders {
				if o.Status == ledger.StatusCompleted {
					continue
				}
				for _, u := range us {
					if u.ID == o.UserID && !u.PaidAt.IsZero() && u.PaidAt.Before(u.JoinedAt.Add(6*time.Second)) {
						t.Errorf("%s paid %v after joining, within the 6 s hold, and was refunded (%s, %s)", u.ID,
							u.PaidAt.Sub(u.JoinedAt).Round(time.Millisecond), o.Status, o.RefundReason)
					}
				}
			}
		}}
}

// openLedger opens the stack's ledger (PostgreSQL, not through a proxy).
func openLedger(t *testing.T, su *suite) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), su.s.DatabaseURL, ledger.WithoutMigrationLock())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// providerHold is the hold of the provider outage round; the outage lasts
// twice as long.
const providerHold = 3 * time.Second

// providerCut cuts the payment provider off (the gateway's calls and its
// webhooks) for twice the hold time in the middle of the sale, with users
// selecting and paying. The gateway's breaker finds it (fans' payments
// fail) and declares the provider degraded, its own probes recover it.
// Checked beyond the sale's invariants: the outage was declared and
// recovered; while it lasted nobody was admitted and no hold ended (no
// booking_expired whose deadline falls in it); every payment of the sale
// ended classified (succeeded, late or failed); the outage is recorded in
// PostgreSQL.
func providerCut() fault {
	return fault{name: fmt.Sprintf("payment provider unreachable %v", 2*providerHold), hold: providerHold,
		inject: func(t *testing.T, su *suite) {
			su.f.Down(stacktest.TargetProvider)
			su.f.Down(stacktest.TargetWebhooks)
			time.Sleep(2 * providerHold)
			su.f.Up(t, stacktest.TargetProvider)
			su.f.Up(t, stacktest.TargetWebhooks)
		},
		after: func(t *testing.T, su *suite, ev string, _ []*stacktest.Buyer) {
			broker := su.s.Brokers[0]
			var since, until time.Time
			if _, ok := stacktest.Eventually(30*time.Second, func() bool {
				since, until = time.Time{}, time.Time{}
				for _, f := range stacktest.ReadTopic(t, broker, events.TopicProviderDegraded) {
					if f.EventID == ev && strings.HasSuffix(f.Reason, "by=breaker") {
						since = time.UnixMilli(f.Sequence)
					}
				}
				for _, f := range stacktest.ReadTopic(t, broker, events.TopicProviderRecovered) {
					if f.EventID == ev && !since.IsZero() && f.Sequence == since.UnixMilli() {
						until = f.OccurredAt
					}
				}
				return !until.IsZero()
			}); !ok {
				t.Fatalf("the outage was not declared and recovered by the breaker (degraded since %v)", since)
			}
			t.Logf("provider outage: hold clocks stopped for %v", until.Sub(since).Round(time.Millisecond))
			for _, f := range stacktest.ReadTopic(t, broker, events.TopicUserPromoted) {
				if f.EventID == ev && f.OccurredAt.After(since) && f.OccurredAt.Before(until) {
					t.Errorf("%s admitted at %v, during the outage (%v to %v)", f.UserID, f.OccurredAt, since, until)
				}
			}
			for _, f := range stacktest.ReadTopic(t, broker, events.TopicBookingExpired) {
				if f.EventID == ev && !f.OccurredAt.Before(since) && f.OccurredAt.Before(until) {
					t.Errorf("%s's hold ended at %v, during the outage (%v to %v)", f.UserID, f.OccurredAt, since, until)
				}
			}
			// every payment that moved money at the provider is
			// classified in the ledger (one the provider never heard of,
			// or that waits for the fan, moved none)
			l := openLedger(t, su)
			ctx := context.Background()
			sandbox := &payment.SandboxClient{BaseURL: su.s.URL(stacktest.PaymentSandbox), APIKey: stacktest.SandboxKey}
			rows, err := l.Pool().Query(ctx, `SELECT payment_id FROM payments WHERE event_id = $1`, ev)
			if err != nil {
				t.Fatal(err)
			}
			var pids []string
			for rows.Next() {
				var pid string
				if err := rows.Scan(&pid); err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			moved := 0
			for _, pid := range pids {
				st, err := sandbox.Status(ctx, pid)
				var pe *payment.Error
				if (errors.As(err, &pe) && pe.Refused()) || st == "pending" {
					continue
				} else if err != nil {
					t.Fatalf("the provider's status of %s: %v", pid, err)
				}
				moved++
				want := map[string][]string{"paid": {ledger.OutcomeSucceeded, ledger.OutcomeLate}, "declined": {ledger.OutcomeFailed}}[st]
				var p ledger.Payment
				if _, ok := stacktest.Eventually(30*time.Second, func() bool {
					p, err = l.Payment(ctx, pid)
					return err == nil && slices.Contains(want, p.Outcome)
				}); !ok {
					t.Errorf("payment %s is %s at the provider, %q in the ledger (%v), want one of %v", pid, st, p.Outcome, err, want)
				}
			}
			if moved == 0 {
				t.Error("no payment was made")
			}
			if o, err := l.ProviderOutages(ctx, ev); err != nil || len(o) == 0 || o[len(o)-1].RecoveredBy != "breaker" {
				t.Errorf("the outage is not in PostgreSQL: %+v %v", o, err)
			}
		}}
}
