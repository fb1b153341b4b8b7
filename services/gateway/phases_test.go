package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// testClock is the clock the scripts of a clocked harness read (in a test
// binary the Store's clock stands in for Redis's TIME: booking.WithClock).
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// clockedLedgerHarness is ledgerHarness whose scripts read clk: a
// schedule's boundaries pass when the test advances it.
func clockedLedgerHarness(t *testing.T) (*harness, *ledger.Ledger, *testClock) {
	hs, l, _ := ledgerHarness(t)
	clk := &testClock{t: time.Now().Truncate(time.Second)}
	hs.store = booking.New(hs.srv.Redis.(redis.UniversalClient), booking.WithPrefix(redistest.Prefix(t)), booking.WithClock(clk.Now))
	t.Cleanup(hs.store.Close)
	hs.relay = &syncRelay{ann: admission.New(hs.store, nil, hs.rec, nil, admission.WithRedemptions(l.RecordRedemptions))}
	hs.srv.Store, hs.srv.Relay = hs.store, hs.relay
	fh := hs.srv.FastHandler()
	hs.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fastserver.ServeRequest(fh, w, r) })
	return hs, l, clk
}

// A fan-club presale (code), a registered-fan phase and the general sale,
// scheduled back to back through the admin API and applied by the
// gateway at (the test's) Redis clock: who may join when, the price each
// phase charges, the phase facts and the report per phase.
func TestThreePhaseSale(t *testing.T) {
	t.Parallel()
	hs, l, clk := clockedLedgerHarness(t)
	ct, bad := contractChecked(t, hs)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "capacity": 10, "sections": []map[string]any{
		{"name": "floor", "rows": 1, "seats_per_row": 6, "price_cents": 5000},
		{"name": "balcony", "rows": 1, "seats_per_row": 6, "price_cents": 3000}}})
	t0 := clk.Now()
	at := minutesAfter(t0)
	schedule := map[string]any{"on_phase_change": "keep", "phases": []map[string]any{
		{"id": "fanclub", "name": "Fan-club presale", "starts_at": at(0), "ends_at": at(10), "audience": "code",
			"prices": map[string]any{"floor": 4000}, "order_limit": 2, "admit_per_minute": 600},
		{"id": "verified", "name": "Verified fans", "starts_at": at(10), "ends_at": at(20), "audience": "registered",
			"prices": map[string]any{"floor": 4500}},
		{"id": "general", "name": "General sale", "starts_at": at(20), "ends_at": at(30), "audience": "public"}}}
	const path = "/api/admin/events/e1/phases"
	r := hs.do("PUT", path, hs.admin, schedule)
	if want(t, r, 200, ""); len(r.body["schedule"].(map[string]any)["phases"].([]any)) != 3 {
		t.Fatalf("saved: %s", r.raw)
	}
	// the first phase is current at once
	if e := hs.do("GET", "/api/events/e1", "", nil); e.str("phase") != "fanclub" || e.str("audience") != "code" {
		t.Fatalf("the presale: %s", e.raw)
	}
	// the event document carries the schedule's public part, no prices
	if e := hs.do("GET", "/api/events/e1", "", nil); !strings.Contains(e.raw, `"schedule":[{"id":"fanclub","name":"Fan-club presale","starts_at":"`+at(0)+`","ends_at":"`+at(10)+`","audience":"code"},`) ||
		strings.Contains(e.raw, "4500") || strings.Contains(e.raw, "order_limit") {
		t.Fatalf("the public schedule: %s", e.raw)
	}
	gen := hs.do("POST", "/api/admin/events/e1/codes", hs.admin, map[string]any{"count": 3, "phase": "fanclub"})
	want(t, gen, 201, "")
	codes := gen.body["codes"].([]any)
	// registration for the verified phase, its draw by first come
	rfc := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	const reg = "/api/admin/events/e1/registration"
	want(t, hs.do("PUT", reg, hs.admin, map[string]any{"phase": "verified", "opens_at": rfc(-time.Hour), "closes_at": rfc(time.Hour)}), 200, "")
	for _, u := range []string{"vera", "vince"} {
		want(t, hs.do("POST", "/api/events/e1/registration", hs.token(u, ""), nil), 201, "")
	}
	want(t, hs.do("PUT", reg, hs.admin, map[string]any{"phase": "verified", "opens_at": rfc(-time.Hour), "closes_at": rfc(-time.Second)}), 200, "")
	want(t, hs.do("POST", reg+"/draw", hs.admin, map[string]any{"method": "first_come", "count": 1}), 200, "")

	join := func(user string, code any) resp {
		t.Helper()
		body := map[string]any{"event_id": "e1"}
		if code != nil {
			body["code"] = code
		}
		return hs.do("POST", "/api/booking/request", hs.token(user, ""), body)
	}
	// start: the best seat of section for user, payment started; its id
	// and the price charged
	start := func(user, section string) (string, int64) {
		t.Helper()
		tok := hs.token(user, "")
		want(t, hs.do("POST", "/api/booking/select-best", tok, map[string]any{"event_id": "e1", "count": 1, "section": section}), 200, "")
		r := hs.do("POST", "/api/booking/payment/initiate", tok, map[string]any{"event_id": "e1"})
		want(t, r, 200, "")
		return r.str("payment_id"), r.num("amount")
	}
	// complete: the payment confirmed, as the payment webhook records it
	complete := func(user, pid string) {
		t.Helper()
		res, err := hs.store.PaymentSuccess(ctx, "e1", user, pid)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.RecordSale(ctx, ledger.Sale{PaymentID: pid, EventID: "e1", UserID: user, SeatID: res.SeatID,
			SeatPrices: res.SeatPrices, Sequence: res.Sequence, Phase: res.Phase}); err != nil {
			t.Fatal(err)
		}
	}
	buy := func(user, section string) int64 {
		t.Helper()
		pid, amount := start(user, section)
		complete(user, pid)
		return amount
	}

	// 1. the presale: code holders only, at the presale's floor price
	want(t, join("walkin", nil), 403, "code_required")
	want(t, join("vera", nil), 403, "code_required")
	want(t, join("clubber", codes[0]), 200, "")
	if p := buy("clubber", "floor"); p != 4000 {
		t.Fatalf("the presale's floor price: %d", p)
	}
	// a fan in the room at the phase's end finishes at the price charged
	want(t, join("paying", codes[2]), 200, "")
	pid, price := start("paying", "floor")

	// 2. the registered phase: the selected fan only, at its own price
	clk.Advance(10 * time.Minute)
	if n, err := hs.srv.applySchedules(ctx); err != nil || n != 1 {
		t.Fatalf("the verified phase: %d %v", n, err)
	}
	if n, err := hs.srv.applySchedules(ctx); err != nil || n != 0 {
		t.Fatalf("a second tick: %d %v", n, err)
	}
	complete("paying", pid)
	if o, err := l.OrderByPayment(ctx, pid); err != nil || price != 4000 || o.Amount != 4000 || o.SeatPrices[0] != 4000 || o.Phase != "verified" {
		t.Fatalf("paid across the boundary: %d, %+v %v", price, o, err)
	}
	want(t, join("walkin", nil), 403, "not_selected")
	want(t, join("late", codes[1]), 403, "code_wrong_phase")
	want(t, join("vince", nil), 403, "not_selected")
	want(t, join("vera", nil), 200, "")
	if p := buy("vera", "floor"); p != 4500 {
		t.Fatalf("the verified phase's floor price: %d", p)
	}

	// 3. the general sale: everyone, at the event's prices
	clk.Advance(10 * time.Minute)
	if n, err := hs.srv.applySchedules(ctx); err != nil || n != 1 {
		t.Fatalf("the general sale: %d %v", n, err)
	}
	want(t, join("walkin", nil), 200, "")
	if p := buy("walkin", "floor"); p != 5000 {
		t.Fatalf("the general sale's floor price: %d", p)
	}
	want(t, join("vince", nil), 200, "")
	if p := buy("vince", "balcony"); p != 3000 {
		t.Fatalf("the general sale's balcony price: %d", p)
	}

	// 4. after the last phase: closed
	clk.Advance(10 * time.Minute)
	if n, err := hs.srv.applySchedules(ctx); err != nil || n != 1 {
		t.Fatalf("the end: %d %v", n, err)
	}
	want(t, join("latecomer", nil), 403, "phase_closed")

	// the facts: each phase started and ended, by the schedule
	started, ended := hs.rec.Topic(events.TopicPhaseStarted), hs.rec.Topic(events.TopicPhaseEnded)
	if len(started) != 3 || len(ended) != 3 || started[0].Reason != "audience=code phase=fanclub" ||
		started[1].Reason != "audience=registered phase=verified" || started[2].Reason != "audience=public phase=general" ||
		ended[2].Reason != "phase=general" || started[0].UserID != ledger.ScheduleActor {
		t.Fatalf("facts: started %+v, ended %+v", started, ended)
	}
	r = hs.do("GET", path, hs.admin, nil)
	if want(t, r, 200, ""); len(r.body["changes"].([]any)) != 4 || r.body["schedule"] == nil {
		t.Fatalf("phases: %s", r.raw)
	}
	// the report per phase adds up to what was charged
	r = hs.do("GET", "/api/admin/events/e1/report", hs.admin, nil)
	want(t, r, 200, "")
	got := map[string][3]float64{}
	for _, p := range r.body["by_phase"].([]any) {
		m := p.(map[string]any)
		got[m["phase"].(string)] = [3]float64{m["orders"].(float64), m["seats"].(float64), m["revenue"].(float64)}
	}
	if len(got) != 3 || got["fanclub"] != [3]float64{1, 1, 4000} || got["verified"] != [3]float64{2, 2, 8500} ||
		got["general"] != [3]float64{2, 2, 8000} {
		t.Fatalf("report by phase: %v (%s)", got, r.raw)
	}

	// bad schedules: each its own code, nothing changed
	for code, phases := range map[string][]map[string]any{
		"phases_overlap": {{"id": "a", "starts_at": at(40), "ends_at": at(50), "audience": "public"},
			{"id": "b", "starts_at": at(45), "ends_at": at(60), "audience": "public"}},
		"phases_out_of_order": {{"id": "a", "starts_at": at(50), "ends_at": at(40), "audience": "public"}},
		"duplicate_phase": {{"id": "a", "starts_at": at(40), "ends_at": at(50), "audience": "public"},
			{"id": "a", "starts_at": at(50), "ends_at": at(60), "audience": "public"}},
		"phase_unknown_section": {{"id": "a", "starts_at": at(40), "ends_at": at(50), "audience": "public", "prices": map[string]any{"stalls": 1}}},
		"invalid_phase":         {{"id": "a", "starts_at": at(40), "ends_at": at(50), "audience": "public", "hold_seconds": 0}},
	} {
		bad("PUT", path, hs.admin, map[string]any{"phases": phases}, 400, code)
	}
	bad("PUT", path, hs.admin, map[string]any{"on_phase_change": "stay", "phases": []any{}}, 400, "invalid_on_phase_change")
	bad("PUT", path, hs.admin, map[string]any{"phases": "soon"}, 400, "invalid_body")
	bad("PUT", path, hs.token("walkin", ""), schedule, 403, "forbidden")
	want(t, hs.do("PUT", "/api/admin/events/nope/phases", hs.admin, schedule), 404, "event_not_found")
	if sch, err := l.Schedule(ctx, "e1"); err != nil || len(sch.Phases) != 3 || sch.Phases[2].ID != "general" {
		t.Fatalf("a refused schedule changed it: %+v %v", sch, err)
	}
	ct.Report()
}

