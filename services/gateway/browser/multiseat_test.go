package browser

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// multiSeat: an event of two priced sections. The user picks
// three seats in two sections with the mouse and sees the sections'
// colours and prices and the running total; a fourth seat is refused (at
// most 3); a seat given back leaves the total right; they pay at the
// sandbox (which shows the amount and currency) and see the confirmation
// with the three seats and the total, and their tickets.
func multiSeat(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-multi"
	admin := s.Client(t, "browser-admin-multi", auth.RoleAdmin)
	if code, err := admin.Do("POST", "/api/admin/events", map[string]any{"id": ev, "name": "Browser Test Sections",
		"capacity": 2, "hold_seconds": holdSecs, "currency": "USD", "max_seats_per_order": 3,
		"sections": []map[string]any{
			{"name": "Floor", "rows": 2, "seats_per_row": 4, "price_cents": 5000},
			{"name": "Balcony", "rows": 1, "seats_per_row": 4, "price_cents": 3000}}}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create the event: %d %v", code, err)
	}
	gw, sandbox := s.GatewayURL(), s.URL(stacktest.PaymentSandbox)
	p := b.tab(t, "")
	p.do("open the event list", chromedp.Navigate(gw+"/"))
	p.waitFor("the price range in the list", 10*time.Second, `page.includes("30.00 to 50.00 USD per seat")`)
	p.do("open the event page", chromedp.Navigate(gw+"/?event_id="+ev))
	p.waitFor("event page", 10*time.Second, `shown("#panel-join")`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("your turn, two priced sections in colour", 15*time.Second,
		`shown("#panel-turn") && shown("#price-legend") && text("#price-legend").includes("Floor: 50.00 USD")
		 && text("#price-legend").includes("Balcony: 30.00 USD")
		 && $('#seatmap button[data-seat="A1"]').classList.contains("sec-0")
		 && $('#seatmap button[data-seat="C1"]').classList.contains("sec-1")
		 && $('#seatmap button[data-seat="C1"]').getAttribute("aria-label") === "C1, free, Balcony 30.00"`)
	click := func(seat string) {
		p.do("click "+seat, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#seatmap button[data-seat=%q]`, seat))))
	}
	for i, seat := range []string{"A1", "A2", "C1"} {
		click(seat)
		p.waitFor(seat+" held", 10*time.Second, fmt.Sprintf(
			`$('#seatmap button[data-seat=%q]').dataset.status === "mine" && document.querySelectorAll('#seatmap button[data-status="mine"]').length === %d`, seat, i+1))
	}
	p.waitFor("three seats in two sections, the running total", 10*time.Second,
		`text("#seat-note") === "Seats A1, A2, C1 are held for you." && text("#seat-total") === "Total 130.00 USD."
		 && text("#pay") === "Pay for 3 seats" && text("#release") === "Release my seats" && !$("#pay").disabled && !shown("#error")`)
	p.shot("50-multi-seat-three")

	// at most 3: a fourth is refused on the page, nothing sent
	click("C2")
	p.waitFor("a fourth seat refused", 5*time.Second,
		`shown("#error") && text("#error").includes("at most 3 seats") && $('#seatmap button[data-seat="C2"]').dataset.status === "available"`)
	// giving A2 back, then taking it again: the total follows
	click("A2")
	p.waitFor("A2 given back", 10*time.Second,
		`text("#seat-note") === "Seats A1, C1 are held for you." && text("#seat-total") === "Total 80.00 USD."
		 && $('#seatmap button[data-seat="A2"]').dataset.status === "available"`)
	click("A2")
	p.waitFor("A2 again", 10*time.Second, `text("#seat-total") === "Total 130.00 USD." && !shown("#error")`)
	me := s.Client(t, p.str(`text("#who")`), "")
	var pos struct {
		SeatIDs []string `json:"seat_ids"`
	}
	if code, err := me.Do("GET", "/api/booking/position?event_id="+ev, nil, &pos); err != nil || code != 200 || strings.Join(pos.SeatIDs, ",") != "A1,C1,A2" {
		t.Fatalf("API position: %d %v %+v", code, err, pos)
	}

	p.do("click Pay", chromedp.Click(chromedp.ID("pay")))
	p.waitFor("sandbox checkout with the total", 10*time.Second, fmt.Sprintf(
		`location.origin === %q && page.includes("130.00 USD") && page.includes("A1,C1,A2")`, sandbox))
	p.do("click the sandbox's Pay", chromedp.Click(chromedp.CSS(`form[action$="/pay"] button`)))
	p.waitFor("the confirmation with three seats and the total", 30*time.Second, fmt.Sprintf(
		`location.origin === %q && document.body.dataset.result === "completed"
		 && text("#done-text") === "Booking confirmed: 3 seats, A1, C1, A2 (total 130.00 USD)."`, gw))
	p.waitFor("the ticket from PostgreSQL", 20*time.Second,
		`shown("#view-event .tickets") && text("#view-event .tickets").includes("Seats A1, C1, A2")
		 && text("#view-event .tickets").includes("130.00 USD")`)
	p.shot("51-multi-seat-confirmed")
	p.noExceptions()
}
