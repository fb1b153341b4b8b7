package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/report"
)

// TestConsoleLiveContract: GET /api/admin/events/{id}/live for every
// role, and its refusals (no caller 401, a fan's JWT 403, unknown and
// malformed ids 404), against docs/openapi.yaml; and a viewer, who reads
// everything, is refused every control of the console (403).
func TestConsoleLiveContract(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ct := contracttest.Load(t)
	h.h = ct.Wrap(h.h, nil)
	h.account("ada", operators.Admin)
	h.account("otto", operators.Operator)
	h.account("vera", operators.Viewer)
	admin, otto, vera := h.signIn("ada", opPassword), h.signIn("otto", opPassword), h.signIn("vera", opPassword)
	h.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 1, "hold_seconds": 60,
		"admit_per_minute": 30})

	for _, c := range []*http.Cookie{admin, otto, vera} {
		r, hdr := h.send("GET", "/api/admin/events/e1/live", c, nil)
		if r.code != http.StatusOK || r.str("event_id") != "e1" || r.str("name") != "Show" || r.num("capacity") != 1 ||
			r.num("admit_per_minute") != 30 || r.body["hold_seconds"] != 60.0 || hdr.Get("Cache-Control") != "no-store" {
			t.Fatalf("live as %s: %d %s %v", c.Value[:4], r.code, r.raw, hdr)
		}
	}
	// a fan joins: the next snapshot (at most a second later) shows them
	if r := h.do("POST", "/api/booking/request", h.token("fan", ""), map[string]string{"event_id": "e1"}); r.code != http.StatusOK {
		t.Fatalf("join: %d %s", r.code, r.raw)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, _ := h.send("GET", "/api/admin/events/e1/live", vera, nil)
		seats, _ := r.body["seats"].(map[string]any)
		if r.num("in_room") == 1 && r.num("admitted_last_minute") == 1 && seats["total"] == 4.0 && seats["available"] == 4.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the join is not in the live document: %s", r.raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// an API token and the admin JWT read it too
	if r := h.do("GET", "/api/admin/events/e1/live", h.admin, nil); r.code != http.StatusOK {
		t.Fatalf("live with the admin JWT: %d %s", r.code, r.raw)
	}

	// the refusals
	r, hdr := h.send("GET", "/api/admin/events/e1/live", nil, nil)
	want(t, r, http.StatusUnauthorized, "unauthorized")
	if hdr.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	want(t, h.do("GET", "/api/admin/events/e1/live", h.token("fan", ""), nil), http.StatusForbidden, "forbidden")
	want(t, h.do("GET", "/api/admin/events/e1/live", operators.TokenPrefix+"made-up", nil), http.StatusUnauthorized, "unauthorized")
	r, _ = h.send("GET", "/api/admin/events/e1/live", &http.Cookie{Name: operators.CookieName, Value: "stolen"}, nil)
	want(t, r, http.StatusUnauthorized, "unauthorized")
	r, _ = h.send("GET", "/api/admin/events/nope/live", vera, nil)
	want(t, r, http.StatusNotFound, "event_not_found")
	r, _ = h.send("GET", "/api/admin/events/a%00b/live", vera, nil)
	want(t, r, http.StatusNotFound, "event_not_found")
	r, _ = h.send("POST", "/api/admin/events/e1/live", admin, nil)
	want(t, r, http.StatusMethodNotAllowed, "")

	// the console's controls, as a viewer: 403, nothing changes
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PATCH", "/api/admin/events/e1", map[string]any{"paused": true}},
		{"PATCH", "/api/admin/events/e1", map[string]any{"capacity": 3}},
		{"PATCH", "/api/admin/events/e1", map[string]any{"admit_per_minute": 5}},
		{"PATCH", "/api/admin/events/e1", map[string]any{"hold_seconds": 30}},
		{"POST", "/api/admin/events", map[string]any{"id": "e2", "rows": 1, "seats_per_row": 2}},
		{"POST", "/api/admin/refunds/ord_1", nil},
		{"POST", "/api/admin/orders/ord_1/cancel", map[string]any{"reason": "test"}},
		{"POST", "/api/admin/events/e1/seat-marks", map[string]any{"action": "hold", "purpose": "sponsor", "seat_ids": []string{"A1"}}},
		{"POST", "/api/admin/events/e1/seat-marks", map[string]any{"action": "kill", "row": "A"}},
		{"PUT", "/api/admin/provider", map[string]any{"degraded": true}},
		{"GET", "/api/admin/audit", nil},
		{"PATCH", "/api/admin/events/e1", map[string]any{"no_orphan_rule": true, "finish_after_end": false}},
		{"PUT", "/api/admin/events/e1/waitlist", map[string]any{"offer_seconds": 120}},
		{"POST", "/api/admin/events/e1/codes", map[string]any{"count": 2}},
		{"PUT", "/api/admin/events/e1/phase", map[string]any{"phase": "presale", "audience": "code"}},
		{"PUT", "/api/admin/events/e1/registration", map[string]any{"phase": "fans",
			"opens_at": "2026-01-01T00:00:00Z", "closes_at": "2026-01-02T00:00:00Z"}},
		{"POST", "/api/admin/events/e1/registration/draw", map[string]any{"method": "draw", "count": 1}},
	} {
		r, _ := h.send(c.method, c.path, vera, c.body)
		want(t, r, http.StatusForbidden, "forbidden")
	}
	r, _ = h.send("GET", "/api/admin/events/e1/live", vera, nil)
	seats, _ := r.body["seats"].(map[string]any)
	provider, _ := r.body["provider"].(map[string]any)
	if r.body["paused"] != false || r.num("capacity") != 1 || r.num("admit_per_minute") != 30 ||
		seats["reserved"] != 0.0 || seats["killed"] != 0.0 || provider["degraded"] != false || provider["since"] != nil {
		t.Errorf("a viewer's refused controls changed the event: %s", r.raw)
	}
	// the same controls as an operator act at once
	if r, _ := h.send("PATCH", "/api/admin/events/e1", otto, map[string]any{"paused": true, "admit_per_minute": 5}); r.code != http.StatusOK {
		t.Fatalf("operator pauses: %d %s", r.code, r.raw)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		r, _ = h.send("GET", "/api/admin/events/e1/live", otto, nil)
		if r.body["paused"] == true && r.num("admit_per_minute") == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pause is not in the live document: %s", r.raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// holds, kills and the provider's state: in the next document
	for _, body := range []map[string]any{
		{"action": "hold", "purpose": "sponsor", "seat_ids": []string{"A1", "A2"}},
		{"action": "kill", "seat_ids": []string{"A3"}},
	} {
		if r, _ := h.send("POST", "/api/admin/events/e1/seat-marks", otto, body); r.code != http.StatusOK || r.body["changed"] != true {
			t.Fatalf("operator marks %v: %d %s", body, r.code, r.raw)
		}
	}
	if r, _ := h.send("PUT", "/api/admin/provider", otto, map[string]any{"degraded": true}); r.code != http.StatusOK || r.num("changed") != 1 {
		t.Fatalf("operator declares the provider degraded: %d %s", r.code, r.raw)
	}
	liveWait := func(what string, ok func(seats, provider map[string]any) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			r, _ := h.send("GET", "/api/admin/events/e1/live", vera, nil)
			seats, _ := r.body["seats"].(map[string]any)
			provider, _ := r.body["provider"].(map[string]any)
			if r.code == http.StatusOK && ok(seats, provider) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is not in the live document: %s", what, r.raw)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	liveWait("the marks and the outage", func(seats, provider map[string]any) bool {
		since, _ := provider["since"].(string)
		_, err := time.Parse(time.RFC3339Nano, since)
		return seats["reserved"] == 2.0 && seats["killed"] == 1.0 && seats["available"] == 1.0 && provider["degraded"] == true && err == nil
	})
	if r, _ := h.send("POST", "/api/admin/events/e1/seat-marks", otto, map[string]any{"action": "release", "row": "A"}); r.code != http.StatusOK {
		t.Fatalf("operator releases row A: %d %s", r.code, r.raw)
	}
	if r, _ := h.send("PUT", "/api/admin/provider", otto, map[string]any{"degraded": false}); r.code != http.StatusOK || r.num("changed") != 1 {
		t.Fatalf("operator declares the provider recovered: %d %s", r.code, r.raw)
	}
	liveWait("the release and the recovery", func(seats, provider map[string]any) bool {
		return seats["reserved"] == 0.0 && seats["killed"] == 0.0 && seats["available"] == 4.0 && provider["degraded"] == false && provider["since"] == nil
	})
	// a webhook payment-webhook refused: in the next document, for every event
	if r.body["webhooks"].(map[string]any)["total"] != 0.0 {
		t.Fatalf("refused webhooks before any: %s", r.raw)
	}
	if err := h.srv.Store.RecordWebhookRefusal(context.Background(), "success", "bad_signature", 401, "signature mismatch"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		r, _ = h.send("GET", "/api/admin/events/e1/live", vera, nil)
		wh, _ := r.body["webhooks"].(map[string]any)
		by, _ := wh["by_outcome"].(map[string]any)
		if wh["total"] == 1.0 && by["bad_signature"] == 1.0 && wh["last_error"] == "signature mismatch" && wh["last_status"] == 401.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused webhook is not in the live document: %s", r.raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ct.Report()
}

