package browser

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

func TestMain(m *testing.M) { stacktest.Main(m) }

const (
	eventID   = "show"
	eventName = "Browser Test Live"
	rows      = 3
	perRow    = 8
	holdSecs  = 300
)

// TestJourney is the web pages in a real browser, against every service
// running as a process (one stack for all the subtests, which run in
// order). Each step asserts what the page shows, saves a screenshot, and
// runs axe-core on the page (0 serious or critical violations).
func TestJourney(t *testing.T) {
	chromium, axeJS, out := browserSetup(t, "browser")

	s := stacktest.Start(t, stacktest.Options{
		LogDir: filepath.Join(out, "logs"),
		// PASS_KEYS: queued joins carry receipts (chance, joinReceiptShown)
		Env: map[string]string{"SAFETY_NET_INTERVAL": "10m", "PASS_KEYS": "browser:mMh0aKc4ffs7jEyXs0v5Cz4uF0RIDyq3n6x7mhS3bGo"},
		ServiceEnv: map[string]map[string]string{
			stacktest.Notifier: {"POSITION_INTERVAL": "500ms"},
		},
	})
	b := newBrowser(t, chromium, out, axeJS)
	b.main = b.tab(t, "") // lives across subtests: stale-token reuses its user
	b.main.selfTestAxe()

	// Each subtest has its own event and its own browser profile (user).
	ok := t.Run("websocket", func(t *testing.T) { journeyWebSocket(t, s, b) })
	t.Run("http-only", func(t *testing.T) { journeyHTTPOnly(t, s, b) })
	t.Run("progress-polling", func(t *testing.T) { progressPolling(t, s, b) })
	t.Run("chance", func(t *testing.T) { chanceOfATicket(t, s, b) })
	if ok {
		t.Run("stale-token", func(t *testing.T) { staleToken(t, s, b) })
	}
	t.Run("stalled-socket", func(t *testing.T) { stalledSocket(t, s, b) })
	t.Run("late-payment", func(t *testing.T) { latePayment(t, s, b) })
	t.Run("leave-and-release", func(t *testing.T) { leaveAndRelease(t, s, b) })
	t.Run("large-map-phone", func(t *testing.T) { largeMapPhone(t, s, b) })
	t.Run("multi-seat", func(t *testing.T) { multiSeat(t, s, b) })
	t.Run("held-and-killed", func(t *testing.T) { heldAndKilled(t, s, b) })
	t.Run("best-available", func(t *testing.T) { bestAvailable(t, s, b) })
	t.Run("prequeue", func(t *testing.T) { prequeueCountdown(t, s, b) })
	t.Run("provider-outage", func(t *testing.T) { providerOutage(t, s, b) })
	t.Run("access-code", func(t *testing.T) { accessCode(t, s, b) })
	t.Run("registration", func(t *testing.T) { registration(t, s, b) })
	t.Run("waitlist", func(t *testing.T) { waitlistJourney(t, s, b) })
}

// prequeueCountdown: joining in an event's pre-queue shows a
// countdown to the draw instead of a position; at the sales start the page
// asks for its place, and while the draw waits for the beacon round it is
// committed to it says the draw is being made (no provisional place);
// once the operator supplies the round's value the draw is made at once
// (the safety net is slowed: the promotion the value asks for makes it)
// and the fan, first in the draw of one, is admitted.
func prequeueCountdown(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-prequeue"
	// the pre-queue opens 10 s from now, after the round is committed
	const early = 30
	start := time.Now().Add((early + 10) * time.Second).UTC().Truncate(time.Second)
	admin := s.Client(t, "browser-admin", auth.RoleAdmin)
	if code, err := admin.Do("POST", "/api/admin/events", map[string]any{"id": ev, "name": "Browser Test Pre-queue",
		"rows": 2, "seats_per_row": 4, "capacity": 1, "sales_start": start.Format(time.RFC3339), "early_join_seconds": early}, nil); err != nil || code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, err)
	}
	beacon := "/api/admin/events/" + ev + "/beacon"
	if code, err := admin.Do("PUT", beacon, map[string]any{"round": 7, "source": "NIST beacon v2"}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("beacon round: %d %v", code, err)
	}
	time.Sleep(time.Until(start.Add(-early*time.Second + time.Second)))
	p := b.tab(t, "")
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("event page", 10*time.Second, `shown("#panel-join")`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("pre-queued: a countdown, no position, the beacon round named", 10*time.Second,
		`shown("#panel-waiting") && text("#position") === "drawn at the start" && /^the draw is in \d\d:\d\d /.test(text("#eta"))
		 && shown("#draw-note") && text("#draw-note").includes("round 7 of the public randomness beacon NIST beacon v2: a number nobody")
		 && document.querySelector("#draw-note a").getAttribute("href") === "/api/events/`+ev+`/draw"`)
	p.shot("45-prequeue-countdown")
	if wait := time.Until(start); wait > 0 {
		time.Sleep(wait)
	}
	p.waitFor("started, the draw waits for the beacon", 20*time.Second,
		`shown("#panel-waiting") && text("#position") === "being drawn" && /^known once the draw is made/.test(text("#eta"))
		 && shown("#draw-note")`)
	p.shot("46-prequeue-being-drawn")
	if code, err := admin.Do("PUT", beacon, map[string]any{"round": 7, "value": strings.Repeat("5a", 32)}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("beacon value: %d %v", code, err)
	}
	p.waitFor("drawn and admitted", 20*time.Second, `shown("#panel-turn")`)
}

