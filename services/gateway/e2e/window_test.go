package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// TestPaymentAfterTheSalesEndIsRefunded: with the whole stack, a fan who
// started paying before the end of a sale whose holds end with it pays at
// the sandbox after the end: the provider's webhook is classified as a
// late payment, the ledger has it as a refund due, and the seat is not
// sold.
func TestPaymentAfterTheSalesEndIsRefunded(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	s := stacktest.Start(t, stacktest.Options{Services: services})
	const ev = "ends"
	ac := s.Client(t, "window-admin", auth.RoleAdmin)
	if code, err := ac.Do("POST", "/api/admin/events", map[string]any{"id": ev, "rows": 1, "seats_per_row": 2, "capacity": 2,
		"hold_seconds": 300, "finish_after_end": false}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, err)
	}
	fan := s.Client(t, "late-fan", "")
	var pay struct {
		URL string `json:"payment_url"`
	}
	for _, step := range []struct {
		path string
		out  any
		body map[string]string
	}{
		{"/api/booking/request", nil, map[string]string{"event_id": ev}},
		{"/api/booking/select-seat", nil, map[string]string{"event_id": ev, "seat_id": "A1"}},
		{"/api/booking/payment/initiate", &pay, map[string]string{"event_id": ev}},
	} {
		if code, err := fan.Do("POST", step.path, step.body, step.out); err != nil || code != http.StatusOK {
			t.Fatalf("POST %s: %d %v", step.path, code, err)
		}
	}
	if code, err := ac.Do("PATCH", "/api/admin/events/"+ev, map[string]any{"sales_end": "2000-01-01T00:00:00Z"}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("end the sale: %d %v", code, err)
	}
	if code, err := fan.Do("POST", pay.URL+"/pay", nil, nil); err != nil || code != http.StatusSeeOther {
		t.Fatalf("pay at the sandbox: %d %v", code, err)
	}
	var out struct{ Orders []ledger.Order }
	waitUntil(t, 30*time.Second, func() bool {
		code, err := fan.Do("GET", "/api/orders", nil, &out)
		return err == nil && code == http.StatusOK && len(out.Orders) == 1 && out.Orders[0].Status == ledger.StatusRefundDue
	}, func() string { return fmt.Sprintf("the fan's orders: %+v", out.Orders) })
	var m struct{ Sold int }
	if code, err := ac.Do("GET", "/api/seats/available?event_id="+ev, nil, &m); err != nil || code != http.StatusOK || m.Sold != 0 {
		t.Fatalf("seat map: %d %v %+v", code, err, m)
	}
}
