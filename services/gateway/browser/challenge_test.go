package browser

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// TestJoinChallengePage: an event with challenge "pow" shows the ALTCHA
// widget (the vendored npm build) before the join; pressing Join solves
// the gateway's challenge in the browser's workers and joins with the
// payload (the gateway refuses a join without one); ticking the box with
// the keyboard first works too. axe-core on each state, no uncaught
// exception, no Content-Security-Policy violation.
func TestJoinChallengePage(t *testing.T) {
	chromium, axeJS, out := browserSetup(t, "browser-challenge")
	s := stacktest.Start(t, stacktest.Options{
		LogDir:   filepath.Join(out, "logs"),
		Services: []string{stacktest.Notifier, stacktest.Gateway},
		// a real proof of work, small enough for a loaded test machine
		ServiceEnv: map[string]map[string]string{stacktest.Gateway: {"CHALLENGE_MAX_NUMBER": "20000"}},
	})
	const ev = "show-pow"
	admin := s.Client(t, "challenge-admin", auth.RoleAdmin)
	if code, err := admin.Do("POST", "/api/admin/events", map[string]any{"id": ev, "name": "Browser Test Challenge",
		"rows": 2, "seats_per_row": 4, "capacity": 5, "hold_seconds": 300, "challenge": "pow"}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, err)
	}
	// without the widget's payload the gateway refuses the join
	var refusal struct {
		Code string `json:"code"`
	}
	if code, err := s.Client(t, "no-widget", "").Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, &refusal); err != nil ||
		code != http.StatusForbidden || refusal.Code != "challenge_required" {
		t.Fatalf("join without a solution: %d %v %+v", code, err, refusal)
	}

	b := newBrowser(t, chromium, out, axeJS)
	b.tab(t, "").selfTestAxe()
	widget := `shown("#panel-join") && shown("#challenge") && !!$("altcha-widget input[type=checkbox]")`

	// Join pressed at once: the widget solves, then the join goes through.
	p := b.tab(t, cspWatch)
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("the widget before the join", 15*time.Second, widget)
	p.shot("60-challenge-before-join")
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("admitted after solving the challenge", 90*time.Second, `shown("#panel-turn")`)
	p.shot("61-challenge-joined")
	p.noExceptions()
	p.noCSPViolations()

	// The box ticked with the keyboard first, then Join.
	q := b.tab(t, cspWatch)
	q.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	q.waitFor("the widget before the join", 15*time.Second, widget)
	q.str(`($("altcha-widget input[type=checkbox]").focus(), "")`)
	q.do("Space on the widget's box", chromedp.KeyEvent(" "))
	q.waitFor("the widget verified", 90*time.Second, `$("altcha-widget").getState() === "verified"`)
	q.shot("62-challenge-verified")
	q.do("Tab to Join and press Enter", chromedp.Steps(chromedp.Focus(chromedp.ID("join")), chromedp.KeyEvent(kb.Enter)))
	q.waitFor("admitted with the ticked box's solution", 30*time.Second, `shown("#panel-turn")`)
	q.noExceptions()
	q.noCSPViolations()

	var e struct {
		Counts struct {
			Active int `json:"active"`
		} `json:"counts"`
	}
	if code, err := admin.Do("GET", "/api/events/"+ev, nil, &e); err != nil || code != http.StatusOK || e.Counts.Active != 2 {
		t.Fatalf("event after two joins: %d %v %+v", code, err, e)
	}
}

// cspWatch records every Content-Security-Policy violation of the
// tab's documents (the securitypolicyviolation event) in window.cspViolations.
const cspWatch = `window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) =>
	window.cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sourceFile || "") + ":" + e.lineNumber));`

// noCSPViolations fails the test for every Content-Security-Policy
// violation the tab recorded (a widget's inline style or script, a worker
// from elsewhere): the page must work under the gateway's policy as is.
func (p *page) noCSPViolations() {
	p.t.Helper()
	if v := p.str(`JSON.stringify(window.cspViolations || "not watched")`); v != "[]" {
		p.t.Errorf("Content-Security-Policy violations: %s", v)
	}
}
