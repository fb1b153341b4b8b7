package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// reportJSON is GET /api/admin/events/{id}/report's answer (pkg/report).
type reportJSON struct {
	EventID    string             `json:"event_id"`
	Counts     map[string]int64   `json:"counts"`
	Revenue    map[string]int64   `json:"revenue"`
	Refunds    map[string]int64   `json:"refunds"`
	Conversion map[string]float64 `json:"conversion"`
	Queue      distJSON           `json:"time_in_queue"`
	Purchase   distJSON           `json:"time_to_purchase"`
	Minutes    []struct {
		Minute     string `json:"minute"`
		Admissions int64  `json:"admissions"`
	} `json:"admissions_per_minute"`
	ByPhase   []salesJSON `json:"by_phase"`
	ByChannel []salesJSON `json:"by_channel"`
}

// salesJSON is a row of the report's by_phase (Phase) or by_channel
// (Channel).
type salesJSON struct {
	Phase    string `json:"phase"`
	Channel  string `json:"channel"`
	Currency string `json:"currency"`
	Orders   int64  `json:"orders"`
	Seats    int64  `json:"seats"`
	Revenue  int64  `json:"revenue"`
}

type distJSON struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50_ms"`
	P90   int64 `json:"p90_ms"`
	P99   int64 `json:"p99_ms"`
}

