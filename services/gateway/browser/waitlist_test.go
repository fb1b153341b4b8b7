package browser

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// waitlistJourney: a fan finds no seat free, joins the waitlist, another
// fan's hold expires (the timeout consumer), the seat is offered to the
// fan on the page (offer screen with its countdown, told to screen
// readers), they accept, pay at the sandbox and see the confirmation.
// Then, on another event, a fan who declines passes the seat on to the
// next waitlisted fan.
func waitlistJourney(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev, ev2 = "show-waitlist", "show-waitlist-2"
	admin := s.Client(t, "browser-admin-waitlist", auth.RoleAdmin)
	for _, e := range []map[string]any{
		{"id": ev, "name": "Browser Test Waitlist", "rows": 1, "seats_per_row": 2, "capacity": 2, "hold_seconds": 20},
		{"id": ev2, "name": "Browser Test Waitlist Decline", "rows": 1, "seats_per_row": 1, "capacity": 1, "hold_seconds": holdSecs},
	} {
		if code, err := admin.Do("POST", "/api/admin/events", e, nil); err != nil || code != http.StatusCreated {
			t.Fatalf("create %v: %d %v", e["id"], code, err)
		}
		if code, err := admin.Do("PUT", "/api/admin/events/"+e["id"].(string)+"/waitlist", map[string]any{"offer_seconds": 120}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("waitlist settings: %d %v", code, err)
		}
	}
	// A1 sold, A2 held by a fan whose hold runs out in 20 s: nothing free
	buyer := s.Client(t, "waitlist-buyer", "")
	payURL := startPaying(t, buyer, ev, "A1")
	if code, err := buyer.Do("POST", payURL+"/pay", nil, nil); err != nil || code != http.StatusSeeOther {
		t.Fatalf("buyer pays: %d %v", code, err)
	}
	holder := s.Client(t, "waitlist-holder", "")
	for _, step := range []struct {
		path string
		body map[string]string
	}{{"/api/booking/request", map[string]string{"event_id": ev}}, {"/api/booking/select-seat", map[string]string{"event_id": ev, "seat_id": "A2"}}} {
		if code, err := holder.Do("POST", step.path, step.body, nil); err != nil || code != http.StatusOK {
			t.Fatalf("holder %s: %d %v", step.path, code, err)
		}
	}
	waitAPI(t, "A1 sold", func() bool {
		var e struct {
			Counts struct{ Sold int } `json:"counts"`
		}
		code, err := buyer.Do("GET", "/api/events/"+ev, nil, &e)
		return err == nil && code == 200 && e.Counts.Sold == 1
	})

	p := b.tab(t, "")
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("the waitlist offered", 10*time.Second,
		`shown("#panel-join") && shown("#waitlist-box") && text("#waitlist-title") === "Sold out. Join the waitlist" && shown("#waitlist-join")`)
	p.shot("70-waitlist-offered")
	p.do("click Join the waitlist", chromedp.Click(chromedp.ID("waitlist-join")))
	p.waitFor("on the waitlist at number 1", 10*time.Second,
		`shown("#waitlist-box") && text("#waitlist-status") === "You are number 1 on the waitlist." && !shown("#waitlist-join")
		 && text("#waitlist-eta").startsWith("How long it takes is unknown")
		 && !shown("#panel-join") && $("#announce").textContent.includes("number 1 on the waitlist")`)
	p.shot("71-on-the-waitlist")

	// the holder's time runs out: A2 is offered to the page's fan
	p.waitFor("the offer with its countdown", 60*time.Second,
		`shown("#panel-offer") && text("#offer-seats") === "A2" && /^(1 min \d+ s|\d+ s)$/.test(text("#offer-countdown"))
		 && $("#alert").textContent.startsWith("A seat is free for you") && document.activeElement === $("#offer-title")
		 && !shown("#waitlist-box")`)
	p.shot("72-offer")
	p.do("click Accept and pay", chromedp.Click(chromedp.ID("offer-accept")))
	p.waitFor("the seat panel with A2 held", 10*time.Second,
		`shown("#panel-turn") && $('#seatmap button[data-seat="A2"]') && $('#seatmap button[data-seat="A2"]').dataset.status === "mine"
		 && !$("#pay").disabled && text("#pay") === "Pay for seat A2"`)
	p.shot("73-offer-accepted")
	p.do("click Pay", chromedp.Click(chromedp.ID("pay")))
	p.waitFor("sandbox checkout", 10*time.Second, `page.includes("Sandbox checkout") && !!$('form[action$="/pay"] button')`)
	p.do("click the sandbox's Pay", chromedp.Click(chromedp.CSS(`form[action$="/pay"] button`)))
	p.waitFor("confirmation", 15*time.Second,
		`document.body.dataset.result === "completed" && shown("#panel-done") && text("#done-text").includes("A2")`)
	p.shot("74-waitlist-confirmation")

	// a declined offer goes to the next fan
	holder2 := s.Client(t, "waitlist-holder-2", "")
	for _, step := range []struct {
		path string
		body map[string]string
	}{{"/api/booking/request", map[string]string{"event_id": ev2}}, {"/api/booking/select-seat", map[string]string{"event_id": ev2, "seat_id": "A1"}}} {
		if code, err := holder2.Do("POST", step.path, step.body, nil); err != nil || code != http.StatusOK {
			t.Fatalf("holder %s: %d %v", step.path, code, err)
		}
	}
	q := b.tab(t, "")
	q.do("open the second event", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev2))
	q.waitFor("the waitlist offered", 10*time.Second, `shown("#waitlist-join")`)
	q.do("click Join the waitlist", chromedp.Click(chromedp.ID("waitlist-join")))
	q.waitFor("number 1", 10*time.Second, `text("#waitlist-status") === "You are number 1 on the waitlist."`)
	next := s.Client(t, "waitlist-next", "")
	if code, err := next.Do("POST", "/api/events/"+ev2+"/waitlist", nil, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("next fan joins the waitlist: %d %v", code, err)
	}
	if code, err := holder2.Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev2}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("holder cancels: %d %v", code, err)
	}
	q.waitFor("the offer", 15*time.Second, `shown("#panel-offer") && text("#offer-seats") === "A1"`)
	q.do("click Decline", chromedp.Click(chromedp.ID("offer-decline")))
	q.waitFor("declined", 10*time.Second, `shown("#panel-done") && text("#done-title") === "Offer declined"`)
	q.shot("75-offer-declined")
	waitAPI(t, "the next fan offered A1", func() bool {
		var w struct {
			State      string   `json:"state"`
			OfferSeats []string `json:"offer_seats"`
		}
		code, err := next.Do("GET", "/api/events/"+ev2+"/waitlist", nil, &w)
		return err == nil && code == 200 && w.State == "offered" && len(w.OfferSeats) == 1 && w.OfferSeats[0] == "A1"
	})
	p.noExceptions()
	q.noExceptions()
}