// journeyWebSocket is one user's journey with the notifier reachable: the
// room (capacity 1) is full when they join, so they wait at position 1;
// the holder cancels; "your turn" arrives over the notifier's WebSocket
// (the slot-released consumer promotes them: the safety net is slowed to
// 10 minutes so that it cannot); they pick a seat with the keyboard, pay
// at the sandbox's hosted checkout, come back and see the confirmation.
func journeyWebSocket(t *testing.T, s *stacktest.Stack, b *browser) {
	s.CreateEvent(t, stacktest.Event{ID: eventID, Name: eventName, Rows: rows, SeatsPerRow: perRow,
		Capacity: 1, HoldSeconds: holdSecs, GraceSeconds: 5})
	gw, sandbox := s.GatewayURL(), s.URL(stacktest.PaymentSandbox)
	b.journey = eventID // the stale-token subtest reuses this tab

	// The holder takes the room's only slot.
	holder := s.Client(t, "holder", "")
	var join struct {
		Status string `json:"status"`
	}
	if code, err := holder.Do("POST", "/api/booking/request", map[string]string{"event_id": eventID}, &join); err != nil || code != http.StatusOK || join.Status != "active" {
		t.Fatalf("holder join: %d %v %+v, want active", code, err, join)
	}

	// A sold-out event: its one seat bought through the API and the sandbox.
	s.CreateEvent(t, stacktest.Event{ID: "show-soldout", Name: "Browser Test Sold Out", Rows: 1, SeatsPerRow: 1,
		Capacity: 1, HoldSeconds: holdSecs})
	buyer := s.Client(t, "buyer", "")
	payURL := startPaying(t, buyer, "show-soldout", "A1")
	if code, err := buyer.Do("POST", payURL+"/pay", nil, nil); err != nil || code != http.StatusSeeOther {
		t.Fatalf("buyer pays at the sandbox: %d %v", code, err)
	}
	waitAPI(t, "the sold-out event's seat sold", func() bool {
		var ev struct {
			Counts struct{ Available, Held, Sold int } `json:"counts"`
		}
		code, err := buyer.Do("GET", "/api/events/show-soldout", nil, &ev)
		return err == nil && code == 200 && ev.Counts.Sold == 1
	})

	p := b.main
	p.t = t

	// 1. The event list shows the event with its free seats and price, and
	// the sold-out event with a disabled button.
	p.do("open the event list", chromedp.Navigate(gw+"/"))
	p.waitFor("event list", 10*time.Second, fmt.Sprintf(
		`shown("#view-events") && page.includes(%q) && page.includes("%d of %d seats left") && page.includes("50.00 per seat")
		 && [...document.querySelectorAll("#events li")].some((li) => li.innerText.includes("Browser Test Sold Out")
		    && li.querySelector("button") && li.querySelector("button").disabled && li.querySelector("button").innerText === "Sold out")
		 && !shown("#more")`,
		eventName, rows*perRow, rows*perRow))
	p.shot("01-event-list")

	// 2. Get tickets opens the event page (joining needs a confirm there);
	// it connects to the notifier; the user is not queued.
	p.do("click Get tickets", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[data-event=%q]`, eventID))))
	p.waitFor("event page, not joined, notifier live", 10*time.Second, fmt.Sprintf(
		`shown("#panel-join") && text("#event-name") === %q && document.body.dataset.mode === "live"
		 && text("#conn-mode") === "Live updates" && /updated/.test(text("#conn-age")) && shown("#join")`, eventName))
	p.shot("02-event-page")
	user := p.str(`text("#who")`)
	if !strings.HasPrefix(user, "web-") {
		t.Fatalf("page user id %q, want web-…", user)
	}
	me := s.Client(t, user, "")

	// 3. Joining a full room: the waiting room at position 1, with a queue
	// reference and an announcement for screen readers.
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("waiting room at position 1", 10*time.Second,
		`shown("#panel-waiting") && page.includes("You are in the waiting room") && text("#position") === "1" && !shown("#panel-turn")
		 && /^show-\d+$/.test(text("#ref")) && $("#announce").textContent.includes("number 1 in the queue")
		 && /^(less than a minute|about \d+–\d+ (min|h) \(around .+\)|waiting for the first admissions…)$/.test(text("#eta"))`)
	p.shot("03-waiting-room")
	var pos position
	if code, err := me.Do("GET", "/api/booking/position?event_id="+eventID, nil, &pos); err != nil || code != 200 || pos.Status != "queued" || pos.Position != 1 {
		t.Fatalf("API position of the browser's user: %d %v %+v, want queued at 1", code, err, pos)
	}
	p.phone("03b-waiting-room-phone")

	// 4. The holder cancels; "your turn" is pushed to the same page (no
	// reload: a marker set on the window survives), with the hold's
	// countdown, the seat map, the tab title and an assertive announcement.
	p.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__noReload = true`))
	var cancel struct {
		From string `json:"from"`
	}
	if code, err := holder.Do("POST", "/api/booking/cancel", map[string]string{"event_id": eventID}, &cancel); err != nil || code != 200 || cancel.From != "active" {
		t.Fatalf("holder cancel: %d %v %+v", code, err, cancel)
	}
	p.waitFor("your turn with the seat map", 15*time.Second, fmt.Sprintf(
		`window.__noReload === true && shown("#panel-turn") && !shown("#panel-waiting") && text("#turn-title") === "It's your turn!"
		 && /^[45] min \d+ s$/.test(text("#countdown")) && document.title.includes("Your turn")
		 && $("#alert").textContent.startsWith("It's your turn!") && document.activeElement === $("#turn-title")
		 && document.querySelectorAll('#seatmap button[data-status="available"]').length === %d
		 && document.querySelectorAll('#seatmap button[tabindex="0"]').length === 1`, rows*perRow))
	p.shot("04-your-turn")
	p.phone("05-seat-map-phone")

	// 5. Picking a seat with the keyboard: Tab into the grid (one stop),
	// arrows to B3, Enter holds it; focus stays on B3; one Tab reaches Pay.
	p.do("focus the seat grid", chromedp.Evaluate[chromedp.Void](`document.querySelector('#seatmap button[tabindex="0"]').focus()`))
	p.waitFor("A1 focused", 5*time.Second, `document.activeElement && document.activeElement.dataset.seat === "A1"`)
	p.do("arrow keys to B3", chromedp.Steps(chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight)))
	p.waitFor("B3 focused and the only tab stop", 5*time.Second,
		`document.activeElement.dataset.seat === "B3" && $('#seatmap button[tabindex="0"]') === document.activeElement`)
	p.do("Enter on B3", chromedp.KeyEvent(kb.Enter))
	p.waitFor("seat B3 held", 10*time.Second,
		`text("#seat-note") === "Seat B3 is held for you." && $('#seatmap button[data-seat="B3"]').dataset.status === "mine"
		 && $('#seatmap button[data-seat="B3"]').getAttribute("aria-label") === "B3, your seat"
		 && !$("#pay").disabled && text("#pay") === "Pay for seat B3" && !shown("#error")
		 && document.activeElement === $('#seatmap button[data-seat="B3"]')`)
	p.do("Tab to Pay", chromedp.KeyEvent(kb.Tab))
	p.waitFor("Pay focused right after the grid", 5*time.Second, `document.activeElement === $("#pay")`)
	p.shot("06-seat-selected")
	if code, err := me.Do("GET", "/api/booking/position?event_id="+eventID, nil, &pos); err != nil || code != 200 || pos.SeatID != "B3" {
		t.Fatalf("API position after picking B3: %d %v %+v", code, err, pos)
	}
	p.waitFor("the hold's countdown ticking", 5*time.Second, `/^4 min \d+ s$/.test(text("#countdown"))`)

	// 5b. Another fan takes a seat: the map refreshes in place (the same
	// button elements) and the focus stays where it was. The room grows to
	// two so that the other fan is let in.
	p.do("focus B3 and mark C1", chromedp.Evaluate[chromedp.Void](
		`document.querySelector('#seatmap button[data-seat="B3"]').focus(); window.__c1 = document.querySelector('#seatmap button[data-seat="C1"]')`))
	other := s.Client(t, "other-fan", "")
	if code, err := other.Do("POST", "/api/booking/request", map[string]string{"event_id": eventID}, nil); err != nil || code != 200 {
		t.Fatalf("other fan join: %d %v", code, err)
	}
	admin := s.Client(t, "browser-admin", auth.RoleAdmin)
	if code, err := admin.Do("PATCH", "/api/admin/events/"+eventID, map[string]any{"capacity": 2}, nil); err != nil || code != 200 {
		t.Fatalf("grow the room: %d %v", code, err)
	}
	waitAPI(t, "the other fan let in", func() bool {
		var op position
		code, err := other.Do("GET", "/api/booking/position?event_id="+eventID, nil, &op)
		return err == nil && code == 200 && op.Status == "active"
	})
	if code, err := other.Do("POST", "/api/booking/select-seat", map[string]string{"event_id": eventID, "seat_id": "C1"}, nil); err != nil || code != 200 {
		t.Fatalf("other fan picks C1: %d %v", code, err)
	}
	p.waitFor("C1 shown held in place, focus kept on B3", 15*time.Second,
		`$('#seatmap button[data-seat="C1"]').dataset.status === "held" && window.__c1 === $('#seatmap button[data-seat="C1"]')
		 && $('#seatmap button[data-seat="C1"]').getAttribute("aria-label") === "C1, held by another fan"
		 && document.activeElement === $('#seatmap button[data-seat="B3"]')`)
	p.shot("06a-seat-taken-by-another")
	p.do("click the held C1", chromedp.Click(chromedp.CSS(`#seatmap button[data-seat="C1"]`)))
	p.waitFor("C1 refused in words, B3 still mine", 5*time.Second,
		`$("#announce").textContent === "Seat C1 is held by another fan. Pick a free seat."
		 && $('#seatmap button[data-seat="B3"]').dataset.status === "mine" && !shown("#error")`)

	// 6. A reload (or a reconnect) restores the state at once: the turn,
	// the held seat, the countdown.
	p.do("reload", chromedp.Navigate(gw+"/?event_id="+eventID))
	p.waitFor("your turn with B3 held after a reload", 10*time.Second,
		`window.__noReload === undefined && shown("#panel-turn") && /^4 min \d+ s$/.test(text("#countdown"))
		 && $('#seatmap button[data-seat="B3"]').dataset.status === "mine" && text("#seat-note") === "Seat B3 is held for you."
		 && !$("#pay").disabled && text("#pay") === "Pay for seat B3"`)
	p.shot("06b-after-reload")

	// 7. Pay: the sandbox's hosted checkout for this seat.
	p.do("click Pay", chromedp.Click(chromedp.ID("pay")))
	p.waitFor("sandbox checkout", 10*time.Second, fmt.Sprintf(
		`location.origin === %q && page.includes("Sandbox checkout") && page.includes("seat B3") && page.includes("pending")
		 && !!$('form[action$="/pay"] button')`, sandbox))
	p.shot("07-sandbox-checkout")

	// 8. Paying returns to the event page, which shows the confirmation
	// once the webhook has completed the booking.
	p.do("click the sandbox's Pay", chromedp.Click(chromedp.CSS(`form[action$="/pay"] button`)))
	p.waitFor("confirmation", 15*time.Second, fmt.Sprintf(
		`location.origin === %q && document.body.dataset.result === "completed" && shown("#panel-done")
		 && text("#done-title").startsWith("You're going!") && text("#done-text").includes("seat B3") && !shown("#refund")
		 && !shown("#rejoin")`, gw))
	// the ticket, read back from the ledger (GET /api/orders)
	p.waitFor("the ticket from PostgreSQL", 15*time.Second,
		`shown("#view-event .tickets") && text("#view-event .tickets").includes("Seat B3") && text("#view-event .tickets").includes("order ord_")`)
	p.shot("08-confirmation")
	p.phone("08b-confirmation-phone")
	if code, err := me.Do("GET", "/api/booking/position?event_id="+eventID, nil, &pos); err != nil || code != 200 || pos.Status != "completed" || pos.SeatID != "B3" {
		t.Fatalf("API position after paying: %d %v %+v, want completed with B3", code, err, pos)
	}
	p.noExceptions()
}

