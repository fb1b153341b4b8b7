package browser

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// accessCode: a presale's page says the sale is for code holders, and its
// fan types an access code beside Join; a wrong
// one is refused beside the field (its error tied to it, marked invalid,
// said aloud, the focus back on it) and nothing joins; the right one joins.
func accessCode(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-codes"
	admin := s.Client(t, "browser-admin-codes", auth.RoleAdmin)
	if code, err := admin.Do("POST", "/api/admin/events", map[string]any{"id": ev, "name": "Browser Test Presale",
		"capacity": 2, "hold_seconds": holdSecs, "rows": 1, "seats_per_row": 6}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create the event: %d %v", code, err)
	}
	var gen struct {
		Codes []string `json:"codes"`
	}
	if code, err := admin.Do("POST", "/api/admin/events/"+ev+"/codes", map[string]any{"count": 1}, &gen); err != nil ||
		code != http.StatusCreated || len(gen.Codes) != 1 {
		t.Fatalf("generate a code: %d %v %v", code, err, gen)
	}

	if code, err := admin.Do("PUT", "/api/admin/events/"+ev+"/phase", map[string]any{"phase": "fan-club", "audience": "code"}, nil); err != nil ||
		code != http.StatusOK {
		t.Fatalf("set the phase: %d %v", code, err)
	}

	p := b.tab(t, "")
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("event page with the phase and the code field", 10*time.Second,
		`shown("#panel-join") && $("label[for=code]") !== null && shown("#code")
		 && shown("#phase-note") && text("#phase-note").includes("fan club, for access code holders")`)
	p.do("type a wrong code", chromedp.SendKeys(chromedp.ID("code"), "WRONG-CODE-0000"))
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("the wrong code refused beside the field", 10*time.Second,
		`shown("#code-error") && text("#code-error").includes("not valid for this event")
		 && $("#code").getAttribute("aria-invalid") === "true" && document.activeElement === $("#code")
		 && text("#alert").includes("not valid for this event") && shown("#panel-join")`)
	p.shot("70-access-code-refused")
	p.do("put the right code in the field", chromedp.SetValue(chromedp.ID("code"), gen.Codes[0]))
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("joined with the code", 15*time.Second,
		`shown("#panel-turn") && !shown("#code-error") && $("#code").getAttribute("aria-invalid") === null`)
	p.shot("71-access-code-joined")
}

// registration: the event page shows the registration window and a
// Register button while it is open; registering says so (a live region);
// after the draw the page says the fan was selected, and in the
// registered phase they join.
func registration(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-registration"
	admin := s.Client(t, "browser-admin-registration", auth.RoleAdmin)
	if code, err := admin.Do("POST", "/api/admin/events", map[string]any{"id": ev, "name": "Browser Test Registration",
		"capacity": 2, "hold_seconds": holdSecs, "rows": 1, "seats_per_row": 6}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create the event: %d %v", code, err)
	}
	window := func(closes time.Duration) {
		t.Helper()
		now := time.Now()
		if code, err := admin.Do("PUT", "/api/admin/events/"+ev+"/registration", map[string]any{"phase": "verified-fans",
			"opens_at": now.Add(-time.Hour).UTC().Format(time.RFC3339), "closes_at": now.Add(closes).UTC().Format(time.RFC3339)}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("set the window: %d %v", code, err)
		}
	}
	window(time.Hour)

	p := b.tab(t, "")
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("the registration and its button", 10*time.Second,
		`shown("#registration") && text("#reg-window").includes("verified fans sale") && shown("#register")
		 && text("#reg-state").includes("not registered yet")`)
	p.shot("72-registration-open")
	p.do("click Register", chromedp.Click(chromedp.ID("register")))
	p.waitFor("registered", 10*time.Second, `text("#reg-state").includes("You are registered") && !shown("#register")`)
	p.shot("73-registered")

	window(-time.Second)
	if code, err := admin.Do("POST", "/api/admin/events/"+ev+"/registration/draw", map[string]any{"method": "draw", "count": 1}, nil); err != nil ||
		code != http.StatusOK {
		t.Fatalf("draw: %d %v", code, err)
	}
	if code, err := admin.Do("PUT", "/api/admin/events/"+ev+"/phase", map[string]any{"phase": "verified-fans", "audience": "registered"}, nil); err != nil ||
		code != http.StatusOK {
		t.Fatalf("set the phase: %d %v", code, err)
	}
	p.do("reload", chromedp.Reload())
	p.waitFor("selected", 10*time.Second, `text("#reg-state").includes("You were selected") && !shown("#register") && shown("#panel-join")
		 && text("#phase-note").includes("verified fans, for the registered fans who were selected")`)
	p.shot("74-selected")
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("joined in the registered phase", 15*time.Second, `shown("#panel-turn")`)
}
