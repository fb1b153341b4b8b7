package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// TestCancelledTicketsAreRefundedOnceAndBackOnSale: with the whole stack
// (the sandbox provider, Kafka), an admin cancels a sold ticket through
// the API and another one is left half done (recorded in PostgreSQL, as
// by a gateway killed before Redis or the provider heard of it). Both end
// refunded once at the sandbox, their seats on sale again in the seat map,
// and one order_cancelled and one refund_issued each on Kafka.
func TestCancelledTicketsAreRefundedOnceAndBackOnSale(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	s := stacktest.Start(t, stacktest.Options{Services: services})
	const ev = "cancelled"
	s.CreateEvent(t, stacktest.Event{ID: ev, Rows: 1, SeatsPerRow: 4, Capacity: 4, HoldSeconds: 60})
	ac := s.Client(t, "cancel-admin", auth.RoleAdmin)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for i, seat := range []string{"A1", "A2"} {
		if err := buySeat(ctx, s.Client(t, fmt.Sprintf("fan-%d", i+1), ""), ev, seat); err != nil {
			t.Fatal(err)
		}
	}
	orders := func(user string) []ledger.Order {
		var out struct{ Orders []ledger.Order }
		waitUntil(t, 20*time.Second, func() bool {
			code, err := s.Client(t, user, "").Do("GET", "/api/orders", nil, &out)
			return err == nil && code == 200 && len(out.Orders) == 1
		}, func() string { return user + " has no order" })
		return out.Orders
	}
	o1, o2 := orders("fan-1")[0], orders("fan-2")[0]

	// through the API, twice: one cancellation, one refund
	var res struct {
		Changed      bool
		Cancellation ledger.Cancellation
	}
	for i := range 2 {
		code, err := ac.Do("POST", "/api/admin/orders/"+o1.OrderID+"/cancel", map[string]any{"reason": "show moved"}, &res)
		if err != nil || code != 200 || res.Changed != (i == 0) || res.Cancellation.RefundStatus != ledger.RefundRefunded {
			t.Fatalf("cancel %d: %d %+v %v", i, code, res, err)
		}
	}

	// half done: recorded, then the gateway "died"; its sweep finishes it
	l, err := ledger.Open(ctx, s.DatabaseURL, ledger.WithoutMigrationLock(), ledger.WithMaxConns(2))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.CancelOrder(ctx, ledger.CancelRequest{OrderID: o2.OrderID, Reason: "fraud", Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, func() bool {
		o, err := l.Order(ctx, o2.OrderID)
		return err == nil && len(o.Cancellations) == 1 && o.Cancellations[0].Finished()
	}, func() string { return "the sweep did not finish the recorded cancellation" })

	// the provider refunded each payment once, in full
	sandbox := &stacktest.Client{HTTP: s.HTTP, Base: s.URL("payment-sandbox"), Token: stacktest.SandboxKey}
	for _, o := range []ledger.Order{o1, o2} {
		var p struct{ Status string }
		if code, err := sandbox.Do("GET", "/v1/payments/"+o.PaymentID, nil, &p); err != nil || code != http.StatusOK || p.Status != "refunded" {
			t.Fatalf("payment %s at the provider: %d %+v %v", o.PaymentID, code, p, err)
		}
	}
	// the seats are on sale again
	var m struct {
		Sold     int
		Sections []struct{ Status string }
	}
	waitUntil(t, 10*time.Second, func() bool {
		code, err := ac.Do("GET", "/api/seats/available?event_id="+ev, nil, &m)
		return err == nil && code == 200 && m.Sold == 0 && len(m.Sections) == 1 && m.Sections[0].Status == "aaaa"
	}, func() string { return fmt.Sprintf("seat map %+v", m) })
	// the fan sees the refund
	if o := orders("fan-1")[0]; o.Status != ledger.StatusCancelled || len(o.Cancellations) != 1 || o.Cancellations[0].RefundStatus != ledger.RefundRefunded {
		t.Fatalf("fan-1's order: %+v", o)
	}
	// Kafka: one of each per cancellation, with the amount
	for _, typ := range []string{events.TopicOrderCancelled, events.TopicRefundIssued} {
		var facts []events.Event
		waitUntil(t, 20*time.Second, func() bool {
			facts = readTopic(t, s.Brokers[0], typ)
			return len(facts) >= 2
		}, func() string { return fmt.Sprintf("%s: %d facts", typ, len(facts)) })
		ids := map[string]bool{}
		for _, f := range facts {
			ids[f.ID] = true
			if f.Amount != o1.Amount || (f.PaymentID != o1.PaymentID && f.PaymentID != o2.PaymentID) {
				t.Errorf("%s: %+v", typ, f)
			}
		}
		if len(ids) != 2 {
			t.Fatalf("%s: %d facts, %d distinct", typ, len(facts), len(ids))
		}
	}
}