// journeyHTTPOnly: the notifier is unreachable from the browser (every
// WebSocket goes to a closed port, a real connection failure). The page
// says it is polling, and the fan still waits, gets their turn, picks a
// seat, pays and sees the confirmation, over HTTP alone.
func journeyHTTPOnly(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-http"
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Browser Test Polling", Rows: 2, SeatsPerRow: 6,
		Capacity: 1, HoldSeconds: holdSecs, GraceSeconds: 5})
	gw, sandbox := s.GatewayURL(), s.URL(stacktest.PaymentSandbox)
	holder := s.Client(t, "holder-http", "")
	if code, err := holder.Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("holder join: %d %v", code, err)
	}
	p := b.tab(t, `(() => {
		const Real = window.WebSocket;
		window.__wsTries = 0;
		window.WebSocket = function (url, protocols) { window.__wsTries++; return new Real("ws://127.0.0.1:9/ws", protocols); };
	})();`)

	p.do("open the event page", chromedp.Navigate(gw+"/?event_id="+ev))
	p.waitFor("event page over HTTP, saying so", 15*time.Second,
		`shown("#panel-join") && document.body.dataset.mode === "polling" && text("#conn-mode").includes("checking for updates")
		 && /updated/.test(text("#conn-age")) && window.__wsTries >= 1`)
	p.shot("10-http-event-page")
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("waiting room over HTTP", 10*time.Second,
		`shown("#panel-waiting") && text("#position") === "1" && document.body.dataset.mode === "polling"`)
	p.shot("11-http-waiting")

	if code, err := holder.Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != 200 {
		t.Fatalf("holder cancel: %d %v", code, err)
	}
	// The poll backs off to 15 s while nothing changes.
	p.waitFor("your turn, found by polling", 40*time.Second,
		`shown("#panel-turn") && document.querySelectorAll('#seatmap button[data-status="available"]').length === 12
		 && document.body.dataset.mode === "polling"`)
	p.shot("12-http-your-turn")
	p.do("click seat A2", chromedp.Click(chromedp.CSS(`#seatmap button[data-seat="A2"]`)))
	p.waitFor("seat A2 held", 10*time.Second, `text("#pay") === "Pay for seat A2" && !$("#pay").disabled`)
	p.do("click Pay", chromedp.Click(chromedp.ID("pay")))
	p.waitFor("sandbox checkout", 10*time.Second, fmt.Sprintf(`location.origin === %q && page.includes("seat A2")`, sandbox))
	p.do("click the sandbox's Pay", chromedp.Click(chromedp.CSS(`form[action$="/pay"] button`)))
	p.waitFor("confirmation over HTTP", 40*time.Second, fmt.Sprintf(
		`location.origin === %q && document.body.dataset.result === "completed" && text("#done-text").includes("seat A2")
		 && document.body.dataset.mode === "polling"`, gw))
	p.shot("13-http-confirmation")
	p.noExceptions()
}

