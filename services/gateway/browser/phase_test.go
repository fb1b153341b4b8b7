package browser

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// TestPhaseSchedulePage: the event page lists the event's scheduled
// phases, each with its window and who may join, the current one marked,
// and counts down to the next boundary. The first phase starts 20 s after
// the schedule is saved: the countdown says so without being announced
// each second, reaches zero, the start is announced and the page reads
// the event again, marking the presale on now and counting down to its
// end. axe-core on the states, no uncaught exception.
func TestPhaseSchedulePage(t *testing.T) {
	chromium, axeJS, out := browserSetup(t, "browser-phases")
	s := stacktest.Start(t, stacktest.Options{
		LogDir:   filepath.Join(out, "logs"),
		Services: []string{stacktest.Gateway},
	})
	const ev = "phase-page"
	admin := s.Client(t, "phase-admin", auth.RoleAdmin)
	if code, err := admin.Do("POST", "/api/admin/events", map[string]any{"id": ev, "name": "Browser Test Phases",
		"capacity": 2, "rows": 1, "seats_per_row": 4}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create the event: %d %v", code, err)
	}
	t0 := time.Now().Add(20 * time.Second)
	at := func(h int) string { return t0.Add(time.Duration(h) * time.Hour).UTC().Format(time.RFC3339) }
	if code, err := admin.Do("PUT", "/api/admin/events/"+ev+"/phases", map[string]any{"phases": []map[string]any{
		{"id": "fanclub", "name": "Fan-club presale", "starts_at": at(0), "ends_at": at(1), "audience": "code"},
		{"id": "verified", "name": "Verified fans", "starts_at": at(1), "ends_at": at(2), "audience": "registered"},
		{"id": "general", "name": "General sale", "starts_at": at(2), "ends_at": at(3), "audience": "public"}}}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("set the schedule: %d %v", code, err)
	}
	b := newBrowser(t, chromium, out, axeJS)
	p := b.tab(t, keepSaid)
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("the schedule, the presale's start counted down", 10*time.Second,
		`shown("#schedule") && document.querySelectorAll("#schedule-list li").length === 3
		 && text("#schedule-list li:nth-child(1)").includes("Fan-club presale") && text("#schedule-list li:nth-child(1)").includes("code required")
		 && !document.querySelector("#schedule-list li[aria-current]")
		 && text("#schedule-list li:nth-child(3)").includes("open to everyone")
		 && /^Fan-club presale opens in \d+ s$/.test(text("#schedule-countdown"))
		 && $("#schedule-countdown").getAttribute("aria-live") === null`)
	p.shot("90-phase-schedule")
	p.waitFor("the start announced once, the presale on now, its end counted down", 60*time.Second,
		`$("#schedule-list li:nth-child(1)").getAttribute("aria-current") === "true" && text("#schedule-list li:nth-child(1)").endsWith("(on now)")
		 && $("#schedule-list li:nth-child(3)").getAttribute("aria-current") === null
		 && text("#phase-note").includes("fanclub") && text("#phase-note").includes("access code")
		 && text("#schedule-countdown").startsWith("Fan-club presale ends in ")
		 && window.__said.filter((s) => s === "Fan-club presale is open now.").length === 1
		 && !window.__said.some((s) => s.includes("presale opens in"))`)
	p.shot("90-phase-on-now")

	// a fan registers for the verified-fans phase and is selected: the
	// page says when their part of the sale opens (the phase's start)
	window := func(closes time.Duration) {
		t.Helper()
		now := time.Now()
		if code, err := admin.Do("PUT", "/api/admin/events/"+ev+"/registration", map[string]any{"phase": "verified",
			"opens_at": now.Add(-time.Hour).UTC().Format(time.RFC3339), "closes_at": now.Add(closes).UTC().Format(time.RFC3339)}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("set the registration window: %d %v", code, err)
		}
	}
	window(time.Hour)
	p.do("reload", chromedp.Reload())
	p.waitFor("registration open", 10*time.Second, `shown("#registration") && shown("#register")`)
	p.do("click Register", chromedp.Click(chromedp.ID("register")))
	p.waitFor("registered", 10*time.Second, `text("#reg-state").includes("You are registered")`)
	window(-time.Second)
	if code, err := admin.Do("POST", "/api/admin/events/"+ev+"/registration/draw", map[string]any{"method": "draw", "count": 1}, nil); err != nil ||
		code != http.StatusOK {
		t.Fatalf("draw: %d %v", code, err)
	}
	p.do("reload", chromedp.Reload())
	p.waitFor("selected, with the phase's start", 10*time.Second,
		`text("#reg-state").startsWith("You were selected: your sale opens ") && !shown("#register")`)
	p.shot("91-phase-selected")
}