// With on_phase_change leave, the fans waiting when a phase ends are told
// phase_ended by their position and may join again in the next phase;
// the fan in the room keeps the hold. With keep (TestThreePhaseSale's)
// they keep their place.
func TestPhaseEndedLeavesTheQueue(t *testing.T) {
	t.Parallel()
	hs, _, clk := clockedLedgerHarness(t)
	ct, _ := contractChecked(t, hs)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 1})
	at := func(m int) string { return clk.Now().Add(time.Duration(m) * time.Minute).UTC().Format(time.RFC3339) }
	want(t, hs.do("PUT", "/api/admin/events/e1/phases", hs.admin, map[string]any{"on_phase_change": "leave", "phases": []map[string]any{
		{"id": "first", "starts_at": at(0), "ends_at": at(10), "audience": "public", "hold_seconds": 3600},
		{"id": "second", "starts_at": at(10), "ends_at": at(20), "audience": "public"}}}), 200, "")
	join := func(user string) resp {
		return hs.do("POST", "/api/booking/request", hs.token(user, ""), map[string]any{"event_id": "e1"})
	}
	position := func(user string) resp {
		return hs.do("GET", "/api/booking/position?event_id=e1", hs.token(user, ""), nil)
	}
	want(t, join("inroom"), 200, "")
	want(t, join("waiter"), 200, "")
	if p := position("waiter"); p.str("status") != "queued" {
		t.Fatalf("waiter: %s", p.raw)
	}
	clk.Advance(10 * time.Minute)
	if n, err := hs.srv.applySchedules(ctx); err != nil || n != 1 {
		t.Fatalf("the second phase: %d %v", n, err)
	}
	if p := position("waiter"); p.str("status") != "phase_ended" || p.str("state") != "phase_ended" {
		t.Fatalf("waiter after the phase: %s", p.raw)
	}
	if p := position("inroom"); p.str("status") != "active" {
		t.Fatalf("the room after the phase: %s", p.raw)
	}
	if r := join("waiter"); r.code != 200 || r.str("status") != "queued" {
		t.Fatalf("joining the next phase: %s", r.raw)
	}
	ct.Report()
}

