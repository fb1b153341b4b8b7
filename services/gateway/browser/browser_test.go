package browser

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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

// TestJourney is one user's journey through the web pages in a real
// browser: the room (capacity 1) is full when they join, so they wait at
// position 1; the holder cancels; "your turn" arrives over the notifier's
// WebSocket (the slot-released consumer promotes them: the safety net is
// slowed to 10 minutes so that it cannot); they pick a seat, pay at the
// sandbox's hosted checkout, come back and see the confirmation. Each step
// asserts what the page shows and saves a screenshot.
func TestJourney(t *testing.T) {
	root, err := redistest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	chromium := ensureChromium(t, root)
	out := filepath.Join(root, "test-output", "browser")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}

	s := stacktest.Start(t, stacktest.Options{
		LogDir: filepath.Join(out, "logs"),
		Env:    map[string]string{"SAFETY_NET_INTERVAL": "10m"},
		ServiceEnv: map[string]map[string]string{
			stacktest.Notifier: {"POSITION_INTERVAL": "500ms"},
		},
	})
	s.CreateEvent(t, stacktest.Event{ID: eventID, Name: eventName, Rows: rows, SeatsPerRow: perRow,
		Capacity: 1, HoldSeconds: holdSecs, GraceSeconds: 5})
	gw, sandbox := s.GatewayURL(), s.URL(stacktest.PaymentSandbox)

	// The holder takes the room's only slot.
	holder := s.Client(t, "holder", "")
	var join struct {
		Status string `json:"status"`
	}
	if code, err := holder.Do("POST", "/api/booking/request", map[string]string{"event_id": eventID}, &join); err != nil || code != http.StatusOK || join.Status != "active" {
		t.Fatalf("holder join: %d %v %+v, want active", code, err, join)
	}

	p := newPage(t, chromium, out)

	// 1. The event list shows the event with its free seats.
	p.do("open the event list", chromedp.Navigate(gw+"/"))
	p.waitFor("event list", 10*time.Second, fmt.Sprintf(
		`shown("#view-events") && page.includes(%q) && page.includes("%d of %d seats left")`, eventName, rows*perRow, rows*perRow))
	p.shot("01-event-list")

	// 2. The event page connects to the notifier; the user is not queued.
	p.do("open the event page", chromedp.Navigate(gw+"/?event_id="+eventID))
	p.waitFor("event page, not joined, notifier live", 10*time.Second, fmt.Sprintf(
		`shown("#panel-join") && text("#event-name") === %q && text("#conn") === "live" && shown("#join")`, eventName))
	p.shot("02-event-page")
	user := p.str(`text("#who")`)
	if !strings.HasPrefix(user, "web-") {
		t.Fatalf("page user id %q, want web-…", user)
	}
	me := s.Client(t, user, "")

	// 3. Joining a full room: the waiting room at position 1.
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("waiting room at position 1", 10*time.Second,
		`shown("#panel-waiting") && page.includes("You are in the waiting room") && text("#position") === "1" && !shown("#panel-turn")`)
	p.shot("03-waiting-room")
	var pos struct {
		Status   string `json:"status"`
		Position int64  `json:"position"`
		SeatID   string `json:"seat_id"`
	}
	if code, err := me.Do("GET", "/api/booking/position?event_id="+eventID, nil, &pos); err != nil || code != 200 || pos.Status != "queued" || pos.Position != 1 {
		t.Fatalf("API position of the browser's user: %d %v %+v, want queued at 1", code, err, pos)
	}
	p.phone("03b-waiting-room-phone")

	// 4. The holder cancels; "your turn" is pushed to the same page (no
	// reload: a marker set on the window survives), with the hold's
	// countdown and the seat map.
	p.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__noReload = true`))
	var cancel struct {
		From string `json:"from"`
	}
	if code, err := holder.Do("POST", "/api/booking/cancel", map[string]string{"event_id": eventID}, &cancel); err != nil || code != 200 || cancel.From != "active" {
		t.Fatalf("holder cancel: %d %v %+v", code, err, cancel)
	}
	p.waitFor("your turn with the seat map", 15*time.Second, fmt.Sprintf(
		`window.__noReload === true && shown("#panel-turn") && !shown("#panel-waiting") && text("#turn-title") === "It's your turn!"
		 && /^[45] min \d+ s$/.test(text("#countdown"))
		 && document.querySelectorAll('#seatmap button[data-status="available"]').length === %d`, rows*perRow))
	p.shot("04-your-turn")
	p.phone("05-seat-map-phone")

	// 5. Picking a seat holds it.
	p.do("click seat B3", chromedp.Click(chromedp.CSS(`#seatmap button[data-seat="B3"]`)))
	p.waitFor("seat B3 held", 10*time.Second,
		`text("#seat-note") === "Seat B3 is held for you." && $('#seatmap button[data-seat="B3"]').dataset.status === "mine"
		 && !$("#pay").disabled && text("#pay") === "Pay for seat B3" && !shown("#error")`)
	p.shot("06-seat-selected")
	if code, err := me.Do("GET", "/api/booking/position?event_id="+eventID, nil, &pos); err != nil || code != 200 || pos.SeatID != "B3" {
		t.Fatalf("API position after picking B3: %d %v %+v", code, err, pos)
	}
	p.waitFor("the hold's countdown ticking", 5*time.Second, `/^4 min \d+ s$/.test(text("#countdown"))`)

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
		 && text("#done-title").startsWith("You're going!") && text("#done-text").includes("seat B3")`, gw))
	// the ticket, read back from the ledger (GET /api/orders)
	p.waitFor("the ticket from PostgreSQL", 15*time.Second,
		`shown("#view-event .tickets") && text("#view-event .tickets").includes("Seat B3") && text("#view-event .tickets").includes("order ord_")`)
	p.shot("08-confirmation")
	p.phone("08b-confirmation-phone")
	if code, err := me.Do("GET", "/api/booking/position?event_id="+eventID, nil, &pos); err != nil || code != 200 || pos.Status != "completed" || pos.SeatID != "B3" {
		t.Fatalf("API position after paying: %d %v %+v, want completed with B3", code, err, pos)
	}

	for _, m := range p.exceptions() {
		t.Errorf("uncaught exception in the page: %s", m)
	}
}

// ensureChromium runs scripts/ensure-chromium.sh (which installs Debian's
// chromium when missing) and returns the browser's path.
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

// page is one browser tab and where its screenshots go.
type page struct {
	t   *testing.T
	ctx context.Context
	dir string

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// Desktop and phone (iPhone 12-15) viewports.
const (
	desktopW, desktopH = 1280, 900
	phoneW, phoneH     = 390, 844
)

func newPage(t *testing.T, chromium, dir string) *page {
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
	p := &page{t: t, ctx: ctx, dir: dir}
	// The first action starts the browser; it must not run under a timeout.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(desktopW, desktopH)); err != nil {
		t.Fatalf("start %s: %v (log: %s)", chromium, err, chromeLog.Name())
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
	state, serr := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
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
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.fail("screenshot "+name, err)
	}
	path := filepath.Join(p.dir, name+".png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", path)
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