// TestConsoleLiveStream: with Accept: text/event-stream the live document
// comes every second over one connection, the same bytes for every
// viewer of the event, for longer than the server's write timeout, and
// the stream ends with a signed_out event once the viewer signs out.
func TestConsoleLiveStream(t *testing.T) {
	liveRecheck = 200 * time.Millisecond // not parallel: no other test streams
	t.Cleanup(func() { liveRecheck = 15 * time.Second })
	h := operatorHarness(t)
	h.account("vera", operators.Viewer)
	vera := h.signIn("vera", opPassword)
	h.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := h.srv.FastServer()
	// shorter than the stream read below: the server's write timeout
	// bounds each event the stream sends, not the whole stream
	srv.WriteTimeout = 1500 * time.Millisecond
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })

	open := func(c *http.Cookie) (*http.Response, *bufio.Reader) {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/api/admin/events/e1/live", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.AddCookie(c)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res, bufio.NewReader(res.Body)
	}
	// next reads one event: its type ("" for data) and data
	next := func(rd *bufio.Reader) (string, string) {
		t.Helper()
		typ, data := "", ""
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("read the stream: %v (so far %q %q)", err, typ, data)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "" && data != "":
				return typ, data
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
	}
	res, rd := open(vera)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %v", res.StatusCode, res.Header)
	}
	_, rd2 := open(vera)
	var docs []liveDoc
	start := time.Now()
	for range 3 {
		typ, data := next(rd)
		var d liveDoc
		if err := json.Unmarshal([]byte(data), &d); err != nil || typ != "" || d.EventID != "e1" {
			t.Fatalf("event %q %q: %v", typ, data, err)
		}
		docs = append(docs, d)
	}
	if el := time.Since(start); el < 1500*time.Millisecond || el > 5*time.Second {
		t.Errorf("three documents in %v, want about two seconds", el)
	}
	if docs[0].At == "" || docs[2].At <= docs[0].At {
		t.Errorf("the documents are not read anew: %s, %s", docs[0].At, docs[2].At)
	}
	// the second viewer is sent the same event's documents
	for range 2 {
		var got liveDoc
		if _, d := next(rd2); json.Unmarshal([]byte(d), &got) != nil || got.EventID != "e1" {
			t.Errorf("second viewer: %s", d)
		}
	}

	// signing out ends both streams (the same session)
	if r, _ := h.send("POST", "/api/admin/sign-out", vera, nil); r.code != http.StatusNoContent {
		t.Fatalf("sign out: %d %s", r.code, r.raw)
	}
	var wg sync.WaitGroup
	for _, r := range []*bufio.Reader{rd, rd2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Errorf("the stream ended without signed_out: %v", err)
					return
				}
				if line == "event: signed_out\n" {
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the streams go on after sign-out")
	}
}

