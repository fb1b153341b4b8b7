package browser

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice/pkg/receipt"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// progressPolling: the WebSocket is blocked, and the waiting fan's place
// comes from the event's progress document (GET /api/events/{id}/progress,
// anonymous), not from per-user position reads: while the users ahead are
// admitted one by one, the place shown follows the document's served
// against the fan's sequence with no further position request; once the
// fan's sequence is served, one exact read finds the turn.
func progressPolling(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-progress"
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Browser Test Progress", Rows: 2, SeatsPerRow: 6,
		Capacity: 1, HoldSeconds: holdSecs, GraceSeconds: 5})
	ahead := make([]*stacktest.Client, 3) // ahead[0] admitted, 1 and 2 waiting
	for i := range ahead {
		ahead[i] = s.Client(t, "ahead-"+strconv.Itoa(i), "")
		if code, err := ahead[i].Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("join %d: %d %v", i, code, err)
		}
	}
	// Every WebSocket goes to a closed port; fetch is counted by kind and
	// by whether it carried a token.
	p := b.tab(t, `window.BOXOFFICE_TIMING = { pollMinMS: 300, pollMaxMS: 600, exactEveryMS: 600000 };
	(() => {
		const Real = window.WebSocket;
		window.WebSocket = function (url, protocols) { return new Real("ws://127.0.0.1:9/ws", protocols); };
		window.__reads = { position: 0, progress: 0, progressWithToken: 0 };
		const realFetch = window.fetch;
		window.fetch = function (path, opts) {
			const u = String(path);
			if (u.includes("/api/booking/position")) window.__reads.position++;
			if (u.includes("/progress")) {
				window.__reads.progress++;
				if (opts && opts.headers && opts.headers.Authorization) window.__reads.progressWithToken++;
			}
			return realFetch.apply(this, arguments);
		};
	})();`)
	gw := s.GatewayURL()
	p.do("open the event page", chromedp.Navigate(gw+"/?event_id="+ev))
	p.waitFor("event page, polling", 15*time.Second, `shown("#panel-join") && document.body.dataset.mode === "polling"`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("waiting, third in line", 10*time.Second,
		`shown("#panel-waiting") && text("#position") === "3" && document.body.dataset.mode === "polling" && window.__reads.progress > 0`)
	positionReads := p.str(`window.__reads.position`)

	for i, want := range []string{"2", "1"} {
		// the admitted user leaves: the next one is admitted, served grows
		if code, err := ahead[i].Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("cancel %d: %d %v", i, code, err)
		}
		p.waitFor("place "+want+" from the progress document", 20*time.Second,
			`text("#position") === "`+want+`" && window.__reads.position === `+positionReads)
	}
	p.shot("60-progress-polling")
	if got := p.str(`window.__reads.progressWithToken`); got != "0" {
		t.Fatalf("%s progress reads carried the fan's token (a CDN would not share them)", got)
	}
	if code, err := ahead[2].Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("cancel 2: %d %v", code, err)
	}
	p.waitFor("your turn, from the exact read after the sequence was served", 20*time.Second,
		`shown("#panel-turn") && document.body.dataset.mode === "polling" && window.__reads.position > `+positionReads)
	p.shot("61-progress-your-turn")
	p.noExceptions()
}

