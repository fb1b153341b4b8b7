package browser

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// bestAvailable: "Best available: [count] in [section]" beside the map
// holds seats together with the keyboard; a choice that would leave a
// single seat alone is refused with the seats to take instead, which one
// key press takes; too many seats for a section says what is left.
func bestAvailable(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-best"
	admin := s.Client(t, "browser-admin-best", auth.RoleAdmin)
	if code, err := admin.Do("POST", "/api/admin/events", map[string]any{"id": ev, "name": "Browser Test Best",
		"capacity": 2, "hold_seconds": holdSecs, "max_seats_per_order": 4, "no_orphan_rule": true,
		"sections": []map[string]any{{"name": "Stalls", "rows": 1, "seats_per_row": 6, "price_cents": 5000},
			{"name": "Circle", "rows": 1, "seats_per_row": 6, "price_cents": 3000}}}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create the event: %d %v", code, err)
	}
	if code, err := admin.Do("POST", "/api/admin/events/"+ev+"/seat-marks",
		map[string]any{"action": "kill", "seat_ids": []string{"A3"}}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("kill A3: %d %v", code, err)
	}
	seat := func(id string) string { return fmt.Sprintf(`$('#seatmap button[data-seat=%q]')`, id) }
	mine := func(ids ...string) string {
		js := "true"
		for _, id := range ids {
			js += " && " + seat(id) + `.dataset.status === "mine"`
		}
		return js
	}

	p := b.tab(t, "")
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("event page", 10*time.Second, `shown("#panel-join")`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("best available beside the map", 15*time.Second,
		`shown("#panel-turn") && shown("#best-form") && text("#best-form").includes("Best available")
		 && $("#best-count").options.length === 4 && $("#best-section").options.length === 3`)
	p.shot("70-best-available")

	// two seats, any section, by keyboard: A1-A2 (A4-A6 would leave one)
	p.do("choose 2 seats", chromedp.SetValue(chromedp.ID("best-count"), "2"))
	p.do("focus Find seats", chromedp.Focus(chromedp.ID("best-go")))
	p.do("Enter on Find seats", chromedp.KeyEvent(kb.Enter))
	p.waitFor("A1 and A2 held together", 10*time.Second,
		mine("A1", "A2")+` && text("#announce").includes("Best available: seats A1, A2 are held for you")`)
	p.shot("71-best-two-held")

	// A5 too would leave A4 and A6 alone: refused, with A4-A6 offered
	p.do("click A5", chromedp.Click(chromedp.CSS(`#seatmap button[data-seat="A5"]`)))
	p.waitFor("the orphaning choice refused with a suggestion", 10*time.Second,
		`shown("#suggest") && text("#suggest-text").includes("would leave seats A4, A6 on their own")
		 && text("#suggest-take") === "Take seats A4, A5, A6" && document.activeElement === $("#suggest-take")
		 && `+mine("A1", "A2")+` && `+seat("A5")+`.dataset.status === "available"`)
	p.shot("72-orphan-refused")
	p.do("Enter on Take seats", chromedp.KeyEvent(kb.Enter))
	p.waitFor("the suggested seats held", 10*time.Second,
		mine("A4", "A5", "A6")+` && !shown("#suggest") && `+seat("A1")+`.dataset.status === "available"`)

	// four in the stalls: only two are free together there
	p.do("choose 4 in the stalls", chromedp.Steps(chromedp.SetValue(chromedp.ID("best-count"), "4"),
		chromedp.SetValue(chromedp.ID("best-section"), "Stalls")))
	p.do("click Find seats", chromedp.Click(chromedp.ID("best-go")))
	p.waitFor("what is left said", 10*time.Second,
		`shown("#error") && text("#error").includes("No 4 seats together are left in Stalls; at most 2 together")`)
	p.shot("73-no-adjacent-seats")

	// four in the circle: held, replacing the stalls' seats
	p.do("choose the circle", chromedp.SetValue(chromedp.ID("best-section"), "Circle"))
	p.do("click Find seats", chromedp.Click(chromedp.ID("best-go")))
	p.waitFor("B1-B4 held", 10*time.Second,
		mine("B1", "B2", "B3", "B4")+` && !shown("#error") && `+seat("A4")+`.dataset.status === "available"`)
	p.shot("74-best-in-a-section")
}