// staleToken: a stored token the servers reject (a bookmark opened after
// the token expired, or a token from another deployment) is renewed, not
// retried forever: the page reaches the live socket and the user's state.
func staleToken(t *testing.T, s *stacktest.Stack, b *browser) {
	p := b.main
	p.t = t
	p.do("store a stale token", chromedp.Evaluate[chromedp.Void](
		`localStorage.setItem("bo_token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c3RhbGU")`))
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+b.journey))
	p.waitFor("state and live socket with a renewed token", 20*time.Second,
		`document.body.dataset.result === "completed" && document.body.dataset.mode === "live"
		 && localStorage.getItem("bo_token") !== "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c3RhbGU"`)
	p.shot("20-stale-token-renewed")
	p.noExceptions()
}

// stalledSocket: the socket stays open but stops delivering (a proxy
// that holds the connection): the page's liveness check reads the
// position over HTTP, finds the turn the socket never delivered, and
// replaces the socket.
func stalledSocket(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-stall"
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Browser Test Stall", Rows: 1, SeatsPerRow: 4,
		Capacity: 1, HoldSeconds: holdSecs, GraceSeconds: 5})
	holder := s.Client(t, "holder-stall", "")
	if code, err := holder.Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, nil); err != nil || code != 200 {
		t.Fatalf("holder join: %d %v", code, err)
	}
	// While window.__stall is set, every socket of the tab swallows what
	// the server sends.
	p := b.tab(t, `(() => {
		const Real = window.WebSocket;
		window.__sockets = 0;
		window.WebSocket = function (url, protocols) {
			const ws = new Real(url, protocols);
			window.__sockets++;
			let h = null;
			Object.defineProperty(ws, "onmessage", { set(f) { h = f; }, get() { return h; } });
			ws.addEventListener("message", (m) => { if (!window.__stall && h) h(m); });
			return ws;
		};
	})();`)
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("event page, live", 10*time.Second, `shown("#panel-join") && document.body.dataset.mode === "live"`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("waiting", 10*time.Second, `shown("#panel-waiting") && text("#position") === "1"`)
	p.do("stall the socket", chromedp.Evaluate[chromedp.Void](`window.__stall = true; window.__before = window.__sockets`))
	if code, err := holder.Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != 200 {
		t.Fatalf("holder cancel: %d %v", code, err)
	}
	// Liveness: 15 s of silence (+ up to 5 s jitter), then one HTTP read.
	p.waitFor("the turn found by the liveness check, the socket replaced", 45*time.Second,
		`shown("#panel-turn") && window.__sockets > window.__before`)
	p.shot("25-stalled-socket-turn")
	p.noExceptions()
}