// TestConsoleFindsOrders: GET /api/admin/orders finds a user's orders or
// a payment's order in every event, for any role, against
// docs/openapi.yaml; neither or both ids, a malformed id or limit are 400,
// no caller 401, a fan 403.
func TestConsoleFindsOrders(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ct, _ := contractChecked(t, h.harness)
	h.account("vera", operators.Viewer)
	vera := h.signIn("vera", opPassword)
	h.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 4})
	pid := pay(t, h.harness, h.l, "alice", "A1")
	pay(t, h.harness, h.l, "bob", "A2")

	r, _ := h.send("GET", "/api/admin/orders?user_id=alice", vera, nil)
	orders, _ := r.body["orders"].([]any)
	if r.code != http.StatusOK || len(orders) != 1 || orders[0].(map[string]any)["payment_id"] != pid {
		t.Fatalf("alice's orders: %d %s", r.code, r.raw)
	}
	r, _ = h.send("GET", "/api/admin/orders?payment_id="+pid, vera, nil)
	orders, _ = r.body["orders"].([]any)
	if r.code != http.StatusOK || len(orders) != 1 || orders[0].(map[string]any)["user_id"] != "alice" {
		t.Fatalf("the payment's order: %d %s", r.code, r.raw)
	}
	for _, q := range []string{"user_id=nobody", "payment_id=pay_nope", "user_id=alice&limit=1"} {
		r, _ := h.send("GET", "/api/admin/orders?"+q, vera, nil)
		if r.code != http.StatusOK || r.body["orders"] == nil {
			t.Fatalf("%s: %d %s", q, r.code, r.raw)
		}
	}
	bad := func(path string, c *http.Cookie, code int, errCode string, headers ...string) {
		t.Helper()
		var r resp
		ct.invalidly(func() { r, _ = h.send("GET", path, c, nil, headers...) })
		want(t, r, code, errCode)
	}
	bad("/api/admin/orders", vera, 400, "invalid_argument")
	bad("/api/admin/orders?user_id=alice&payment_id="+pid, vera, 400, "invalid_argument")
	bad("/api/admin/orders?user_id=a%00b", vera, 400, "invalid_argument")
	bad("/api/admin/orders?payment_id=a%7Cb", vera, 400, "invalid_argument")
	bad("/api/admin/orders?user_id=alice&limit=0", vera, 400, "invalid_argument")
	bad("/api/admin/orders?user_id=alice", nil, 401, "unauthorized")
	bad("/api/admin/orders?user_id=alice", nil, 403, "forbidden", "Authorization", "Bearer "+h.token("fan", ""))
	ct.Report()
}