// on_phase_change is an event setting of its own: given at creation,
// changed by PATCH (a bad value: TestAdminInputBounds), answered by GET /api/events/{id} and by
// the schedule, which keeps it when its body leaves it out; the setting
// when a phase ends decides whether its waiting fans leave.
func TestOnPhaseChangeSetting(t *testing.T) {
	t.Parallel()
	hs, _, clk := clockedLedgerHarness(t)
	ct, _ := contractChecked(t, hs)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "capacity": 1, "on_phase_change": "leave"})
	setting := func() (event, schedule string) {
		ev := hs.do("GET", "/api/events/e1", "", nil)
		sch := hs.do("GET", "/api/admin/events/e1/phases", hs.admin, nil)
		s, _ := sch.body["schedule"].(map[string]any)
		v, _ := s["on_phase_change"].(string)
		return ev.str("on_phase_change"), v
	}
	if ev, sch := setting(); ev != "leave" || sch != "leave" {
		t.Fatalf("created with leave: event %q, schedule %q", ev, sch)
	}
	at := func(m int) string { return clk.Now().Add(time.Duration(m) * time.Minute).UTC().Format(time.RFC3339) }
	phases := []map[string]any{
		{"id": "first", "starts_at": at(0), "ends_at": at(10), "audience": "public", "hold_seconds": 3600},
		{"id": "second", "starts_at": at(10), "ends_at": at(20), "audience": "public"}}
	want(t, hs.do("PUT", "/api/admin/events/e1/phases", hs.admin, map[string]any{"phases": phases}), 200, "")
	if ev, sch := setting(); ev != "leave" || sch != "leave" {
		t.Fatalf("a schedule without the setting: event %q, schedule %q", ev, sch)
	}
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"on_phase_change": "keep"}), 200, "")
	if ev, sch := setting(); ev != "keep" || sch != "keep" {
		t.Fatalf("patched to keep: event %q, schedule %q", ev, sch)
	}
	want(t, hs.do("PUT", "/api/admin/events/e1/phases", hs.admin, map[string]any{"phases": phases, "on_phase_change": "leave"}), 200, "")
	if ev, sch := setting(); ev != "leave" || sch != "leave" {
		t.Fatalf("a schedule with leave: event %q, schedule %q", ev, sch)
	}
	// keep set by PATCH after the schedule: the waiting fan stays in line
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"on_phase_change": "keep"}), 200, "")
	join := func(user string) {
		want(t, hs.do("POST", "/api/booking/request", hs.token(user, ""), map[string]any{"event_id": "e1"}), 200, "")
	}
	join("inroom")
	join("waiter")
	clk.Advance(10 * time.Minute)
	if n, err := hs.srv.applySchedules(ctx); err != nil || n != 1 {
		t.Fatalf("the second phase: %d %v", n, err)
	}
	if p := hs.do("GET", "/api/booking/position?event_id=e1", hs.token("waiter", ""), nil); p.str("status") != "queued" {
		t.Fatalf("kept: %s", p.raw)
	}
	ct.Report()
}