// chanceOfATicket: the waiting page shows the chance of a ticket in words
// (from the progress document's chance parameters and the fan's place),
// tells a fan who is unlikely to get a seat that it may leave, and
// announces a change of words through the polite live region; axe-core
// finds nothing on either state. Two seats, a room of one and twenty fans
// ahead: "Unlikely". As admitted fans leave without buying, the places
// passed take no seats, the estimate of seats per place falls and the
// words rise to "Slim chance".
func chanceOfATicket(t *testing.T, s *stacktest.Stack, b *browser) {
	const ev = "show-chance"
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: "Browser Test Chance", Rows: 1, SeatsPerRow: 2,
		Capacity: 1, HoldSeconds: holdSecs, GraceSeconds: 5})
	ahead := make([]*stacktest.Client, 20) // ahead[0] admitted, the others waiting
	for i := range ahead {
		ahead[i] = s.Client(t, "chance-"+strconv.Itoa(i), "")
		if code, err := ahead[i].Do("POST", "/api/booking/request", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("join %d: %d %v", i, code, err)
		}
	}
	p := b.tab(t, `window.BOXOFFICE_TIMING = { pollMinMS: 300, pollMaxMS: 600, exactEveryMS: 600000 };
	(() => {
		const Real = window.WebSocket;
		window.WebSocket = function (url, protocols) { return new Real("ws://127.0.0.1:9/ws", protocols); };
		window.__said = [];
		document.addEventListener("DOMContentLoaded", () => {
			const r = document.querySelector("#announce");
			new MutationObserver(() => { if (r.textContent) window.__said.push(r.textContent); })
				.observe(r, { childList: true, characterData: true, subtree: true });
		});
	})();`)
	p.do("open the event page", chromedp.Navigate(s.GatewayURL()+"/?event_id="+ev))
	p.waitFor("event page, polling", 15*time.Second, `shown("#panel-join") && document.body.dataset.mode === "polling"`)
	p.do("click Join", chromedp.Click(chromedp.ID("join")))
	p.waitFor("waiting, told a ticket is unlikely and that it may leave", 10*time.Second,
		`shown("#panel-waiting") && text("#position") === "20" && shown("#chance-row") &&
		text("#chance") === "Unlikely: most seats will be gone before your turn" &&
		text("#chance-note").includes("leave the queue") && shown("#leave")`)
	p.shot("62-chance-unlikely")
	joinReceiptShown(t, s, p, ev, 21)
	for i := 0; i < 8; i++ {
		// the admitted fan leaves without buying: the next one is admitted
		if code, err := ahead[i].Do("POST", "/api/booking/cancel", map[string]string{"event_id": ev}, nil); err != nil || code != http.StatusOK {
			t.Fatalf("cancel %d: %d %v", i, code, err)
		}
		p.waitFor("place "+strconv.Itoa(19-i), 20*time.Second, `text("#position") === "`+strconv.Itoa(19-i)+`"`)
	}
	p.waitFor("the words rose and were announced", 20*time.Second,
		`text("#chance") === "Slim chance" && /^\(about \d+ %\)$/.test(text("#chance-note")) &&
		window.__said.some((s) => s.includes("Chance of a ticket: Slim chance."))`)
	p.shot("63-chance-slim")
	p.noExceptions()
}

// joinReceiptShown: beside the chance, the waiting page shows the join's
// receipt (join number seq), which verifies offline against the
// gateway's JWKS and binds the page's user; it offers a download of it
// and copies it (or, without the clipboard, selects it); axe-core finds
// nothing with the receipt open.
func joinReceiptShown(t *testing.T, s *stacktest.Stack, p *page, eventID string, seq int64) {
	t.Helper()
	p.waitFor("the join receipt", 10*time.Second,
		`shown("#receipt-row") && text("#receipt-seq") === "`+strconv.FormatInt(seq, 10)+`" && shown("#chance-row") &&
		document.querySelector("#receipt-download").href.startsWith("blob:") &&
		document.querySelector("#receipt-download").download === "receipt-`+eventID+`-`+strconv.FormatInt(seq, 10)+`.json"`)
	var r receipt.Receipt
	if err := json.Unmarshal([]byte(p.str(`document.querySelector("#receipt-text").textContent`)), &r); err != nil {
		t.Fatalf("the page's receipt: %v", err)
	}
	resp, err := http.Get(s.GatewayURL() + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	c, err := receipt.VerifyFor(r, jwks, eventID)
	if err != nil || r.Leaf.Seq != seq {
		t.Fatalf("the page's receipt (seq %d) does not verify: %v", r.Leaf.Seq, err)
	}
	if user := p.str(`localStorage.getItem("bo_user")`); !receipt.Binds(r, c, user) {
		t.Fatalf("the page's receipt does not bind its user %q", user)
	}
	p.do("copy the receipt", chromedp.Click(chromedp.ID("receipt-copy")))
	p.waitFor("copied, or selected to copy", 5*time.Second,
		`text("#receipt-status") === "Receipt copied." ||
		 (text("#receipt-status").startsWith("Selected below") && document.querySelector("#receipt-details").open &&
		  String(window.getSelection()).includes('"root"'))`)
	p.do("open the receipt", chromedp.Evaluate[chromedp.Void](`document.querySelector("#receipt-details").open = true`))
	p.shot("64-join-receipt")
}
