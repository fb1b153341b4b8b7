package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// TestRedisLossMidSaleIsRebuiltFromTheLedger deletes an event's Redis keys
// during a sale, with the whole stack running: within a few safety-net
// intervals (1 s here) the slot-released consumer rebuilds it from
// PostgreSQL with the same seats sold to the same users, the hold that was
// open is gone, and the remaining seats sell exactly once.
func TestRedisLossMidSaleIsRebuiltFromTheLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	s := stacktest.Start(t, stacktest.Options{Services: services})
	const ev = "lost"
	s.CreateEvent(t, stacktest.Event{ID: ev, Rows: 1, SeatsPerRow: 10, Capacity: 10, HoldSeconds: 60})
	ac := s.Client(t, "ledger-admin", auth.RoleAdmin)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	bought := map[string]string{} // seat -> user
	for i := 1; i <= 4; i++ {
		u, seat := fmt.Sprintf("buyer-%d", i), fmt.Sprintf("A%d", i)
		if err := buySeat(ctx, s.Client(t, u, ""), ev, seat); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		bought[seat] = u
	}
	holder := s.Client(t, "holder", "")
	if err := joinAndHold(ctx, holder, ev, "A5"); err != nil {
		t.Fatal(err)
	}

	loseAndRebuild(ctx, t, s, ev)
	var e struct {
		Counts struct{ Total, Sold, Held int64 } `json:"counts"`
	}
	if code, err := ac.Do("GET", "/api/events/"+ev, nil, &e); err != nil || code != 200 {
		t.Fatalf("the rebuilt event: %d %v", code, err)
	}
	if e.Counts.Total != 10 || e.Counts.Sold != 4 || e.Counts.Held != 0 {
		t.Fatalf("rebuilt counts %+v, want 10 seats, 4 sold, none held", e.Counts)
	}
	for seat, u := range bought {
		var pos position
		if _, err := s.Client(t, u, "").Do("GET", "/api/booking/position?event_id="+ev, nil, &pos); err != nil ||
			pos.Status != "completed" || pos.SeatID != seat {
			t.Fatalf("%s after the rebuild: %+v %v", u, pos, err)
		}
	}
	var pos position
	if _, err := holder.Do("GET", "/api/booking/position?event_id="+ev, nil, &pos); err != nil || pos.Status != "not_found" {
		t.Fatalf("the open hold survived the loss: %+v %v", pos, err)
	}

	// the remaining six seats sell once each (the holder rejoins)
	for i := 5; i <= 10; i++ {
		u, seat := fmt.Sprintf("late-%d", i), fmt.Sprintf("A%d", i)
		if i == 5 {
			u = "holder"
		}
		if err := buySeat(ctx, s.Client(t, u, ""), ev, seat); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		bought[seat] = u
	}
	for seat := range bought {
		var x struct{ Code string }
		if code, _ := s.Client(t, "intruder", "").Do("POST", "/api/booking/select-seat",
			map[string]string{"event_id": ev, "seat_id": seat}, &x); code == 200 {
			t.Fatalf("sold seat %s could be held again", seat)
		}
	}
	var orders struct {
		Orders []struct {
			SeatID string `json:"seat_id"`
			UserID string `json:"user_id"`
			Status string `json:"status"`
		} `json:"orders"`
	}
	waitUntil(t, 30*time.Second, func() bool {
		_, _ = ac.Do("GET", "/api/admin/events/"+ev+"/orders", nil, &orders)
		return len(orders.Orders) >= 10
	}, func() string { return fmt.Sprintf("%d orders, want 10", len(orders.Orders)) })
	got := map[string]string{}
	for _, o := range orders.Orders {
		if o.Status == "completed" {
			got[o.SeatID] = o.UserID
		}
	}
	if len(got) != 10 || len(orders.Orders) != 10 {
		t.Fatalf("orders %+v", orders.Orders)
	}
	for seat, u := range bought {
		if got[seat] != u {
			t.Errorf("seat %s: order names %q, bought by %s", seat, got[seat], u)
		}
	}
	restored := 0
	for _, f := range readTopic(t, s.Brokers[0], events.TopicEventRestored) {
		if f.EventID == ev {
			restored++
		}
	}
	if restored != 1 {
		t.Errorf("%d event_restored facts, want 1", restored)
	}
}

// joinAndHold joins and, once admitted, holds seat.
func joinAndHold(ctx context.Context, c *stacktest.Client, ev, seat string) error {
	if code, err := retry(ctx, func() (int, error) {
		return c.Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, nil)
	}); err != nil || code != 200 {
		return fmt.Errorf("join: %d %v", code, err)
	}
	for ctx.Err() == nil {
		var pos position
		if _, err := c.Do("GET", "/api/booking/position?event_id="+ev, nil, &pos); err != nil {
			return err
		}
		if pos.Status == "active" {
			code, err := c.Do("POST", "/api/booking/select-seat", map[string]string{"event_id": ev, "seat_id": seat}, nil)
			if err != nil || code != 200 {
				return fmt.Errorf("select %s: %d %v", seat, code, err)
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ctx.Err()
}

// buySeat takes one user through join, seat, payment in the sandbox and
// waits for the booking to complete.
func buySeat(ctx context.Context, c *stacktest.Client, ev, seat string) error {
	if err := joinAndHold(ctx, c, ev, seat); err != nil {
		return err
	}
	var ini struct {
		PaymentURL string `json:"payment_url"`
	}
	code, err := retry(ctx, func() (int, error) {
		return c.Do("POST", "/api/booking/payment/initiate", map[string]string{"event_id": ev}, &ini)
	})
	if err != nil || code != 200 {
		return fmt.Errorf("initiate: %d %v", code, err)
	}
	if code, err := c.Do("POST", ini.PaymentURL+"/pay", url.Values{}, nil); err != nil || code != http.StatusSeeOther {
		return fmt.Errorf("pay: %d %v", code, err)
	}
	for ctx.Err() == nil {
		var pos position
		if _, err := c.Do("GET", "/api/booking/position?event_id="+ev, nil, &pos); err != nil {
			return err
		}
		if pos.Status == "completed" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ctx.Err()
}

// loseAndRebuild deletes ev's Redis keys (Redis loses the event) and waits
// until the safety net has rebuilt it from the ledger.
func loseAndRebuild(ctx context.Context, t *testing.T, s *stacktest.Stack, ev string) {
	t.Helper()
	if err := s.Redis.Del(ctx, booking.EventKeys(s.Prefix, ev)...).Err(); err != nil {
		t.Fatal(err)
	}
	ac := s.Client(t, "rebuild-admin", auth.RoleAdmin)
	waitUntil(t, 30*time.Second, func() bool {
		code, _ := ac.Do("GET", "/api/events/"+ev, nil, nil)
		return code == 200
	}, func() string { return "the event was not rebuilt within 30 s" })
}