// latePayment: the hold expires while the fan is on the provider's
// checkout; they pay anyway. Back on the site the page says the seat went
// back on sale and that the payment was not used and will be refunded,
// with the amount, and "your tickets" lists the refund due (the ledger's
// order).
func latePayment(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-late"
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Browser Test Late", Rows: 1, SeatsPerRow: 4,
		Capacity: 1, HoldSeconds: 10, GraceSeconds: 1})
	gw, sandbox := s.GatewayURL(), s.URL(stacktest.PaymentSandbox)
	p := b.tab(t, "")
	p.do("open the event page", chromedp.Navigate(gw+"/?event_id="+ev))
	p.waitFor("event page", 10*time.Second, `shown("#panel-join")`)
	me := s.Client(t, p.str(`text("#who")`), "")
	// Join, pick and start paying through the API: quick enough to fit the
	// short hold even on a busy machine.
	p.do("open the checkout", chromedp.Navigate(startPaying(t, me, ev, "A1")))
	p.waitFor("sandbox checkout", 10*time.Second, fmt.Sprintf(`location.origin === %q && page.includes("seat A1")`, sandbox))
	// Wait until the hold (and its grace) expired.
	deadline := time.Now().Add(90 * time.Second)
	for {
		var pos position
		if code, err := me.Do("GET", "/api/booking/position?event_id="+ev, nil, &pos); err == nil && code == 200 && pos.Status == "expired" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hold did not expire within 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.do("click the sandbox's Pay", chromedp.Click(chromedp.CSS(`form[action$="/pay"] button`)))
	p.waitFor("expired, with the refund said", 20*time.Second, fmt.Sprintf(
		`location.origin === %q && document.body.dataset.result === "expired" && shown("#refund")
		 && text("#refund").includes("was not used and will be refunded") && text("#refund").includes("50.00")
		 && shown("#rejoin")`, gw))
	// the ledger recorded the payment as a refund due: "your tickets" says so
	p.waitFor("the refund due from PostgreSQL", 20*time.Second,
		`shown("#view-event .tickets") && text("#view-event .tickets").includes("Refund due (seat A1)")
		 && text("#view-event .tickets").includes("50.00") && !text("#view-event .tickets").includes("Seat A1")`)
	p.shot("30-late-payment-refund")
	p.noExceptions()
}