// A later phase's pre-queue through the HTTP API: the schedule refuses a
// pre-queue that would open before the phase before starts
// (prequeue_overlap); the event document publishes the phase's draw
// commitment; fans joining in the gap before it are prequeued with its
// start; at its start the draw is served per phase (GET .../draw?phase=),
// a phase without a pre-queue answering 404 phase_draw_not_found.
func TestPhaseDrawServed(t *testing.T) {
	t.Parallel()
	hs, _, clk := clockedLedgerHarness(t)
	ct, bad := contractChecked(t, hs)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 10, "capacity": 10})
	t0 := clk.Now()
	at := minutesAfter(t0)
	const path = "/api/admin/events/e1/phases"
	bad("PUT", path, hs.admin, map[string]any{"phases": []map[string]any{
		{"id": "first", "starts_at": at(0), "ends_at": at(10), "audience": "public"},
		{"id": "second", "starts_at": at(20), "ends_at": at(30), "audience": "public", "early_join_seconds": 1500}}}, 400, "prequeue_overlap")
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"phases": []map[string]any{
		{"id": "first", "starts_at": at(0), "ends_at": at(10), "audience": "public"},
		{"id": "second", "starts_at": at(20), "ends_at": at(30), "audience": "public", "early_join_seconds": 900}}}), 200, "")
	e := hs.do("GET", "/api/events/e1", "", nil)
	sch, _ := e.body["schedule"].([]any)
	if len(sch) != 2 {
		t.Fatalf("the public schedule: %s", e.raw)
	}
	commit, _ := sch[1].(map[string]any)["draw_commit"].(string)
	if len(commit) != 64 || sch[0].(map[string]any)["draw_commit"] != nil {
		t.Fatalf("the second phase's commitment: %s", e.raw)
	}
	d := hs.do("GET", "/api/events/e1/draw", "", nil)
	if want(t, d, 200, ""); !strings.Contains(d.raw, `"phases":["second"]`) {
		t.Fatalf("the first draw lists the phases with one: %s", d.raw)
	}
	d = hs.do("GET", "/api/events/e1/draw?phase=second", "", nil)
	if want(t, d, 200, ""); d.str("status") != "open" || d.str("commit") != commit || d.str("seed") != "" || d.str("phase") != "second" {
		t.Fatalf("the open draw: %s", d.raw)
	}
	bad("GET", "/api/events/e1/draw?phase=first", "", nil, 404, "phase_draw_not_found")
	bad("GET", "/api/events/e1/draw?phase=nope", "", nil, 404, "phase_draw_not_found")
	bad("GET", "/api/events/e1/draw?phase=a%20b", "", nil, 400, "invalid_argument")

	join := func(user string) resp {
		return hs.do("POST", "/api/booking/request", hs.token(user, ""), map[string]any{"event_id": "e1"})
	}
	// the gap before the second phase: its pre-queue is open
	clk.Advance(12 * time.Minute)
	if _, err := hs.srv.applySchedules(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"ann", "bob", "cid"} {
		if r := join(u); r.code != 200 || r.str("status") != "prequeued" || r.str("sales_start") != at(20) {
			t.Fatalf("a join in the gap: %s", r.raw)
		}
	}
	p := hs.do("GET", "/api/booking/position?event_id=e1", hs.token("bob", ""), nil)
	if p.str("status") != "prequeued" || p.str("sales_start") != at(20) {
		t.Fatalf("a pre-queued position: %s", p.raw)
	}
	clk.Advance(8 * time.Minute)
	if _, err := hs.srv.applySchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if d := hs.do("GET", "/api/events/e1/draw?phase=second", "", nil); d.str("status") != "pending" || d.str("seed") == "" {
		t.Fatalf("the draw at the start: %s", d.raw)
	}
	dr, ok, err := hs.store.ClosePhaseDraw(ctx, "e1")
	if err != nil || !ok || dr.Count != 3 {
		t.Fatalf("draw: %+v %v %v", dr, ok, err)
	}
	if err := hs.store.MarkPhaseDrawn(ctx, "e1", "second"); err != nil {
		t.Fatal(err)
	}
	d = hs.do("GET", "/api/events/e1/draw?phase=second", "", nil)
	entries, _ := d.body["entries"].([]any)
	if d.str("status") != "drawn" || d.str("digest") != dr.Digest || d.num("count") != 3 || len(entries) != 3 || d.num("base") != dr.Base ||
		d.raw == "" || !strings.Contains(d.raw, `"sales_start":"`+at(20)+`"`) {
		t.Fatalf("the drawn draw: %s", d.raw)
	}
	// a drawn phase's draw never changes; the first draw's first page
	// lists the phases, to which a schedule saved later may add
	for path, want := range map[string]string{"/api/events/e1/draw?phase=second": cacheForever, "/api/events/e1/draw": cacheOpen} {
		w := httptest.NewRecorder()
		hs.h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if got := w.Header().Get("Cache-Control"); w.Code != 200 || got != want {
			t.Fatalf("%s: %d, Cache-Control %q, want %q", path, w.Code, got, want)
		}
	}
	ct.Report()
}

