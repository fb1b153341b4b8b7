package browser

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// providerTiming re-reads the event often (the room and the queue learn of
// an outage from the event's details) and keeps everything the polite
// live region says in window.__said.
const providerTiming = `window.BOXOFFICE_TIMING = { roomEventRefreshMS: 300, eventRefreshMS: 300 };
` + keepSaid

// keepSaid keeps everything the polite live region says in window.__said.
const keepSaid = `window.__said = [];
document.addEventListener("DOMContentLoaded", () => {
	const a = document.getElementById("announce");
	new MutationObserver(() => { if (a.textContent) window.__said.push(a.textContent); })
		.observe(a, { childList: true, characterData: true, subtree: true });
});`

// providerOutage: a fan gets their turn (pushed over the socket), a second
// waits in the queue; an operator declares the payment provider degraded.
// The fan in the room reads "The payment provider has a problem. Your
// seats are kept for you; the timer is paused." in a polite live region,
// hears it announced, and the timer stands still; the fan in the queue
// reads and hears that admissions are paused. On recovery both pages
// resume by themselves: the notice goes, the recovery is announced, the
// timer runs again. axe-core runs on each state.
func providerOutage(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-provider"
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Browser Test Provider", Rows: 1, SeatsPerRow: 4,
		Capacity: 1, HoldSeconds: holdSecs, GraceSeconds: 5})
	gw := s.GatewayURL()
	admin := s.Client(t, "browser-admin", auth.RoleAdmin)
	declare := func(degraded bool) {
		t.Helper()
		if code, err := admin.Do("PUT", "/api/admin/provider", map[string]bool{"degraded": degraded}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("declare degraded=%v: %d %v", degraded, code, err)
		}
	}
	t.Cleanup(func() { declare(false) }) // the next subtests' events run

	in := b.tab(t, providerTiming)
	in.do("open the event page", chromedp.Navigate(gw+"/?event_id="+ev))
	in.waitFor("event page", 10*time.Second, `shown("#panel-join") && document.body.dataset.mode === "live"`)
	in.do("click Join", chromedp.Click(chromedp.ID("join")))
	in.waitFor("your turn", 15*time.Second, `shown("#panel-turn") && /\d/.test(text("#countdown"))`)
	queued := b.tab(t, providerTiming)
	queued.do("open the event page", chromedp.Navigate(gw+"/?event_id="+ev))
	queued.waitFor("event page", 10*time.Second, `shown("#panel-join")`)
	queued.do("click Join", chromedp.Click(chromedp.ID("join")))
	queued.waitFor("waiting", 10*time.Second, `shown("#panel-waiting") && text("#position") === "1"`)

	declare(true)
	const paused = "The payment provider has a problem. Your seats are kept for you; the timer is paused."
	in.waitFor("the paused notice, announced, the timer paused", 10*time.Second,
		`shown("#provider") && text("#provider") === `+strconv.Quote(paused)+`
		 && $("#provider").getAttribute("aria-live") === "polite" && window.__said.includes(`+strconv.Quote(paused)+`)
		 && text("#countdown").endsWith("(paused)")`)
	in.shot("70-provider-paused-room")
	left := in.str(`text("#countdown")`)
	time.Sleep(2500 * time.Millisecond)
	if now := in.str(`text("#countdown")`); now != left {
		t.Errorf("the paused timer moved: %q, then %q", left, now)
	}
	queued.waitFor("admissions paused, announced", 10*time.Second,
		`shown("#provider") && text("#provider").includes("admissions paused")
		 && window.__said.some((s) => s.includes("admissions paused")) && text("#position") === "1"`)
	queued.shot("71-provider-paused-queue")

	declare(false)
	in.waitFor("the notice gone, the recovery announced, the timer running", 10*time.Second,
		`!shown("#provider") && window.__said.includes("The payment provider is back. Your timer runs again.")
		 && /\d/.test(text("#countdown")) && !text("#countdown").includes("paused")`)
	in.shot("72-provider-recovered-room")
	queued.waitFor("admissions resumed, announced", 10*time.Second,
		`!shown("#provider") && window.__said.includes("Admissions resumed.")`)
	queued.shot("73-provider-recovered-queue")
	in.noExceptions()
	queued.noExceptions()
}
