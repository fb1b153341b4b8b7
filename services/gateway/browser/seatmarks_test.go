package browser

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// heldAndKilled: seats the organiser holds back or killed are shown as
// not for sale, in the legend and in each seat's accessible name, and
// cannot be picked; a release makes them pickable at the next map.
func heldAndKilled(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-marks"
	admin := s.Client(t, "browser-admin-marks", auth.RoleAdmin)
	if code, err := admin.Do("POST", "/api/admin/events", map[string]any{"id": ev, "name": "Browser Test Holds",
		"capacity": 2, "hold_seconds": holdSecs, "rows": 1, "seats_per_row": 6, "no_orphan_rule": false}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create the event: %d %v", code, err)
	}
	mark := func(body map[string]any) {
		t.Helper()
		if code, err := admin.Do("POST", "/api/admin/events/"+ev+"/seat-marks", body, nil); err != nil || code != http.StatusOK {
			t.Fatalf("seat-marks %v: %d %v", body, code, err)
		}
	}
	mark(map[string]any{"action": "hold", "purpose": "sponsor", "seat_ids": []string{"A1", "A2"}})
	mark(map[string]any{"action": "kill", "seat_ids": []string{"A3"}})
	// a wheelchair space, kept for fans who ask for one until its release time
	mark(map[string]any{"action": "allocate", "channel": "wheelchair", "seat_ids": []string{"A5"},
		"release_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})

	p := b.tab(t, "")
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("event page", 10*time.Second, `shown("#panel-join")`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	seat := func(id string) string { return fmt.Sprintf(`$('#seatmap button[data-seat=%q]')`, id) }
	p.waitFor("held and killed seats not for sale, in the legend and the names", 15*time.Second,
		`shown("#panel-turn") && text(".legend").includes("held back, not for sale") && text(".legend").includes("not for sale")
		 && `+seat("A1")+`.dataset.status === "reserved" && `+seat("A3")+`.dataset.status === "killed"
		 && `+seat("A1")+`.getAttribute("aria-label") === "A1, not for sale, held back by the organiser"
		 && `+seat("A3")+`.getAttribute("aria-label") === "A3, not for sale"
		 && `+seat("A1")+`.getAttribute("aria-disabled") === "true" && `+seat("A3")+`.getAttribute("aria-disabled") === "true"
		 && `+seat("A4")+`.dataset.status === "available"
		 && text(".legend").includes("wheelchair space or companion seat") && `+seat("A5")+`.dataset.status === "accessible"
		 && `+seat("A5")+`.getAttribute("aria-label") === "wheelchair space, A5, kept for fans who need it: tick the checkbox to pick it"
		 && `+seat("A5")+`.getAttribute("aria-disabled") === "true"`)
	p.shot("60-held-and-killed")
	p.do("click A1", chromedp.Click(chromedp.CSS(`#seatmap button[data-seat="A1"]`)))
	p.waitFor("A1 not picked", 5*time.Second,
		`text("#announce").includes("A1 is not for sale") && `+seat("A1")+`.dataset.status === "reserved"`)

	// released: the next map (read after a pick) has it on sale
	mark(map[string]any{"action": "release", "seat_ids": []string{"A1"}})
	p.do("click A4", chromedp.Click(chromedp.CSS(`#seatmap button[data-seat="A4"]`)))
	p.waitFor("A4 held, A1 on sale again", 10*time.Second,
		seat("A4")+`.dataset.status === "mine" && `+seat("A1")+`.dataset.status === "available"`)
	p.do("click A1", chromedp.Click(chromedp.CSS(`#seatmap button[data-seat="A1"]`)))
	p.waitFor("A1 held too", 10*time.Second, seat("A1")+`.dataset.status === "mine" && !shown("#error")`)
	p.shot("61-released-seat-picked")

	// asking for an accessibility seat (no proof): the wheelchair space is pickable
	p.do("tick the accessibility checkbox", chromedp.Click(chromedp.ID("need-access")))
	p.waitFor("A5 free for this fan", 5*time.Second, seat("A5")+`.dataset.status === "available"
		&& `+seat("A5")+`.getAttribute("aria-label") === "wheelchair space, A5, free"`)
	p.do("click A5", chromedp.Click(chromedp.CSS(`#seatmap button[data-seat="A5"]`)))
	p.waitFor("A5 held", 10*time.Second, seat("A5")+`.dataset.status === "mine" && !shown("#error")`)
	p.shot("62-wheelchair-space-picked")
}
