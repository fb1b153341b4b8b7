package browser

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// TestSaleWindowPage: in the fan's time zone (Asia/Tokyo here) the event
// list shows each sale's start and end, "Sale ended" instead of "Get
// tickets" once the end passed, and the event page of an ended sale says
// so without a Join button; a fan cancels their own order from the
// tickets list (a confirmation first) while the event allows it, and sees
// it cancelled and refunded. axe-core on every state, no uncaught
// exception.
func TestSaleWindowPage(t *testing.T) {
	chromium, axeJS, out := browserSetup(t, "browser-window")
	s := stacktest.Start(t, stacktest.Options{
		LogDir:   filepath.Join(out, "logs"),
		Services: []string{stacktest.Notifier, stacktest.PaymentWebhook, stacktest.PaymentSandbox, stacktest.Gateway},
	})
	admin := s.Client(t, "window-admin", auth.RoleAdmin)
	for _, ev := range []map[string]any{
		{"id": "win-open", "name": "Browser Test Window", "rows": 1, "seats_per_row": 4, "capacity": 5, "hold_seconds": 300,
			"sales_start": "2026-01-01T00:00:00Z", "sales_end": "2099-06-01T18:30:00Z", "refundable_until": "2099-06-01T00:00:00Z"},
		{"id": "win-ended", "name": "Browser Test Ended", "rows": 1, "seats_per_row": 2, "capacity": 5,
			"sales_end": "2000-01-01T12:00:00Z"},
	} {
		if code, err := admin.Do("POST", "/api/admin/events", ev, nil); err != nil || code != http.StatusCreated {
			t.Fatalf("create %v: %d %v", ev["id"], code, err)
		}
	}
	fan := s.Client(t, "window-fan", "")
	payURL := startPaying(t, fan, "win-open", "A1")
	if code, err := fan.Do("POST", payURL+"/pay", nil, nil); err != nil || code != http.StatusSeeOther {
		t.Fatalf("the fan pays at the sandbox: %d %v", code, err)
	}
	waitAPI(t, "the fan's order in the ledger", func() bool {
		var r struct {
			Orders []struct{ Status string } `json:"orders"`
		}
		code, err := fan.Do("GET", "/api/orders", nil, &r)
		return err == nil && code == http.StatusOK && len(r.Orders) == 1 && r.Orders[0].Status == "completed"
	})

	b := newBrowser(t, chromium, out, axeJS)
	p := b.tab(t, `localStorage.setItem("bo_user", "window-fan"); localStorage.setItem("bo_token", `+strconv.Quote(fan.Token)+`);`)
	if _, err := chromedp.Run(p.ctx, func(ctx context.Context, tg *chromedp.Target) (cdp.Empty, error) {
		return cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
	}); err != nil {
		t.Fatalf("time zone: %v", err)
	}

	// 1. The list: start and end in Tokyo's time, Sale ended, the ticket
	// with its Cancel button.
	p.do("open the event list", chromedp.Navigate(s.GatewayURL()+"/"))
	p.waitFor("the sale windows and the ticket", 20*time.Second, `page.includes("On sale from Jan 1, 2026")
		&& page.includes("until Jun 2, 2099") && page.includes("GMT+9")
		&& page.includes("Sale ended Jan 1, 2000, 09:00 PM GMT+9")
		&& [...document.querySelectorAll("#events button")].some((b) => b.disabled && b.textContent === "Sale ended")
		&& !$('a[data-event="win-ended"]') && !!$('a[data-event="win-open"]')
		&& [...document.querySelectorAll(".tickets button")].some((b) => b.textContent === "Cancel order")`)
	p.shot("w00-events-sale-window")

	// 2. Cancel, confirmed: the order is cancelled and refunded.
	p.str(`([...document.querySelectorAll(".tickets button")].find((b) => b.textContent === "Cancel order").click(), "")`)
	p.waitFor("the confirmation", 5*time.Second, `[...document.querySelectorAll(".tickets .confirm")].some((c) => !c.hidden)
		&& document.activeElement && document.activeElement.textContent === "Yes, cancel and refund"`)
	p.shot("w01-cancel-confirm")
	p.str(`(document.activeElement.click(), "")`)
	p.waitFor("the order cancelled and refunded", 30*time.Second, `$(".tickets li") && $(".tickets li").dataset.status === "cancelled"
		&& text(".tickets li").includes("Refund made") && ![...document.querySelectorAll(".tickets button")].some((b) => b.textContent === "Cancel order")`)
	p.shot("w02-cancelled")
	var r struct {
		Orders []struct{ Status string } `json:"orders"`
	}
	if code, err := fan.Do("GET", "/api/orders", nil, &r); err != nil || code != http.StatusOK || len(r.Orders) != 1 || r.Orders[0].Status != "cancelled" {
		t.Fatalf("the fan's orders after the cancellation: %d %v %+v", code, err, r)
	}

	// 3. The ended sale's page: no Join, it says the sale ended.
	p.do("open the ended event", chromedp.Navigate(s.GatewayURL()+"/?event_id=win-ended"))
	p.waitFor("Sale ended", 20*time.Second, `shown("#panel-done") && text("#done-title") === "Sale ended"
		&& !shown("#join") && text("#event-meta").includes("Sale ended")`)
	p.shot("w03-event-sale-ended")
	p.noExceptions()
}
