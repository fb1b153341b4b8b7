package browser

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// TestConsole is an on-sale run from the operator console (/admin/) in a
// real browser, against every service it needs as a process: an operator
// signs in, creates an event with two priced sections, watches the live
// view while fans join (the numbers move by themselves), pauses the sale
// and sees the queue stop while a seat in the room frees up, resumes it
// and sees the waiting fan let in, changes the admission rate, sees a
// sale's seat, revenue and sell-out estimate, reads the audit trail and
// the orders, refunds a late payment, edits the event, cancels the sold
// order with its refund, and signs out. A viewer sees the live view and
// the orders with every control disabled, and the API refuses the
// viewer's change (403). axe-core must find no serious or critical violation in any
// state. With BOXOFFICE_DOC_SCREENSHOTS=1 the desktop and phone
// screenshots of docs/operators.md are written to docs/img/.
func TestConsole(t *testing.T) {
	chromium, axeJS, out := browserSetup(t, "browser-console")
	s := stacktest.Start(t, stacktest.Options{
		LogDir: filepath.Join(out, "logs"),
		Services: []string{stacktest.SlotReleasedConsumer, stacktest.TimeoutConsumer, stacktest.PaymentWebhook, stacktest.PaymentSandbox,
			stacktest.Popularity, stacktest.Gateway},
	})
	const ev = "console-show"
	opPW := s.Operator(t, "ops-lead", operators.Operator)
	viewPW := s.Operator(t, "ops-watch", operators.Viewer)
	gw := s.GatewayURL()
	b := newBrowser(t, chromium, out, axeJS)
	p := b.tab(t, "")

	// 1. Not signed in: the console sends the browser to sign in, and
	// back to the console afterwards.
	p.do("open the console", chromedp.Navigate(gw+"/admin/"))
	p.waitFor("the sign-in page", 15*time.Second, `location.pathname === "/admin/sign-in.html" && document.body.dataset.ready === "1"`)
	consoleSignIn(p, "ops-lead", opPW)
	p.waitFor("the event list", 30*time.Second, `location.pathname === "/admin/" && document.body.dataset.ready === "1"
		&& document.body.dataset.view === "events" && text("#whoami") === "Signed in as ops-lead (operator)"
		&& shown("#new-event") && !shown("#viewer-note") && !shown("#events-error")`)
	p.shot("c00-events")

	// 2. A new event with two sections; a mistake first, refused with the
	// API's own words.
	p.do("click New event", chromedp.Click(chromedp.ID("new-event")))
	p.waitFor("the form", 10*time.Second, `document.body.dataset.view === "form" && text("#form-title") === "New event"
		&& document.querySelectorAll("#section-rows .section-row").length === 1`)
	p.do("type the id", chromedp.SendKeys(chromedp.ID("f-id"), ev))
	p.do("type the name", chromedp.SendKeys(chromedp.ID("f-name"), "Console Test Live"))
	setValue(p, "#s0-rows", "2")
	setValue(p, "#s0-seats_per_row", "5")
	p.do("add a section", chromedp.Click(chromedp.ID("add-section")))
	p.waitFor("two sections", 5*time.Second, `document.querySelectorAll("#section-rows .section-row").length === 2`)
	setValue(p, "#s1-name", "Balcony")
	setValue(p, "#s1-rows", "1")
	setValue(p, "#s1-seats_per_row", "5")
	setValue(p, "#s1-price", "25.50")
	setValue(p, "#f-capacity", "999999999") // beyond the bound: refused
	setValue(p, "#f-rate", "60")
	setValue(p, "#f-hold", "600")
	p.do("click Create", chromedp.Click(chromedp.ID("f-submit")))
	p.waitFor("the refusal", 15*time.Second, `shown("#form-error") && text("#form-error").startsWith("Capacity must be from 0 to ")
		&& document.body.dataset.view === "form"`)
	p.shot("c01-new-event-refused")
	setValue(p, "#f-capacity", "2")
	p.do("click Create", chromedp.Click(chromedp.ID("f-submit")))
	p.waitFor("the live view of the new event", 30*time.Second, fmt.Sprintf(`document.body.dataset.view === "live"
		&& location.hash === "#/live/%s" && document.body.dataset.liveWaiting === "0" && text("#live-title") === "Live: Console Test Live"
		&& text("#live-state") === "On sale" && $("#live-conn").dataset.mode === "live" && $("#c-capacity").value === "2"
		&& $("#c-rate").value === "60" && $("#c-hold").value === "600" && !$("#c-pause").disabled`, ev))
	admin := s.Client(t, "console-test-admin", "admin")
	var got struct {
		Sections []struct {
			Name       string `json:"name"`
			PriceCents int64  `json:"price_cents"`
		} `json:"sections"`
		Counts struct {
			Total int64 `json:"total"`
		} `json:"counts"`
		Capacity       int `json:"capacity"`
		AdmitPerMinute int `json:"admit_per_minute"`
	}
	if code, err := admin.Do("GET", "/api/admin/events/"+ev, nil, &got); err != nil || code != http.StatusOK || len(got.Sections) != 2 ||
		got.Sections[0].PriceCents != 4000 || got.Sections[1].Name != "Balcony" || got.Sections[1].PriceCents != 2550 ||
		got.Counts.Total != 15 || got.Capacity != 2 || got.AdmitPerMinute != 60 {
		t.Fatalf("the created event: %d %v %+v", code, err, got)
	}

	// 3. Fans join: the numbers move without a reload (two in the room,
	// three waiting), and the chart draws them.
	fans := make([]*stacktest.Client, 5)
	for i := range fans {
		fans[i] = s.Client(t, fmt.Sprintf("console-fan-%d", i), "")
		if code, err := fans[i].Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("fan %d joins: %d %v", i, code, err)
		}
	}
	p.waitFor("the joins in the live view", 20*time.Second, `document.body.dataset.liveInRoom === "2" && document.body.dataset.liveWaiting === "3"
		&& text('[data-live="in_room"]') === "2" && text('[data-live="waiting"]') === "3" && text('[data-live="available"]') === "15"
		&& $("#live-chart-svg") && $('#live-chart-svg polyline[data-series="waiting"]').points.length >= 2
		&& text("#live-eta") === "—" && text("#live-eta-note").startsWith("Not selling")`)
	p.shot("c02-live")
	p.phone("c03-live-phone")

	// 4. Pause, confirmed in a dialog: the sale stops at once. A fan in the
	// room leaves, and nobody waiting is let in while paused.
	p.do("click Pause", chromedp.Click(chromedp.ID("c-pause")))
	p.waitFor("the confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Pause the sale?" && document.activeElement === $("#confirm-no")`)
	p.shot("c04-confirm-pause")
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("paused", 15*time.Second, `!$("#confirm").open && document.body.dataset.livePaused === "true" && text("#live-state") === "Paused"
		&& text("#c-pause") === "Resume the sale"`)
	if code, err := fans[0].Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("fan 0 leaves: %d %v", code, err)
	}
	p.waitFor("the room down to one", 15*time.Second, `document.body.dataset.liveInRoom === "1"`)
	time.Sleep(2 * time.Second) // the queue stays stopped
	if w := p.str(`document.body.dataset.liveWaiting + "/" + document.body.dataset.liveInRoom`); w != "3/1" {
		t.Errorf("while paused, waiting/in the room is %s, want 3/1 (nobody let in)", w)
	}
	p.shot("c05-paused")

	// 5. Resume: the waiting fan is let in to the free place.
	p.do("click Resume", chromedp.Click(chromedp.ID("c-pause")))
	p.waitFor("the confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Resume the sale?"`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("resumed and a fan let in", 20*time.Second, `document.body.dataset.livePaused === "false" && text("#live-state") === "On sale"
		&& document.body.dataset.liveInRoom === "2" && document.body.dataset.liveWaiting === "2"`)

	// 6. The rate: cancelling the dialog changes nothing; confirming
	// applies it at once.
	setValue(p, "#c-rate", "30")
	p.do("click Apply", chromedp.Click(chromedp.ID("c-rate-apply")))
	p.waitFor("the confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-text").includes("from 60 to 30")`)
	p.do("cancel", chromedp.Click(chromedp.ID("confirm-no")))
	time.Sleep(1500 * time.Millisecond)
	if r := p.str(`document.body.dataset.liveRate`); r != "60" {
		t.Fatalf("a cancelled change applied: rate %s", r)
	}
	setValue(p, "#c-rate", "30")
	p.do("click Apply", chromedp.Click(chromedp.ID("c-rate-apply")))
	p.waitFor("the confirmation", 5*time.Second, `$("#confirm").open`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the new rate", 15*time.Second, `document.body.dataset.liveRate === "30" && $("#c-rate").value === "30" && !shown("#control-error")`)
	if code, err := admin.Do("GET", "/api/admin/events/"+ev, nil, &got); err != nil || code != http.StatusOK || got.AdmitPerMinute != 30 {
		t.Fatalf("the rate after the change: %d %v %+v", code, err, got)
	}

	// 7. A fan in the room buys a Balcony seat: sold and the revenue move.
	payURL := startPaying(t, fans[1], ev, "C1")
	if code, err := fans[1].Do("POST", payURL+"/pay", nil, nil); err != nil || code != http.StatusSeeOther {
		t.Fatalf("fan 1 pays at the sandbox: %d %v", code, err)
	}
	p.waitFor("the sale in the live view", 20*time.Second, `document.body.dataset.liveSold === "1" && text('[data-live="sold"]') === "1"
		&& document.body.dataset.liveInRoom === "2" && document.body.dataset.liveWaiting === "1"
		&& text("#live-eta").startsWith("Sells out in ") && text("#live-eta-note").startsWith("14 seats left; ")`)
	// the report consumer counts it (its group may still be joining)
	p.waitFor("the revenue", 90*time.Second, `text('[data-money="revenue:EUR"]') === "25.50 EUR" && text('[data-money="payments.completed"]') === "1"`)
	p.waitFor("the admissions of the last hour", 30*time.Second, `$("#live-minutes-svg") && document.querySelectorAll("#live-minutes-svg rect.chart-bar").length >= 1
		&& $("#live-minutes-svg").getAttribute("aria-label").startsWith("Admissions per minute over the last hour: 4 in all")
		&& document.body.dataset.liveErrors === "0" && text("#errors-summary") === "Nothing needs attention."
		&& text('[data-error-value="payments-failed"]') === "0" && text("#live-provider") === "Payment provider: working"`)
	docShots(t, p, "console-live", "")

	// 7b. Seats held back and killed: a hold for a purpose (confirmed
	// first), a kill, a refusal for a sold seat, then both released.
	p.do("pick Hold", chromedp.SetValue(chromedp.ID("m-action"), "hold"))
	setValue(p, "#m-seats", "A1-A2")
	setValue(p, "#m-purpose", "sponsor")
	p.do("click Apply to the seats", chromedp.Click(chromedp.ID("m-apply")))
	p.waitFor("the hold's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Hold these seats?"
		&& text("#confirm-text").startsWith("Hold A1 to A2 for sponsor")`)
	p.shot("c05a-confirm-hold")
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the seats held", 15*time.Second, `document.body.dataset.liveReserved === "2" && text('[data-live="reserved"]') === "2"
		&& text("#marks-result") === "Held A1, A2 (sponsor)." && document.body.dataset.marks === "1"
		&& text('#marks tr[data-purpose="sponsor"] th') === "A1, A2" && text('#marks tr[data-purpose="sponsor"] td:nth-of-type(2)').startsWith("ops-lead, ")
		&& !shown("#marks-error") && $("#m-seats").value === ""`)
	p.do("pick Kill", chromedp.SetValue(chromedp.ID("m-action"), "kill"))
	p.do("the purpose hides", chromedp.Evaluate[chromedp.Void](`document.getElementById("m-action").dispatchEvent(new Event("change"))`))
	setValue(p, "#m-seats", "B5")
	p.do("click Apply to the seats", chromedp.Click(chromedp.ID("m-apply")))
	p.waitFor("the kill's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Kill these seats?" && !shown("#m-purpose")`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the seat killed", 15*time.Second, `document.body.dataset.liveKilled === "1" && document.body.dataset.marks === "2"
		&& text('#marks tr[data-mark="kill"] th') === "B5"`)
	setValue(p, "#m-seats", "C1") // sold: refused, nothing changes
	p.do("click Apply to the seats", chromedp.Click(chromedp.ID("m-apply")))
	p.waitFor("the confirmation", 5*time.Second, `$("#confirm").open`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the refusal", 15*time.Second, `shown("#marks-error") && text("#marks-error").includes("cannot be killed; nothing changed")
		&& text("#marks-error").endsWith("C1 (sold).") && document.body.dataset.liveKilled === "1"`)
	p.shot("c05b-marks")
	docShots(t, p, "console-marks", "#marks-title")
	p.do("click Release of the hold", chromedp.Click(chromedp.CSS(`#marks tr[data-purpose="sponsor"] button`)))
	p.waitFor("the release's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Release these seats?"
		&& text("#confirm-text").startsWith("Put A1, A2 (held: sponsor) back on sale")`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the hold released", 15*time.Second, `document.body.dataset.liveReserved === "0" && text("#marks-result") === "Released A1, A2."
		&& document.body.dataset.marks === "1" && !shown("#marks-error")`)
	p.do("pick Release", chromedp.SetValue(chromedp.ID("m-action"), "release"))
	setValue(p, "#m-seats", "row B")
	p.do("click Apply to the seats", chromedp.Click(chromedp.ID("m-apply")))
	p.waitFor("the confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-text").startsWith("Put row B back on sale")`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("every seat on sale again", 15*time.Second, `document.body.dataset.liveKilled === "0" && text("#marks-result") === "Released B5."
		&& document.body.dataset.marks === "0" && shown("#marks-none") && !shown("#marks")`)

	// 7c. The payment provider declared degraded: the live view and its
	// errors panel say so; then recovered.
	p.do("click Declare it degraded", chromedp.Click(chromedp.ID("c-provider")))
	p.waitFor("the declaration's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Declare the payment provider degraded?"
		&& document.activeElement === $("#confirm-no")`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the provider degraded", 15*time.Second, `document.body.dataset.liveProvider === "degraded"
		&& text("#live-provider").startsWith("Payment provider: degraded since ") && text("#c-provider") === "Declare it recovered"
		&& $('[data-error="provider"]').dataset.level === "warn" && document.body.dataset.liveErrors === "1"
		&& text("#errors-summary") === "1 thing needs attention." && !shown("#control-error")`)
	p.shot("c05c-provider-degraded")
	docShots(t, p, "console-errors", "#errors-title")
	p.do("click Declare it recovered", chromedp.Click(chromedp.ID("c-provider")))
	p.waitFor("the recovery's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Declare the payment provider recovered?"`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the provider working", 15*time.Second, `document.body.dataset.liveProvider === "working" && text("#c-provider") === "Declare it degraded"
		&& document.body.dataset.liveErrors === "0" && $('[data-error="provider"]').dataset.level === "ok"`)

	// 8. The audit trail: the creation and the three changes, by ops-lead,
	// filtered by event and action.
	p.do("open the audit trail", chromedp.Navigate(gw+"/admin/#/audit"))
	p.waitFor("the audit trail", 15*time.Second, `document.body.dataset.view === "audit" && Number(document.body.dataset.audit) >= 4`)
	setValue(p, "#a-event", ev)
	p.do("pick an action", chromedp.SetValue(chromedp.ID("a-action"), "event.update"))
	p.do("click Show", chromedp.Click(chromedp.ID("a-filter")))
	p.waitFor("three updates", 15*time.Second, `document.body.dataset.audit === "3"
		&& [...document.querySelectorAll("#audit tbody tr")].every((r) => r.innerText.includes("ops-lead") && r.innerText.includes("event.update"))
		&& text("#audit tbody tr:first-child .change") === "admit_per_minute: 60 → 30"`)
	p.shot("c06-audit")

	// 9. Orders: the event's, with the CSV link; then a user's in every
	// event.
	p.do("open the orders", chromedp.Navigate(gw+"/admin/#/orders?event_id="+ev))
	p.waitFor("the orders", 15*time.Second, fmt.Sprintf(`document.body.dataset.view === "orders" && text("#orders-summary") === "1 of 1 order of %s."
		&& shown("#o-csv") && $("#o-csv").getAttribute("href") === "/api/admin/events/%s/orders?format=csv"
		&& text("#orders tbody tr td:nth-of-type(2)") === "console-fan-1" && text("#orders tbody tr td:nth-of-type(5)") === "25.50 EUR"`, ev, ev))
	p.shot("c07-orders")
	setValue(p, "#o-event", "")
	setValue(p, "#o-query", "console-fan-1")
	p.do("click Search", chromedp.Click(chromedp.ID("o-search")))
	p.waitFor("the user's orders", 15*time.Second, `text("#orders-summary") === "1 order in every event match console-fan-1."
		&& text("#orders tbody tr td:nth-of-type(1)") === "console-show" && !shown("#o-csv")`)

	// 10. A refund due (a payment that came after the hold expired) is
	// refunded from the orders, after a confirmation.
	const late = "console-late"
	s.CreateEvent(t, stacktest.Event{ID: late, Name: "Console Late", Rows: 1, SeatsPerRow: 2, Capacity: 1, HoldSeconds: 5, GraceSeconds: 1})
	lateFan := s.Client(t, "console-late-fan", "")
	latePay := startPaying(t, lateFan, late, "A1")
	deadline := time.Now().Add(90 * time.Second)
	for {
		var pos position
		if code, err := lateFan.Do("GET", "/api/booking/position?event_id="+late, nil, &pos); err == nil && code == 200 && pos.Status == "expired" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the late fan's hold did not expire within 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, err := lateFan.Do("POST", latePay+"/pay", nil, nil); err != nil || code != http.StatusSeeOther {
		t.Fatalf("the late fan pays: %d %v", code, err)
	}
	// the sandbox sends the webhook after the redirect: the ledger
	// records the refund due a moment later
	waitAPI(t, "the late payment recorded as a refund due", func() bool {
		var lo struct {
			Orders []struct {
				Status string `json:"status"`
			} `json:"orders"`
		}
		code, err := admin.Do("GET", "/api/admin/events/"+late+"/orders", nil, &lo)
		return err == nil && code == http.StatusOK && len(lo.Orders) == 1 && lo.Orders[0].Status == "refund_due"
	})
	p.do("open the late event's orders", chromedp.Navigate(gw+"/admin/#/orders?event_id="+late))
	p.waitFor("the refund due", 30*time.Second, `document.body.dataset.view === "orders" && text("#orders tbody tr td:nth-of-type(6)") === "refund due"
		&& shown("#orders tbody tr button") && !$("#orders tbody tr button").disabled`)
	p.shot("c08-refund-due")
	p.do("click Refund", chromedp.Click(chromedp.CSS("#orders tbody tr button")))
	p.waitFor("the confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Refund this order?" && text("#confirm-text").includes("console-late-fan")`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("refunded", 20*time.Second, `text("#orders tbody tr td:nth-of-type(6)") === "refunded" && !shown("#orders tbody tr button") && !shown("#orders-error")`)

	// 11. The edit form: the seat map locked, the settings filled in.
	p.do("open the edit form", chromedp.Navigate(gw+"/admin/#/edit/"+ev))
	p.waitFor("the edit form", 15*time.Second, `document.body.dataset.view === "form" && $("#f-id").disabled && $("#f-sections").disabled
		&& $("#f-rate").value === "30" && $("#s1-name").value === "Balcony" && $("#s1-price").value === "25.50"`)
	setValue(p, "#f-name", "Console Test Live (late show)")
	p.do("click Save", chromedp.Click(chromedp.ID("f-submit")))
	p.waitFor("saved, back to live", 15*time.Second, `document.body.dataset.view === "live" && text("#live-title") === "Live: Console Test Live (late show)"`)

	// 11b. A second event with the sale rules and the waitlist set in the
	// form; the edit form shows them, and a refused waitlist setting is
	// the API's own message on its field.
	const rules = "console-rules"
	p.do("open the new event form", chromedp.Navigate(gw+"/admin/#/new"))
	p.waitFor("the form", 10*time.Second, `document.body.dataset.view === "form" && text("#form-title") === "New event"
		&& $("#f-finish").checked && $("#f-orphan").checked && $("#f-offer").value === "0"`)
	setValue(p, "#f-id", rules)
	setValue(p, "#f-name", "Console Rules")
	p.do("untick finish after end", chromedp.Click(chromedp.ID("f-finish")))
	setValue(p, "#f-refundable", "2030-01-01T18:00")
	setValue(p, "#f-offer", "120")
	p.do("tick waitlist before the sell-out", chromedp.Click(chromedp.ID("f-wl-early")))
	p.shot("c12-new-event-rules")
	p.do("click Create", chromedp.Click(chromedp.ID("f-submit")))
	p.waitFor("the live view of the rules event", 30*time.Second, `document.body.dataset.view === "live" && location.hash === "#/live/`+rules+`"
		&& text("#live-title") === "Live: Console Rules" && document.body.dataset.registration === "none" && document.body.dataset.phases === "0"
		&& document.body.dataset.batches === "0" && text("#phase-now") === "No phase: everybody may join."`)
	type ruleSettings struct {
		FinishAfterEnd  bool   `json:"finish_after_end"`
		NoOrphanRule    bool   `json:"no_orphan_rule"`
		RefundableUntil string `json:"refundable_until"`
		OfferSeconds    int    `json:"offer_seconds"`
		WaitlistEarly   bool   `json:"waitlist_early"`
		Phase           string `json:"phase"`
		Audience        string `json:"audience"`
	}
	var rs ruleSettings
	if code, err := admin.Do("GET", "/api/admin/events/"+rules, nil, &rs); err != nil || code != http.StatusOK || rs.FinishAfterEnd ||
		!rs.NoOrphanRule || rs.RefundableUntil != "2030-01-01T18:00:00Z" || rs.OfferSeconds != 120 || !rs.WaitlistEarly {
		t.Fatalf("the rules event as created: %d %v %+v", code, err, rs)
	}
	p.do("open its edit form", chromedp.Navigate(gw+"/admin/#/edit/"+rules))
	p.waitFor("the settings in the edit form", 15*time.Second, `document.body.dataset.view === "form" && $("#f-id").disabled
		&& !$("#f-finish").checked && $("#f-orphan").checked && $("#f-refundable").value === "2030-01-01T18:00"
		&& $("#f-offer").value === "120" && $("#f-wl-early").checked`)
	setValue(p, "#f-offer", "5") // below the API's least offer time
	p.do("click Save", chromedp.Click(chromedp.ID("f-submit")))
	p.waitFor("the API's refusal on its field", 15*time.Second, `document.body.dataset.view === "form" && shown("#form-error")
		&& text("#form-error").startsWith("Offer_seconds must be 0 (off) or from ") && $("#f-offer").getAttribute("aria-invalid") === "true"
		&& document.activeElement === $("#f-offer")`)
	p.shot("c13-waitlist-refused")
	setValue(p, "#f-offer", "0")
	setValue(p, "#f-refundable", "")
	p.do("click Save", chromedp.Click(chromedp.ID("f-submit")))
	p.waitFor("saved, back to live", 15*time.Second, `document.body.dataset.view === "live" && location.hash === "#/live/`+rules+`"`)
	rs = ruleSettings{}
	if code, err := admin.Do("GET", "/api/admin/events/"+rules, nil, &rs); err != nil || code != http.StatusOK || rs.OfferSeconds != 0 ||
		rs.RefundableUntil != "" || !rs.NoOrphanRule || rs.FinishAfterEnd {
		t.Fatalf("the rules event after the edit: %d %v %+v", code, err, rs)
	}

	// 11b2. The box office sells the best 2 seats together to a walk-up
	// customer through the channel named, confirmed first; an unknown
	// seat is refused with the API's message and nothing more is sold.
	p.waitFor("the channel field, labelled", 5*time.Second, `document.querySelector("label[for=b-channel]").textContent === "Channel"`)
	setValue(p, "#b-seats", "2")
	setValue(p, "#b-customer", "Walk-up 7")
	setValue(p, "#b-channel", "desk-2")
	p.do("click Sell the seats", chromedp.Click(chromedp.ID("b-sell")))
	p.waitFor("the sale's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Sell these seats?"
		&& text("#confirm-text").startsWith("Sell the best 2 seats together at the box office through desk-2 to Walk-up 7")`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("sold at the box office", 15*time.Second, `text("#box-result").startsWith("Sold ") && text("#box-result").includes("(order ord_")
		&& !shown("#box-error") && $("#b-seats").value === "" && document.body.dataset.liveSold === "2"`)
	p.shot("c13b-box-office")
	var boxOrders struct {
		Orders []struct {
			Channel     string `json:"channel"`
			CustomerRef string `json:"customer_ref"`
			SoldBy      string `json:"sold_by"`
		} `json:"orders"`
	}
	if code, err := admin.Do("GET", "/api/admin/events/"+rules+"/orders", nil, &boxOrders); err != nil || code != http.StatusOK ||
		len(boxOrders.Orders) != 1 || boxOrders.Orders[0].Channel != "desk-2" || boxOrders.Orders[0].CustomerRef != "Walk-up 7" ||
		boxOrders.Orders[0].SoldBy != "ops-lead" {
		t.Fatalf("the box-office order: %d %v %+v", code, err, boxOrders)
	}
	setValue(p, "#b-seats", "ZZ99")
	p.do("click Sell the seats", chromedp.Click(chromedp.ID("b-sell")))
	p.waitFor("the confirmation", 5*time.Second, `$("#confirm").open`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the refusal", 15*time.Second, `shown("#box-error") && text("#box-error").includes("ZZ99") && !shown("#box-result")
		&& document.body.dataset.liveSold === "2"`)

	// 11c. The phase switched by hand, confirmed first: in the history.
	setValue(p, "#ph-phase", "presale")
	p.do("pick code holders", chromedp.SetValue(chromedp.ID("ph-audience"), "code"))
	p.do("click Switch the phase", chromedp.Click(chromedp.ID("ph-apply")))
	p.waitFor("the switch's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Switch the phase?"
		&& text("#confirm-text").startsWith("From now on: phase presale, access code holders may join.")`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("the phase and its history", 15*time.Second, `document.body.dataset.phase === "presale/code"
		&& text("#phase-now") === "Phase presale: access code holders may join." && document.body.dataset.phases === "1"
		&& text("#phases tbody tr th") === "presale" && text("#phases tbody tr td:nth-of-type(2)") === "access code holders"
		&& text("#phases tbody tr td:nth-of-type(3)") === "(none)" && text("#phases tbody tr td:nth-of-type(4)") === "ops-lead" && !shown("#phase-error")`)
	p.shot("c14-phase")
	if code, err := admin.Do("GET", "/api/admin/events/"+rules, nil, &rs); err != nil || code != http.StatusOK || rs.Phase != "presale" || rs.Audience != "code" {
		t.Fatalf("the phase after the switch: %d %v %+v", code, err, rs)
	}

	// 11d. Access codes for the phase: generated, downloaded as CSV (its
	// rows are the batch's codes), listed as a batch; a code opens the
	// phase to a fan, and a fan without one is refused.
	setValue(p, "#k-count", "3")
	setValue(p, "#k-uses", "2")
	setValue(p, "#k-phase", "presale")
	p.do("click Generate", chromedp.Click(chromedp.ID("k-apply")))
	p.waitFor("the codes generated", 15*time.Second, `shown("#codes-result") && shown("#codes-download")
		&& text("#codes-result-text") === "Generated 3 codes for phase presale. They are not shown again: download them now."
		&& document.activeElement === $("#codes-download") && document.body.dataset.batches === "1"
		&& text("#batches tbody tr td:nth-of-type(1)") === "presale" && text("#batches tbody tr td:nth-of-type(2)") === "3"
		&& text("#batches tbody tr td:nth-of-type(3)") === "2" && !shown("#codes-error")`)
	p.shot("c15-codes")
	downloads := filepath.Join(out, "downloads")
	if err := os.MkdirAll(downloads, 0o755); err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(p.ctx, 15*time.Second)
	_, err := cdp.Call(dctx, chromedp.FromContext(p.ctx).Browser, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads, BrowserContextID: chromedp.FromContext(p.ctx).BrowserContextID})
	dcancel()
	if err != nil {
		t.Fatalf("allow downloads: %v", err)
	}
	codesFile := p.str(`document.body.dataset.codesFile`)
	if !strings.HasPrefix(codesFile, "codes-"+rules+"-") || !strings.HasSuffix(codesFile, ".csv") {
		t.Fatalf("the codes file is named %q", codesFile)
	}
	p.do("click Download", chromedp.Click(chromedp.ID("codes-download")))
	var rows [][]string
	waitAPI(t, "the codes CSV downloaded", func() bool {
		b, err := os.ReadFile(filepath.Join(downloads, codesFile))
		if err != nil {
			return false
		}
		rows, err = csv.NewReader(strings.NewReader(string(b))).ReadAll()
		return err == nil && len(rows) == 4
	})
	seen := map[string]bool{}
	if strings.Join(rows[0], ",") != "code,batch_id,phase,uses,seats,expires_at" {
		t.Fatalf("the CSV header: %v", rows[0])
	}
	for _, r := range rows[1:] {
		if len(r) != 6 || r[0] == "" || seen[r[0]] || r[1] != rows[1][1] || r[2] != "presale" || r[3] != "2" || r[4] != "0" || r[5] != "" {
			t.Fatalf("a CSV row: %v (of %v)", r, rows)
		}
		seen[r[0]] = true
	}
	coder := s.Client(t, "console-code-fan", "")
	if code, err := coder.Do("POST", "/api/booking/request", map[string]string{"event_id": rules, "code": rows[1][0]}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("a fan joins with a downloaded code: %d %v", code, err)
	}
	nocode := s.Client(t, "console-nocode-fan", "")
	if code, err := nocode.Do("POST", "/api/booking/request", map[string]string{"event_id": rules}, nil); err != nil || code != http.StatusForbidden {
		t.Fatalf("a fan without a code in the code phase: %d %v, want 403", code, err)
	}
	p.waitFor("the code's use in the batches", 30*time.Second, `text("#batches tbody tr [data-used]") === "1"`)

	// 11e. Registration: the window opened, two fans register, the window
	// closed, the draw selects one of them.
	now := time.Now().UTC()
	setValue(p, "#r-phase", "fans")
	setValue(p, "#r-opens", now.Add(-time.Hour).Format("2006-01-02T15:04"))
	setValue(p, "#r-closes", now.Add(time.Hour).Format("2006-01-02T15:04"))
	p.do("click Save the window", chromedp.Click(chromedp.ID("r-apply")))
	p.waitFor("the window's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Open registration?"`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("registration open", 15*time.Second, `document.body.dataset.registration === "window" && document.body.dataset.registered === "0"
		&& text("#reg-state").startsWith("Open until ") && text("#reg-state").endsWith(" for phase fans.") && !shown("#reg-error")
		&& !$("#d-apply").disabled`)
	for i := range 2 {
		fan := s.Client(t, fmt.Sprintf("console-reg-fan-%d", i), "")
		if code, err := fan.Do("POST", "/api/events/"+rules+"/registration", nil, nil); err != nil || code != http.StatusCreated {
			t.Fatalf("fan %d registers: %d %v", i, code, err)
		}
	}
	setValue(p, "#r-opens", now.Add(-2*time.Hour).Format("2006-01-02T15:04"))
	setValue(p, "#r-closes", now.Add(-time.Minute).Format("2006-01-02T15:04"))
	p.do("click Save the window", chromedp.Click(chromedp.ID("r-apply")))
	p.waitFor("the change's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Change the registration window?"`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("registration closed, two registered", 15*time.Second, `document.body.dataset.registered === "2"
		&& text("#reg-state").startsWith("Closed at ") && text("#reg-registered") === "2" && text("#reg-selected") === "not drawn yet"`)
	p.shot("c16-registration-closed")
	setValue(p, "#d-count", "1")
	p.do("click Run the selection", chromedp.Click(chromedp.ID("d-apply")))
	p.waitFor("the draw's confirmation", 5*time.Second, `$("#confirm").open && text("#confirm-title") === "Run the selection?"
		&& text("#confirm-text").startsWith("Select 1 of 2 registrants by the draw")`)
	p.do("confirm", chromedp.Click(chromedp.ID("confirm-yes")))
	p.waitFor("drawn", 15*time.Second, `document.body.dataset.registration === "drawn" && document.body.dataset.selected === "1"
		&& text("#reg-state").startsWith("Drawn at ") && text("#reg-state").includes("(draw): 1 of 2 selected for phase fans. Seed ")
		&& text("#reg-selected") === "1" && $("#d-apply").disabled && $("#r-apply").disabled && !shown("#reg-error")`)
	p.shot("c17-registration-drawn")
	p.phone("c17b-sale-phone") // nothing wider than a phone (the seed, the tables scroll)
	docShots(t, p, "console-sale", "#phase-title")

	// 11f. A webhook payment-webhook refuses (a bad signature) is in the
	// errors panel of every event.
	req, _ := http.NewRequest("POST", s.URL(stacktest.PaymentWebhook)+payment.PathSuccess, strings.NewReader(`{"status":"success"}`))
	req.Header.Set(payment.SignatureHeader, "t=1,v1=00")
	res, err := s.HTTP.Do(req)
	if err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a badly signed webhook: %v %v", res, err)
	}
	res.Body.Close()
	p.waitFor("the refused webhook in the errors panel", 20*time.Second, `$('[data-error="webhooks"]').dataset.level === "warn"
		&& text('[data-error-value="webhooks"]') === "1" && text('[data-error-note="webhooks"]').includes("bad signature 1")
		&& text('[data-error-note="webhooks"]').includes("check the webhook secret") && document.body.dataset.liveErrors === "1"`)
	p.shot("c18-webhook-refused")

	// 11g. The audit trail has every one of these actions, by ops-lead.
	p.do("open the audit trail", chromedp.Navigate(gw+"/admin/#/audit"))
	p.waitFor("the audit trail", 15*time.Second, `document.body.dataset.view === "audit"`)
	setValue(p, "#a-event", rules)
	p.do("pick any action", chromedp.SetValue(chromedp.ID("a-action"), ""))
	p.do("click Show", chromedp.Click(chromedp.ID("a-filter")))
	p.waitFor("the rules event's actions", 15*time.Second, `(() => {
		const rows = [...document.querySelectorAll("#audit tbody tr")];
		const acts = rows.map((r) => r.children[2].textContent);
		return rows.length === 10 && rows.every((r) => r.children[1].textContent.startsWith("ops-lead ") && r.children[3].textContent === "`+rules+`")
			&& ["event.create", "event.update", "boxoffice.sell", "phase.set", "codes.create", "registration.open", "selection.draw"].every((a) => acts.includes(a))
			&& acts.filter((a) => a === "registration.open").length === 2 && acts.filter((a) => a === "event.update").length === 3;
	})()`)
	p.shot("c19-audit-sale")

	// 12. A viewer sees it all, every control disabled; the API refuses
	// the viewer's change.
	v := b.tab(t, "")
	v.do("open the live view", chromedp.Navigate(gw+"/admin/#/live/"+ev))
	v.waitFor("the sign-in page", 15*time.Second, `location.pathname === "/admin/sign-in.html" && document.body.dataset.ready === "1"`)
	consoleSignIn(v, "ops-watch", viewPW)
	v.waitFor("the console", 30*time.Second, `location.pathname === "/admin/" && document.body.dataset.ready === "1"
		&& document.body.dataset.role === "viewer" && !shown("#new-event")`)
	v.shot("c08-viewer-events")
	v.do("open the live view", chromedp.Navigate(gw+"/admin/#/live/"+ev))
	v.waitFor("the viewer's live view", 30*time.Second, `document.body.dataset.view === "live" && document.body.dataset.role === "viewer"
		&& shown("#viewer-note") && document.body.dataset.liveInRoom === "2" && $("#c-pause").disabled && $("#c-rate").disabled
		&& $("#c-capacity-apply").disabled && $("#c-hold").disabled && !shown("#live-edit")
		&& $("#c-provider").disabled && $("#m-apply").disabled && $("#m-seats").disabled && $("#m-action").disabled`)
	v.shot("c09-viewer-live")
	v.do("open the orders", chromedp.Navigate(gw+"/admin/#/orders?event_id="+ev))
	v.waitFor("the viewer's orders", 15*time.Second, `document.body.dataset.view === "orders" && shown("#orders tbody tr button[data-cancel]")
		&& $("#orders tbody tr button[data-cancel]").disabled`)
	if st := v.str(`(() => { const x = new XMLHttpRequest(); x.open("PATCH", "/api/admin/events/` + ev + `", false);
		x.setRequestHeader("Content-Type", "application/json"); x.send('{"paused":true}'); return x.status + " " + JSON.parse(x.responseText).code; })()`); st != "403 forbidden" {
		t.Errorf("a viewer's PATCH from the console: %s, want 403 forbidden", st)
	}
	for _, c := range [][3]string{{"PUT", "/api/admin/provider", `{"degraded":true}`},
		{"POST", "/api/admin/events/" + ev + "/seat-marks", `{"action":"kill","seat_ids":["A1"]}`}} {
		if st := v.str(`(() => { const x = new XMLHttpRequest(); x.open("` + c[0] + `", "` + c[1] + `", false);
		x.setRequestHeader("Content-Type", "application/json"); x.send('` + c[2] + `'); return x.status + " " + JSON.parse(x.responseText).code; })()`); st != "403 forbidden" {
			t.Errorf("a viewer's %s %s from the console: %s, want 403 forbidden", c[0], c[1], st)
		}
	}
	v.do("open the rules event", chromedp.Navigate(gw+"/admin/#/live/"+rules))
	v.waitFor("the viewer's sale controls", 30*time.Second, `document.body.dataset.view === "live" && document.body.dataset.registration === "drawn"
		&& document.body.dataset.phases === "1" && document.body.dataset.batches === "1" && $("#ph-apply").disabled && $("#ph-phase").disabled
		&& $("#k-apply").disabled && $("#k-count").disabled && $("#r-apply").disabled && $("#d-apply").disabled`)
	v.shot("c20-viewer-sale")
	for _, c := range [][3]string{{"PUT", "/api/admin/events/" + rules + "/phase", `{"phase":"","audience":"public"}`},
		{"POST", "/api/admin/events/" + rules + "/codes?format=csv", `{"count":1}`},
		{"PUT", "/api/admin/events/" + rules + "/registration", `{"phase":"fans","opens_at":"2030-01-01T00:00:00Z","closes_at":"2030-01-02T00:00:00Z"}`},
		{"POST", "/api/admin/events/" + rules + "/registration/draw", `{"method":"draw","count":1}`},
		{"PUT", "/api/admin/events/" + rules + "/waitlist", `{"offer_seconds":120}`},
		{"PATCH", "/api/admin/events/" + rules, `{"no_orphan_rule":false,"finish_after_end":true,"refundable_until":""}`}} {
		if st := v.str(`(() => { const x = new XMLHttpRequest(); x.open("` + c[0] + `", "` + c[1] + `", false);
		x.setRequestHeader("Content-Type", "application/json"); x.send('` + c[2] + `'); return x.status + " " + JSON.parse(x.responseText).code; })()`); st != "403 forbidden" {
			t.Errorf("a viewer's %s %s from the console: %s, want 403 forbidden", c[0], c[1], st)
		}
	}
	v.noExceptions()

	// 13. The sold order is cancelled from the orders: a reason is
	// required; every seat by default; the seat is back on sale and the
	// refund made.
	p.do("open the orders", chromedp.Navigate(gw+"/admin/#/orders?event_id="+ev))
	p.waitFor("the sold order", 15*time.Second, `document.body.dataset.view === "orders" && text("#orders tbody tr td:nth-of-type(6)") === "completed"
		&& shown("#orders tbody tr button[data-cancel]") && !$("#orders tbody tr button[data-cancel]").disabled`)
	p.do("click Cancel", chromedp.Click(chromedp.CSS("#orders tbody tr button[data-cancel]")))
	p.waitFor("the cancellation dialog", 5*time.Second, `$("#cancel-dialog").open && document.activeElement === $("#cancel-reason")
		&& text("#cancel-text").includes("console-fan-1 bought C1") && $("#cancel-all").checked && $("#cancel-some").disabled`)
	p.do("confirm without a reason", chromedp.Click(chromedp.ID("cancel-yes")))
	p.waitFor("the reason asked for", 5*time.Second, `$("#cancel-dialog").open && text("#cancel-error") === "Enter the reason for the cancellation."`)
	p.shot("c10-cancel-dialog")
	setValue(p, "#cancel-reason", "show moved, fan cannot come")
	p.do("confirm", chromedp.Click(chromedp.ID("cancel-yes")))
	p.waitFor("cancelled and refunded", 20*time.Second, `!$("#cancel-dialog").open && shown("#cancel-result") && $("#cancel-result").dataset.refund === "refunded"
		&& text("#cancel-result").includes("C1 cancelled; 25.50 EUR refunded") && text("#orders tbody tr td:nth-of-type(6)") === "cancelled: 25.50 EUR refunded"
		&& !$("#orders tbody tr button[data-cancel]") && !shown("#orders-error") && document.activeElement === $("#cancel-result")`)
	p.shot("c11-cancelled")
	var after struct {
		Counts struct {
			Available int64 `json:"available"`
			Sold      int64 `json:"sold"`
		} `json:"counts"`
	}
	if code, err := admin.Do("GET", "/api/admin/events/"+ev, nil, &after); err != nil || code != http.StatusOK || after.Counts.Sold != 0 {
		t.Errorf("the event after the cancellation: %d %v %+v, want nothing sold", code, err, after)
	}

	// 14. Sign out: the live view stops and the console is closed to this
	// browser.
	p.do("click Sign out", chromedp.Click(chromedp.ID("sign-out")))
	p.waitFor("signed out", 15*time.Second, `location.pathname === "/admin/sign-in.html" && text("#notice") === "You are signed out."`)
	p.do("open the console again", chromedp.Navigate(gw+"/admin/#/live/"+ev))
	p.waitFor("sent to sign in", 15*time.Second, `location.pathname === "/admin/sign-in.html" && document.body.dataset.ready === "1"`)
	p.noExceptions()
}

// consoleSignIn signs in on the sign-in page p shows.
func consoleSignIn(p *page, account, password string) {
	p.t.Helper()
	p.do("type the account", chromedp.SendKeys(chromedp.ID("account"), account))
	p.do("type the password", chromedp.SendKeys(chromedp.ID("password"), password))
	p.do("click Sign in", chromedp.Click(chromedp.ID("submit")))
}

// setValue replaces an input's value as if typed (input events fire).
func setValue(p *page, sel, v string) {
	p.t.Helper()
	p.do("set "+sel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q);
		e.value = %q; e.dispatchEvent(new Event("input", { bubbles: true })); e.dispatchEvent(new Event("change", { bubbles: true })); })()`, sel, v)))
}

// docShots writes the viewport on a desktop and on a phone to
// docs/img/<name>-desktop.png and -phone.png when
// BOXOFFICE_DOC_SCREENSHOTS=1 (docs/operators.md shows them), scrolled
// to the element top ("": the top of the page).
func docShots(t *testing.T, p *page, name, top string) {
	t.Helper()
	if os.Getenv("BOXOFFICE_DOC_SCREENSHOTS") != "1" {
		return
	}
	root, err := redistest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	save := func(suffix string) {
		scroll := `window.scrollTo(0, 0)`
		if top != "" {
			scroll = fmt.Sprintf(`document.querySelector(%q).scrollIntoView()`, top)
		}
		p.do("scroll for the docs", chromedp.Evaluate[chromedp.Void](scroll))
		b, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			p.fail("screenshot for the docs", err)
		}
		path := filepath.Join(root, "docs", "img", name+"-"+suffix+".png")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("docs screenshot: %s", path)
	}
	save("desktop")
	p.do("phone viewport", chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateScale(1)))
	p.waitFor("laid out for a phone", 5*time.Second, fmt.Sprintf(`window.innerWidth === %d`, phoneW))
	time.Sleep(1200 * time.Millisecond) // the chart redrawn at the phone's width
	save("phone")
	p.do("desktop viewport", chromedp.Steps(chromedp.EmulateReset(), chromedp.EmulateViewport(desktopW, desktopH)))
}