// leaveAndRelease: Leave the queue and Release my seat, each after a
// confirm step; and a cancel made elsewhere (another tab, the API) updates
// the page.
func leaveAndRelease(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-leave"
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Browser Test Leave", Rows: 2, SeatsPerRow: 4,
		Capacity: 1, HoldSeconds: holdSecs, GraceSeconds: 5})
	gw := s.GatewayURL()
	holder := s.Client(t, "holder-leave", "")
	if code, err := holder.Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, nil); err != nil || code != 200 {
		t.Fatalf("holder join: %d %v", code, err)
	}
	p := b.tab(t, "")
	p.do("open the event page", chromedp.Navigate(gw+"/?event_id="+ev))
	p.waitFor("event page", 10*time.Second, `shown("#panel-join") && document.body.dataset.mode === "live"`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("waiting", 10*time.Second, `shown("#panel-waiting") && text("#position") === "1" && !shown("#paused")`)

	// A pause while waiting is said at once: the socket's position
	// broadcast carries it (the page re-reads the event only once a minute).
	admin := s.Client(t, "browser-admin", auth.RoleAdmin)
	for _, paused := range []bool{true, false} {
		if code, err := admin.Do("PATCH", "/api/admin/events/"+ev, map[string]any{"paused": paused}, nil); err != nil || code != 200 {
			t.Fatalf("pause %v: %d %v", paused, code, err)
		}
		p.waitFor(fmt.Sprintf("paused notice shown: %v", paused), 15*time.Second, fmt.Sprintf(`shown("#paused") === %v`, paused))
		if paused {
			p.shot("39-paused")
		}
	}
	p.do("click Leave", chromedp.Click(chromedp.ID("leave")))
	p.waitFor("leave confirm", 5*time.Second, `shown("#leave-confirm") && document.activeElement === $("#leave-yes")`)
	p.shot("40-leave-confirm")
	p.do("confirm leaving", chromedp.Click(chromedp.ID("leave-yes")))
	p.waitFor("left the queue", 10*time.Second, `shown("#panel-join") && text("#join-note") === "You left the queue."`)

	// The holder leaves: the page's user rejoins and gets the room at once.
	if code, err := holder.Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != 200 {
		t.Fatalf("holder cancel: %d %v", code, err)
	}
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("your turn", 15*time.Second, `shown("#panel-turn") && !!$('#seatmap button[data-seat="A1"]')`)
	p.do("click Release", chromedp.Click(chromedp.ID("release")))
	p.waitFor("release confirm", 5*time.Second, `shown("#release-confirm")`)
	p.shot("41-release-confirm")
	p.do("confirm releasing", chromedp.Click(chromedp.ID("release-yes")))
	p.waitFor("released", 10*time.Second, `shown("#panel-join") && text("#join-note") === "You left the queue."`)

	// Join again, then cancel elsewhere: the socket's cancelled
	// notification tells the page at once (the liveness check over HTTP
	// would, within a minute).
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("your turn again", 15*time.Second, `shown("#panel-turn")`)
	me := s.Client(t, p.str(`text("#who")`), "")
	if code, err := me.Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != 200 {
		t.Fatalf("cancel elsewhere: %d %v", code, err)
	}
	p.waitFor("the page shows the cancel made elsewhere", 8*time.Second,
		`shown("#panel-join") && text("#join-note") === "You left the queue."`)
	p.shot("42-cancelled-elsewhere")
	p.noExceptions()
}