// TestSalesWindowKeepsTheSchedule: a PATCH of the sales window that would
// leave a saved phase outside it (or the first phase's pre-queue without
// the sales start at its start) is refused with the schedule's code, and
// nothing changes; a window that still holds every phase is taken.
func TestSalesWindowKeepsTheSchedule(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ctx := context.Background()
	start := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	at := func(m int) string { return start.Add(time.Duration(m) * time.Minute).Format(time.RFC3339) }
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2,
		"sales_start": at(0), "sales_end": at(240)})
	want(t, hs.do("PUT", "/api/admin/events/e1/phases", hs.admin, map[string]any{"phases": []map[string]any{
		{"id": "presale", "starts_at": at(0), "ends_at": at(60), "audience": "public", "early_join_seconds": 600},
		{"id": "general", "starts_at": at(60), "ends_at": at(180), "audience": "public"}}}), 200, "")
	for _, c := range []struct {
		body map[string]any
		code string
	}{
		{map[string]any{"sales_end": at(120)}, "phase_outside_sales"},
		{map[string]any{"sales_start": at(30)}, "phase_outside_sales"},
		{map[string]any{"sales_start": at(-30)}, "invalid_phase"}, // the presale's pre-queue opens at the sales start
	} {
		r := hs.do("PATCH", "/api/admin/events/e1", hs.admin, c.body)
		want(t, r, 409, c.code)
		if !strings.Contains(r.str("message"), "schedule") {
			t.Errorf("%v: message %q does not say the schedule is in the way", c.body, r.str("message"))
		}
	}
	def, err := l.Event(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	e, err := hs.store.GetEvent(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	if !def.Config.SalesEnd.Equal(start.Add(240*time.Minute)) || !def.Config.SalesStart.Equal(start) ||
		!e.SalesEnd.Equal(start.Add(240*time.Minute)) || !e.SalesStart.Equal(start) || def.Revision != 0 {
		t.Fatalf("a refused window changed: ledger %v–%v (revision %d), Redis %v–%v",
			def.Config.SalesStart, def.Config.SalesEnd, def.Revision, e.SalesStart, e.SalesEnd)
	}
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"sales_end": at(180)}), 200, "")
}

// minutesAfter gives the RFC 3339 time m minutes after t0 (UTC), for a
// schedule's phases.
func minutesAfter(t0 time.Time) func(m int) string {
	return func(m int) string { return t0.Add(time.Duration(m) * time.Minute).UTC().Format(time.RFC3339) }
}
