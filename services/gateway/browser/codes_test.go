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