// TestLiveDocumentFigures: the live document takes the errors panel's and
// the chart's figures from what the gateway already read: the hold
// clocks' stop as the provider's state, operators' holds and kills, the
// cancellations and their confirmed refunds, and only the last hour of
// admissions per minute.
func TestLiveDocumentFigures(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 30, 20, 0, time.UTC)
	e := booking.Event{ID: "e1", HoldsPausedSince: at.Add(-90 * time.Second),
		Counts: booking.Counts{Total: 10, Available: 5, Reserved: 2, Killed: 1, Sold: 2}}
	r := report.Report{Counts: map[string]int64{events.TopicOrderCancelled: 3, events.TopicRefundIssued: 1, events.TopicPaymentFailed: 4},
		AdmissionsPerMinute: []report.Minute{
			{Minute: at.Add(-2 * time.Hour).Truncate(time.Minute), Admissions: 7},
			{Minute: at.Add(-time.Hour).Truncate(time.Minute), Admissions: 8},
			{Minute: at.Truncate(time.Minute), Admissions: 9},
		}}
	d := liveOf(e, r, at)
	got := map[string]any{"provider": d.Provider, "reserved": d.Seats.Reserved, "killed": d.Seats.Killed,
		"cancellations": d.Cancellations, "failed": d.Payments.Failed, "minutes": d.AdmissionsPerMinute}
	wantDoc := map[string]any{
		"provider": struct {
			Degraded bool   `json:"degraded"`
			Since    string `json:"since,omitempty"`
		}{true, "2026-05-01T12:28:50Z"},
		"reserved": int64(2), "killed": int64(1),
		"cancellations": struct {
			Cancelled int64 `json:"cancelled"`
			Refunded  int64 `json:"refunded"`
		}{3, 1},
		"failed":  int64(4),
		"minutes": r.AdmissionsPerMinute[1:],
	}
	if diff := cmp.Diff(wantDoc, got); diff != "" {
		t.Errorf("live document (-want +got):\n%s", diff)
	}
	if d := liveOf(booking.Event{ID: "e1"}, report.Report{}, at); d.Provider.Degraded || d.Provider.Since != "" || d.AdmissionsPerMinute == nil {
		t.Errorf("a sale without facts and a working provider: %+v", d)
	}
}