// largeMapPhone: the largest section an event can have (200,000 seats)
// on a phone: only the rows in view are in the DOM; the grid scrolls
// inside its box with the row labels stuck to its left edge; the countdown
// and Pay stay on screen; the keyboard reaches the far corner.
func largeMapPhone(t *testing.T, s *stacktest.Stack, b *browser) {
	// The largest section an event can have: booking.MaxSeats seats.
	const ev, bigRows, bigPerRow = "show-big", 1000, booking.MaxSeats / 1000
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Browser Test Stadium", Rows: bigRows, SeatsPerRow: bigPerRow,
		Capacity: 5, HoldSeconds: holdSecs, GraceSeconds: 5})
	p := b.tab(t, "")
	p.do("phone viewport", chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("event page", 10*time.Second, `shown("#panel-join")`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("the large map", 30*time.Second, fmt.Sprintf(
		`shown("#panel-turn") && $("#seatmap").getAttribute("aria-rowcount") === "%d" && !!$('#seatmap button[data-seat="A1"]')`, bigRows))
	p.shot("50-large-map-phone")
	t.Logf("renderSeats of %d seats: first %s ms, slowest %s ms; %s rows of %d in the DOM", bigRows*bigPerRow,
		p.str(`Math.round(performance.getEntriesByName("renderSeats", "measure")[0].duration)`),
		p.str(`Math.round(Math.max(...performance.getEntriesByName("renderSeats", "measure").map((e) => e.duration)))`),
		p.str(`document.querySelectorAll("#seatmap [role=row]").length`), bigRows)
	p.do("scroll the map", chromedp.Evaluate[chromedp.Void](`(() => { const m = document.querySelector("#seatmap"); m.scrollLeft = 1500; m.scrollTop = 1200; })()`))
	p.waitFor("scrolled, with sticky row labels, Pay on screen, page not wider than the phone", 10*time.Second, fmt.Sprintf(
		`(() => {
			const m = $("#seatmap"), mr = m.getBoundingClientRect();
			const labels = [...m.querySelectorAll(".rowlabel")].filter((l) => { const r = l.getBoundingClientRect(); return r.bottom > mr.top && r.top < mr.bottom; });
			const pay = $("#pay").getBoundingClientRect(), cd = $("#countdown").getBoundingClientRect();
			return m.scrollLeft > 0 && m.scrollWidth > m.clientWidth && labels.length > 3
				&& labels.every((l) => Math.abs(l.getBoundingClientRect().left - mr.left) < 3)
				&& pay.bottom <= window.innerHeight && pay.top >= 0 && cd.top >= 0 && cd.bottom <= window.innerHeight
				&& document.documentElement.scrollWidth <= window.innerWidth && window.innerWidth === %d;
		})()`, phoneW))
	p.shotOnly("51-large-map-scrolled") // the same state as 50 (axe-core on the same grid)
	if n := p.str(`document.querySelectorAll("#seatmap [role=row]").length`); n == fmt.Sprint(bigRows) {
		t.Errorf("all %s rows in the DOM: the map is not windowed", n)
	}
	// The keyboard reaches the far corner: Ctrl+End from the first seat
	// brings the last row into the DOM and focuses its last seat; Enter
	// holds it and Tab reaches Pay.
	ids := booking.SeatIDs(bigRows, bigPerRow)
	last := ids[len(ids)-1]
	p.do("focus the grid's tab stop", chromedp.Evaluate[chromedp.Void](`document.querySelector('#seatmap button[tabindex="0"]').focus()`))
	p.do("Ctrl+End", chromedp.KeyEvent(kb.End, chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	p.waitFor("the last seat focused", 10*time.Second, fmt.Sprintf(`document.activeElement && document.activeElement.dataset.seat === %q`, last))
	p.do("Enter", chromedp.KeyEvent(kb.Enter))
	p.waitFor("the last seat held", 10*time.Second, fmt.Sprintf(`text("#pay") === "Pay for seat %s" && document.activeElement.dataset.seat === %q`, last, last))
	p.do("Tab to Pay", chromedp.KeyEvent(kb.Tab))
	p.waitFor("Pay focused", 5*time.Second, `document.activeElement === $("#pay")`)
	p.shotOnly("52-large-map-picked") // the picked state is checked on the small map (06)
	p.noExceptions()
}

// startPaying joins ev (the room must have a free slot), holds seat and
// starts paying through the API; it returns the sandbox's checkout URL.
func startPaying(t *testing.T, c *stacktest.Client, ev, seat string) string {
	t.Helper()
	var pay struct {
		URL string `json:"payment_url"`
	}
	for _, step := range []struct {
		path string
		body map[string]string
		out  any
	}{
		{"/api/booking/request", map[string]string{"event_id": ev}, nil},
		{"/api/booking/select-seat", map[string]string{"event_id": ev, "seat_id": seat}, nil},
		{"/api/booking/payment/initiate", map[string]string{"event_id": ev}, &pay},
	} {
		if code, err := c.Do("POST", step.path, step.body, step.out); err != nil || code != http.StatusOK {
			t.Fatalf("POST %s: %d %v", step.path, code, err)
		}
	}
	return pay.URL
}

// position is GET /api/booking/position's answer.
type position struct {
	Status   string `json:"status"`
	Position int64  `json:"position"`
	SeatID   string `json:"seat_id"`
}

// ensureChromium runs scripts/ensure-chromium.sh (which installs Debian's
// chromium when missing) and returns the browser's path.
// browserSetup provides Chromium and axe-core, and empties
// test-output/<name> (with its logs directory) for a test's screenshots,
// axe results and service logs.
func browserSetup(t *testing.T, name string) (chromium, axeJS, out string) {
	t.Helper()
	root, err := redistest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	chromium = ensureChromium(t, root)
	axeJS = ensureAxe(t, root)
	out = filepath.Join(root, "test-output", name)
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return chromium, axeJS, out
}

func ensureChromium(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "scripts", "ensure-chromium.sh"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	path := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(path, '\n'); i >= 0 {
		path = path[i+1:]
	}
	if err != nil || path == "" {
		t.Fatalf("the browser test needs Chromium and scripts/ensure-chromium.sh could not provide it (%v):\n%s\n"+
			"install it (apt-get install chromium) or set CHROMIUM=/path/to/chromium", err, stderr.String())
	}
	return path
}

// ensureAxe runs scripts/ensure-axe.sh (which fetches axe-core's
// axe.min.js with npm into a cache outside git) and returns the script.
func ensureAxe(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "scripts", "ensure-axe.sh"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	path := strings.TrimSpace(string(b))
	if err != nil || path == "" {
		t.Fatalf("the browser test needs axe-core and scripts/ensure-axe.sh could not provide it (%v):\n%s", err, stderr.String())
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// browser is one Chromium; each tab it opens has its own profile
// (cookies, localStorage: its own user).
type browser struct {
	ctx context.Context
	dir string
	axe string

	main    *page  // the websocket journey's tab
	journey string // and its event
}

func newBrowser(t *testing.T, chromium, dir, axeJS string) *browser {
	t.Helper()
	chromeLog, err := os.Create(filepath.Join(dir, "logs", "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chromeLog.Close() })
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), // small /dev/shm in containers
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(desktopW, desktopH),
		chromedp.CombinedOutput(chromeLog),
	)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first action starts the browser; it must not run under a timeout.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(desktopW, desktopH)); err != nil {
		t.Fatalf("start %s: %v (log: %s)", chromium, err, chromeLog.Name())
	}
	return &browser{ctx: ctx, dir: dir, axe: axeJS}
}

// tab opens a tab with a fresh profile; init, when set, runs in every
// document of the tab before the page's own scripts.
func (b *browser) tab(t *testing.T, init string) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	p := &page{t: t, ctx: ctx, dir: b.dir, axe: b.axe}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(desktopW, desktopH)); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	if init != "" {
		_, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (cdppage.AddScriptToEvaluateOnNewDocumentResult, error) {
			return cdp.Call(ctx, tg, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: init})
		})
		if err != nil {
			t.Fatalf("add the init script: %v", err)
		}
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.console = append(p.console, m)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, m := range p.console {
				t.Logf("console %s", m)
			}
		}
	})
	return p
}