// TestReportPage is the operators' pages in a real browser, against every
// service as a process, the report consumer (popularity) included: three
// fans buy a seat and a fourth joins and leaves; once the consumer has
// counted those facts, an operator opens the report page, is sent to the
// sign-in page, is refused a wrong password, signs in and comes back to
// the report, types the event id and loads the report. Every figure shown
// must equal the endpoint's JSON, both charts must be drawn (a bar per
// step and per minute with admissions), the CSV link must download the
// endpoint's CSV; signing out leaves the report page closed to the same
// browser; and axe-core must find no serious or critical violation on any
// of the pages.
func TestReportPage(t *testing.T) {
	chromium, axeJS, out := browserSetup(t, "browser-report")
	downloads := filepath.Join(out, "downloads")
	if err := os.MkdirAll(downloads, 0o755); err != nil {
		t.Fatal(err)
	}
	s := stacktest.Start(t, stacktest.Options{
		LogDir: filepath.Join(out, "logs"),
		Services: []string{stacktest.SlotReleasedConsumer, stacktest.TimeoutConsumer, stacktest.PaymentWebhook,
			stacktest.PaymentSandbox, stacktest.Popularity, stacktest.Notifier, stacktest.Gateway},
	})
	const ev = "report-show"
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Report Test Live", Rows: 2, SeatsPerRow: 5, Capacity: 10, HoldSeconds: holdSecs})

	// The sale: three fans buy a seat each, a fourth joins and leaves.
	for i, seat := range []string{"A1", "A2", "B4"} {
		c := s.Client(t, fmt.Sprintf("report-fan-%d", i), "")
		payURL := startPaying(t, c, ev, seat)
		if code, err := c.Do("POST", payURL+"/pay", nil, nil); err != nil || code != http.StatusSeeOther {
			t.Fatalf("fan %d pays at the sandbox: %d %v", i, code, err)
		}
	}
	leaver := s.Client(t, "report-leaver", "")
	if code, err := leaver.Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("leaver joins: %d %v", code, err)
	}
	if code, err := leaver.Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("leaver cancels: %d %v", code, err)
	}

	// The consumer counts the sale's facts (its group joins every topic
	// first: allow for a slow machine).
	admin := s.Client(t, "report-test-admin", auth.RoleAdmin)
	want := map[string]int64{"booking_request": 4, "user_promoted": 4, "payment_initiated": 3, "booking_completed": 3, "booking_cancelled": 1}
	var rep reportJSON
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rep = reportJSON{}
		code, err := admin.Do("GET", "/api/admin/events/"+ev+"/report", nil, &rep)
		done := err == nil && code == http.StatusOK && rep.Purchase.Count == 3 && rep.Queue.Count == 4
		for k, n := range want {
			done = done && rep.Counts[k] == n
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the report consumer did not count the sale in 2 min: %d %v %+v", code, err, rep)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(rep.Revenue) == 0 || len(rep.Minutes) == 0 {
		t.Fatalf("report without revenue or admissions per minute: %+v", rep)
	}

	b := newBrowser(t, chromium, out, axeJS)
	p := b.tab(t, "")
	gw := s.GatewayURL()

	// 1. Not signed in: the report page sends the browser to sign in.
	pw := s.Operator(t, "ops-viewer", operators.Viewer)
	p.do("open the report page", chromedp.Navigate(gw+"/admin/report.html?event_id="+ev))
	p.waitFor("the sign-in page", 15*time.Second, `location.pathname === "/admin/sign-in.html" && document.body.dataset.ready === "1"
		&& new URLSearchParams(location.search).get("next") === "/admin/report.html?event_id=`+ev+`" && document.activeElement === $("#account")`)
	p.shot("r00-sign-in")

	// 2. A wrong password is refused in words; the right one signs in and
	// returns to the report, which loads the event of the link.
	p.do("type the account", chromedp.SendKeys(chromedp.ID("account"), "ops-viewer"))
	p.do("type a wrong password", chromedp.SendKeys(chromedp.ID("password"), "not the password"))
	p.do("click Sign in", chromedp.Click(chromedp.ID("submit")))
	p.waitFor("the refusal", 15*time.Second, `shown("#error") && text("#error") === "Wrong account or password." && $("#password").value === ""`)
	p.shot("r00-sign-in-refused")
	p.do("type the password", chromedp.SendKeys(chromedp.ID("password"), pw))
	p.do("click Sign in", chromedp.Click(chromedp.ID("submit")))
	p.waitFor("the report", 30*time.Second, fmt.Sprintf(
		`location.pathname === "/admin/report.html" && document.body.dataset.ready === "1" && document.body.dataset.account === "ops-viewer"
		 && text("#whoami") === "Signed in as ops-viewer (viewer)" && shown("#sign-out") && shown("#event-id")
		 && document.body.dataset.loaded === %q && shown("#report") && !shown("#error")
		 && [...document.querySelectorAll("#event-list option")].some((o) => o.value === %q)`, ev, ev))
	if c := p.str(`document.cookie`); c != "" {
		t.Errorf("the page's script can read cookies %q: the session cookie must be HttpOnly", c)
	}
	p.shot("r01-form")

	// The event id typed again, Show the report.
	p.do("clear the event id", chromedp.Evaluate[chromedp.Void](`document.getElementById("event-id").value = ""`))
	p.do("type the event id", chromedp.SendKeys(chromedp.ID("event-id"), ev))
	p.do("click Show the report", chromedp.Click(chromedp.ID("show")))
	p.waitFor("the report", 30*time.Second, fmt.Sprintf(
		`document.body.dataset.loaded === %q && shown("#report") && shown("#csv") && $("#csv").href.startsWith("blob:")
		 && text("#report-title") === "Report of %s" && document.activeElement === $("#report-title") && !shown("#error")
		 && location.search.includes("event_id=%s")`, ev, ev, ev))
	p.shot("r02-report")

	// 3. Every figure shown equals the JSON, formatted.
	var shown map[string]string
	if err := json.Unmarshal([]byte(p.str(`JSON.stringify(Object.fromEntries([...document.querySelectorAll(
		"[data-count],[data-revenue],[data-refunds],[data-conversion],[data-dist],[data-sales]")].map((e) => {
			const a = [...e.attributes].find((a) => a.name.startsWith("data-"));
			return [a.name.slice(5) + ":" + a.value, e.innerText.trim()];
		})))`)), &shown); err != nil {
		t.Fatal(err)
	}
	expect := map[string]string{}
	for k, n := range rep.Counts {
		expect["count:"+k] = thousands(n)
	}
	for c, n := range rep.Revenue {
		expect["revenue:"+c] = money(n, c)
		expect["refunds:"+c] = money(rep.Refunds[c], c)
	}
	for c, n := range rep.Refunds {
		expect["refunds:"+c] = money(n, c)
		expect["revenue:"+c] = money(rep.Revenue[c], c)
	}
	for k, v := range rep.Conversion {
		expect["conversion:"+k] = percent(v)
	}
	for name, d := range map[string]distJSON{"time_in_queue": rep.Queue, "time_to_purchase": rep.Purchase} {
		expect["dist:"+name+".count"] = thousands(d.Count)
		expect["dist:"+name+".p50_ms"] = duration(d.P50)
		expect["dist:"+name+".p90_ms"] = duration(d.P90)
		expect["dist:"+name+".p99_ms"] = duration(d.P99)
	}
	if len(rep.ByPhase) == 0 || len(rep.ByChannel) == 0 {
		t.Errorf("the report has no sales by phase or channel: %+v %+v", rep.ByPhase, rep.ByChannel)
	}
	for _, l := range []struct {
		key  string
		rows []salesJSON
	}{{"phase", rep.ByPhase}, {"channel", rep.ByChannel}} {
		for _, r := range l.rows {
			name := r.Phase
			if l.key == "channel" {
				name = r.Channel
			}
			at := "sales:" + l.key + ":" + name + ":" + r.Currency
			expect[at+":orders"] = thousands(r.Orders)
			expect[at+":seats"] = thousands(r.Seats)
			expect[at+":revenue"] = money(r.Revenue, r.Currency)
		}
	}
	for k, v := range expect {
		if shown[k] != v {
			t.Errorf("page shows %s = %q, the report says %q", k, shown[k], v)
		}
	}
	if got := p.str(`[...document.querySelectorAll("#by-channel tbody th, #by-phase tbody th")].map((e) => e.innerText).join("|")`); got != "Fans, through the queue|No phase" && got != "No phase|Fans, through the queue" {
		t.Errorf("the sales rows are named %q, want the fans' channel and no phase", got)
	}
	if len(shown) != len(expect) {
		t.Errorf("page shows %d figures, the report has %d:\npage %v\nreport %v", len(shown), len(expect), shown, expect)
	}

	// 4. The charts: the funnel's four bars are the four counts; the
	// admissions chart has a bar per minute with admissions, summing to
	// the report's; both are images with a text summary, and the minutes
	// are also a table.
	funnel := p.str(`[...document.querySelectorAll("#funnel-chart rect.chart-bar")].map((r) => r.dataset.value).join(",")`)
	if w := fmt.Sprintf("%d,%d,%d,%d", rep.Counts["booking_request"], rep.Counts["user_promoted"], rep.Counts["payment_initiated"],
		rep.Counts["booking_completed"]); funnel != w {
		t.Errorf("funnel bars %q, want %q", funnel, w)
	}
	var total int64
	var bars []string
	for _, m := range rep.Minutes {
		total += m.Admissions
		bars = append(bars, m.Minute+"="+strconv.FormatInt(m.Admissions, 10))
	}
	if got := p.str(`[...document.querySelectorAll("#admissions-chart rect.chart-bar")].map((r) => r.dataset.minute + "=" + r.dataset.value).join(",")`); got != strings.Join(bars, ",") {
		t.Errorf("admissions bars %q, want %q", got, strings.Join(bars, ","))
	}
	// drawn to scale: the busiest minute's bar fills the plot's height
	// (no stylesheet rule resizes the bars)
	if h := p.str(`Math.round(Math.max(...[...document.querySelectorAll("#admissions-chart rect.chart-bar")].map((r) => r.getBBox().height)))`); h != "188" {
		t.Errorf("the busiest minute's bar is %s units high, want the plot's 188", h)
	}
	label := p.str(`$("#admissions-chart").getAttribute("role") + " | " + $("#admissions-chart").getAttribute("aria-label") + " | " + $("#funnel-chart").getAttribute("role") + " | " + $("#funnel-chart").getAttribute("aria-label")`)
	if !strings.HasPrefix(label, "img | Admissions per minute from ") || !strings.Contains(label, thousands(total)+" admissions in ") ||
		!strings.Contains(label, "| img | Funnel: joins 4, admissions 4, payments started 3, completions 3.") {
		t.Errorf("chart roles and summaries: %q", label)
	}
	if n := p.str(`document.querySelectorAll("#minutes tbody tr").length`); n != strconv.Itoa(len(rep.Minutes)) {
		t.Errorf("minutes table has %s rows, want %d", n, len(rep.Minutes))
	}
	p.do("open the minutes table", chromedp.Click(chromedp.CSS("#minutes-details summary")))
	p.waitFor("the minutes table shown", 10*time.Second, `shown("#minutes") && $("#minutes-details").open`)
	p.shot("r03-minutes-table")
	p.phone("r04-report-phone")

	// 5. The CSV link downloads the endpoint's CSV (fetched with the token).
	wantCSV := fetchCSV(t, s, admin.Token, ev)
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	_, err := cdp.Call(ctx, chromedp.FromContext(p.ctx).Browser, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads, BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID})
	cancel()
	if err != nil {
		t.Fatalf("allow downloads: %v", err)
	}
	p.do("click Download CSV", chromedp.Click(chromedp.ID("csv")))
	file := filepath.Join(downloads, "report-"+ev+".csv")
	waitAPI(t, "the CSV downloaded", func() bool {
		b, err := os.ReadFile(file)
		return err == nil && string(b) == wantCSV
	})

	// 6. Signing out: back on the sign-in page, which says so; the report
	// page is closed to this browser again.
	p.do("click Sign out", chromedp.Click(chromedp.ID("sign-out")))
	p.waitFor("signed out", 15*time.Second, `location.pathname === "/admin/sign-in.html" && shown("#notice") && text("#notice") === "You are signed out."`)
	p.shot("r05-signed-out")
	p.do("open the report page again", chromedp.Navigate(gw+"/admin/report.html"))
	p.waitFor("sent to sign in", 15*time.Second, `location.pathname === "/admin/sign-in.html" && document.body.dataset.ready === "1"`)
	// the sign-in page sends the operator on only within the operator pages
	p.do("sign in with a next of another site", chromedp.Navigate(gw+"/admin/sign-in.html?next=//evil.example/admin/"))
	p.waitFor("the sign-in page", 15*time.Second, `document.body.dataset.ready === "1"`)
	p.do("type the account", chromedp.SendKeys(chromedp.ID("account"), "ops-viewer"))
	p.do("type the password", chromedp.SendKeys(chromedp.ID("password"), pw))
	p.do("click Sign in", chromedp.Click(chromedp.ID("submit")))
	p.waitFor("the console, not the other site", 30*time.Second, `location.pathname === "/admin/" && document.body.dataset.ready === "1"`)
	p.noExceptions()
}

// fetchCSV is the report as CSV, as the endpoint sends it.
func fetchCSV(t *testing.T, s *stacktest.Stack, token, ev string) string {
	t.Helper()
	req, err := http.NewRequest("GET", s.GatewayURL()+"/api/admin/events/"+ev+"/report?format=csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK || !strings.HasPrefix(string(b), "metric,key,value\n") {
		t.Fatalf("GET the CSV: %d %v %s", res.StatusCode, err, b)
	}
	return string(b)
}

// The page's formats (static/report.js), for the expected text.

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func percent(v float64) string {
	pm := int64(math.Round(v * 1000))
	return fmt.Sprintf("%d.%d%%", pm/10, pm%10)
}

func duration(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60000:
		t := (ms + 50) / 100
		return fmt.Sprintf("%d.%d s", t/10, t%10)
	}
	s := (ms + 500) / 1000
	return fmt.Sprintf("%d min %02d s", s/60, s%60)
}

// money: minor units of a two-decimal currency (the stack's EUR).
func money(minor int64, cur string) string {
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	return fmt.Sprintf("%s%s.%02d %s", sign, thousands(minor/100), minor%100, cur)
}