// page is one browser tab and where its screenshots go.
type page struct {
	t   *testing.T
	ctx context.Context
	dir string
	axe string

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// Desktop and phone (iPhone 12-15) viewports.
const (
	desktopW, desktopH = 1280, 900
	phoneW, phoneH     = 390, 844
)

// waitAPI polls cond every 100 ms for up to 30 s.
func waitAPI(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30 s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// prelude is the helpers a condition may use: $, shown(sel) (rendered, not
// hidden), text(sel) (its visible text, trimmed) and page (the visible text
// of the whole page).
const prelude = `const $ = (s) => document.querySelector(s);
const shown = (s) => { const e = $(s); return !!e && e.getClientRects().length > 0; };
const text = (s) => { const e = $(s); return e ? e.innerText.trim() : ""; };
const page = document.body ? document.body.innerText : "";
`

func (p *page) do(what string, a chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, a); err != nil {
		p.fail(what, err)
	}
}

// str evaluates a string expression (with the prelude).
func (p *page) str(expr string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string]("(() => {"+prelude+"return String("+expr+");})()"))
	if err != nil {
		p.fail("evaluate "+expr, err)
	}
	return v
}

// waitFor polls cond (a JavaScript expression, with the prelude) every
// 100 ms until it is true, and fails the test after timeout with the
// page's state and a screenshot. Evaluation errors (a navigation in
// progress) count as false.
func (p *page) waitFor(what string, timeout time.Duration, cond string) {
	p.t.Helper()
	expr := "(() => {" + prelude + "try { return !!(" + cond + "); } catch (e) { return false; }})()"
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(p.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			p.fail(what, fmt.Errorf("not shown after %v (last evaluation error: %v)\ncondition: %s", timeout, lastErr, cond))
		}
		select {
		case <-p.ctx.Done():
			p.fail(what, p.ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fail reports the page's location and visible text, saves a screenshot
// and stops the test.
func (p *page) fail(what string, err error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	state, serr := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\nfocus: " +
		(document.activeElement ? document.activeElement.outerHTML.slice(0, 200) : "none") + "\n" + (document.body ? document.body.innerText : "")`))
	if serr != nil {
		state = "(page state unavailable: " + serr.Error() + ")"
	}
	if b, serr := chromedp.Run(ctx, chromedp.FullScreenshot(100)); serr == nil {
		path := filepath.Join(p.dir, "FAILED.png")
		if os.WriteFile(path, b, 0o644) == nil {
			p.t.Logf("screenshot of the failure: %s", path)
		}
	}
	p.t.Fatalf("%s: %v\n--- page ---\n%s", what, err, state)
}

// shot saves a PNG screenshot of the whole page as <name>.png.
func (p *page) shot(name string) {
	p.t.Helper()
	p.shotOnly(name)
	p.t.Logf("screenshot: %s", filepath.Join(p.dir, name+".png"))
	p.checkA11y(name)
}

// shotOnly is shot without the axe-core run, for a state already checked.
func (p *page) shotOnly(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.fail("screenshot "+name, err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, name+".png"), b, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// axeRun runs axe-core (WCAG 2.0-2.2 A and AA rules and best practices) on
// the document and returns its serious and critical violations as JSON.
const axeRun = `(async () => {
	const r = await axe.run(document, { resultTypes: ["violations"] });
	return JSON.stringify(r.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => ({
		id: v.id, impact: v.impact, help: v.help,
		nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ") + " — " + (n.failureSummary || "").replace(/\s+/g, " ")),
	})));
})()`

// checkA11y runs axe-core on the page as it is and reports every serious
// or critical violation as a test error (the journey goes on). Each
// state's result is also written to axe/<name>.json.
func (p *page) checkA11y(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof axe !== "undefined" || (0, eval)(`+strconv.Quote(p.axe)+`) === undefined || true`)); err != nil {
		p.fail("inject axe-core", err)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		p.fail("run axe-core on "+name, err)
	}
	dir := filepath.Join(p.dir, "axe")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, name+".json"), []byte(res+"\n"), 0o644)
	if res != "[]" {
		p.t.Errorf("axe-core: serious or critical violations on %s:\n%s", name, res)
	}
}

// selfTestAxe checks that axe-core runs and reports: a page with an
// image without alternative text must give a critical violation.
func (p *page) selfTestAxe() {
	p.t.Helper()
	p.do("open a page with a known violation", chromedp.Navigate(`data:text/html,<!doctype html><html lang="en"><title>t</title><img src="x.png">`))
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(0, eval)(`+strconv.Quote(p.axe)+`) === undefined || true`)); err != nil {
		p.fail("inject axe-core", err)
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil || !strings.Contains(res, `"image-alt"`) {
		p.t.Fatalf("axe-core self-test: want an image-alt violation, got %s (%v)", res, err)
	}
}

// noExceptions fails the test for every uncaught exception the tab's
// pages threw.
func (p *page) noExceptions() {
	p.t.Helper()
	for _, m := range p.exceptions() {
		p.t.Errorf("uncaught exception in the page: %s", m)
	}
}

// phone shows the page in a phone's viewport, checks that nothing is wider
// than the screen, saves a screenshot and goes back to the desktop size.
func (p *page) phone(name string) {
	p.t.Helper()
	p.do("phone viewport", chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateScale(2)))
	p.waitFor("laid out for a phone", 5*time.Second, fmt.Sprintf(
		`window.innerWidth === %d && document.documentElement.scrollWidth <= window.innerWidth`, phoneW))
	p.shot(name)
	p.do("desktop viewport", chromedp.Steps(chromedp.EmulateReset(), chromedp.EmulateViewport(desktopW, desktopH)))
}

// exceptions are the uncaught exceptions the pages threw so far.
func (p *page) exceptions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.console {
		if m.IsException() {
			out = append(out, m.Text)
		}
	}
	return out
}
