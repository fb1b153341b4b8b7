package main

import (
	"context"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ratelimit"
)

// Operators generate access codes through the admin API and fans join
// with them, every exchange validated against docs/openapi.yaml: a code
// is shown once (JSON or CSV), binds to its first fan, and each refusal
// (bound to another, used up, unknown, another event's, another phase's,
// expired, guessed too often) is its own 4xx that takes no use; each
// redemption is recorded and published (code_redeemed).
func TestAccessCodes(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 10, "max_seats_per_order": 4})
	hs.createEvent(map[string]any{"id": "e2", "rows": 1, "seats_per_row": 5, "capacity": 5})
	gen := func(event string, body map[string]any) []string {
		t.Helper()
		r := hs.do("POST", "/api/admin/events/"+event+"/codes", hs.admin, body)
		want(t, r, 201, "")
		var out []string
		for _, c := range r.body["codes"].([]any) {
			out = append(out, c.(string))
		}
		if len(out) != int(body["count"].(int)) {
			t.Fatalf("generated %s", r.raw)
		}
		return out
	}
	join := func(user, event, code string) resp {
		t.Helper()
		return hs.do("POST", "/api/booking/request", hs.token(user, ""), map[string]any{"event_id": event, "code": code})
	}

	single := gen("e1", map[string]any{"count": 2, "seats": 2})
	if single[0] == single[1] {
		t.Fatalf("two equal codes %v", single)
	}
	r := join("alice", "e1", strings.ToLower(single[0])) // case and dashes do not matter
	if want(t, r, 200, ""); r.str("status") != "active" {
		t.Fatalf("join with a code: %s", r.raw)
	}
	want(t, join("alice", "e1", single[0]), 200, "") // joined already: the entry back, no use
	want(t, join("bob", "e1", single[0]), 409, "code_taken")
	want(t, join("bob", "e1", "ZZZZ-ZZZZ-ZZZZ-ZZZZ"), 403, "invalid_code")
	want(t, join("bob", "e1", "not a code!"), 403, "invalid_code")
	other := gen("e2", map[string]any{"count": 1})
	want(t, join("bob", "e1", other[0]), 403, "code_other_event")
	phased := gen("e1", map[string]any{"count": 1, "phase": "fanclub"})
	want(t, join("bob", "e1", phased[0]), 403, "code_wrong_phase")
	old := gen("e1", map[string]any{"count": 1, "expires_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
	want(t, join("bob", "e1", old[0]), 410, "code_expired")
	// the code's seat limit bounds alice's selection
	want(t, hs.do("POST", "/api/booking/select-seat", hs.token("alice", ""), map[string]any{"event_id": "e1",
		"seat_ids": []string{"A1", "A2", "A3"}}), 400, "too_many_seats")
	// a used-up code: a two-use code after two joins
	two := gen("e1", map[string]any{"count": 1, "uses": 2})
	want(t, join("carol", "e1", two[0]), 200, "")
	want(t, hs.do("POST", "/api/booking/cancel", hs.token("carol", ""), map[string]any{"event_id": "e1"}), 200, "")
	want(t, join("carol", "e1", two[0]), 200, "")
	want(t, hs.do("POST", "/api/booking/cancel", hs.token("carol", ""), map[string]any{"event_id": "e1"}), 200, "")
	want(t, join("carol", "e1", two[0]), 409, "code_used_up")

	// the CSV answer
	r = hs.do("POST", "/api/admin/events/e1/codes?format=csv", hs.admin, map[string]any{"count": 3, "uses": 5, "phase": "fanclub"})
	want(t, r, 201, "")
	rows, err := csv.NewReader(strings.NewReader(r.raw)).ReadAll()
	if err != nil || len(rows) != 4 || strings.Join(rows[0], ",") != "code,batch_id,phase,uses,seats,expires_at" ||
		len(rows[1][0]) != 19 || rows[1][2] != "fanclub" || rows[1][3] != "5" {
		t.Fatalf("csv %q %v", r.raw, err)
	}

	// the record: batches with their redemptions, never the codes (the
	// joins admitted at once went to the harness's recording announcer:
	// their joined entries through the relay's, which records each use)
	var joins []booking.OutboxEntry
	for _, e := range hs.ann.Announced() {
		if e.Kind == booking.KindJoined {
			joins = append(joins, e)
		}
	}
	if err := hs.relay.ann.Announce(context.Background(), "e1", joins); err != nil {
		t.Fatal(err)
	}
	r = hs.do("GET", "/api/admin/events/e1/codes", hs.admin, nil)
	want(t, r, 200, "")
	if strings.Contains(r.raw, single[0]) || len(r.body["batches"].([]any)) != 5 {
		t.Fatalf("batches %s", r.raw)
	}
	first := r.body["batches"].([]any)[0].(map[string]any)
	if first["used"] != 1.0 || first["bound"] != 1.0 || first["count"] != 2.0 {
		t.Fatalf("first batch %v", first)
	}
	fs := hs.rec.Topic(events.TopicCodeRedeemed)
	if len(fs) != 3 || fs[0].UserID != "alice" || fs[0].Validate() != nil || !strings.HasSuffix(fs[2].Reason, " use=2") {
		t.Fatalf("code_redeemed facts %+v", fs)
	}

	// bad input, nothing generated
	const path = "/api/admin/events/e1/codes"
	for _, body := range []any{
		map[string]any{"count": 0}, map[string]any{"count": 10001}, map[string]any{"count": 1, "uses": -1},
		map[string]any{"count": 1, "seats": 11}, map[string]any{"count": 1, "phase": "a b"},
		map[string]any{"count": 1, "expires_at": "tomorrow"}, map[string]any{"count": "1"}, `{"count":`,
	} {
		bad("POST", path, hs.admin, body, 400, "invalid_body")
	}
	bad("POST", path+"?format=xml", hs.admin, map[string]any{"count": 1}, 400, "invalid_argument")
	bad("POST", path, hs.token("alice", ""), map[string]any{"count": 1}, 403, "forbidden")
	want(t, hs.do("POST", "/api/admin/events/nope/codes", hs.admin, map[string]any{"count": 1}), 404, "event_not_found")
	want(t, hs.do("GET", "/api/admin/events/nope/codes", hs.admin, nil), 404, "event_not_found")
	bad("POST", "/api/booking/request", hs.token("dave", ""), map[string]any{"event_id": "e1", "code": strings.Repeat("A", 65)}, 403, "invalid_code")
	if r := hs.do("GET", "/api/admin/events/e1/codes", hs.admin, nil); len(r.body["batches"].([]any)) != 5 {
		t.Fatalf("refused requests generated codes: %s", r.raw)
	}
	ct.Report()
}

// Joins with a code count against the client address's code tries, right
// code or not: guessing codes stops at the limit, with 429.
func TestAccessCodeTriesLimited(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	hs.srv.Limits = ratelimit.Config{CodeTriesPerMinutePerIP: 5}
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 10})
	limited := 0
	for i := range 20 {
		body := `{"event_id":"e1","code":"GUESS-` + strconv.Itoa(1000+i) + `"}`
		r, h := hs.doHeaders("POST", "/api/booking/request", hs.token("guesser"+strconv.Itoa(i), ""), body)
		if r.code == http.StatusTooManyRequests {
			if i < 5 {
				t.Fatalf("try %d refused within the limit of 5", i+1)
			}
			wantLimited(t, r, h)
			limited++
			continue
		}
		want(t, r, 403, "invalid_code")
	}
	if limited != 15 {
		t.Fatalf("%d of 20 guesses limited, want 15", limited)
	}
	// joins without a code do not count against it
	want(t, hs.do("POST", "/api/booking/request", hs.token("fan", ""), map[string]any{"event_id": "e1"}), 200, "")
}

// The operator moves the sale from a code-only presale to the general
// sale, live: the presale's codes open only their phase, a join without a
// code is refused while the audience is code, the fan page's event shows
// the phase, each change is recorded and published, and bad input is a
// 4xx with nothing changed.
func TestSalePhase(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 10})
	const path = "/api/admin/events/e1/phase"
	r := hs.do("PUT", path, hs.admin, map[string]any{"phase": "fanclub", "audience": "code"})
	if want(t, r, 200, ""); r.body["changed"] != true || r.num("change_id") == 0 || r.str("previous_phase") != "" {
		t.Fatalf("set phase: %s", r.raw)
	}
	if r := hs.do("PUT", path, hs.admin, map[string]any{"phase": "fanclub", "audience": "code"}); r.body["changed"] != false {
		t.Fatalf("a repeat: %s", r.raw)
	}
	if r := hs.do("GET", "/api/events/e1", "", nil); r.str("phase") != "fanclub" || r.str("audience") != "code" {
		t.Fatalf("the event's phase for fans: %s", r.raw)
	}
	gen := hs.do("POST", "/api/admin/events/e1/codes", hs.admin, map[string]any{"count": 2, "phase": "fanclub"})
	want(t, gen, 201, "")
	codes := gen.body["codes"].([]any)
	join := func(user string, body map[string]any) resp {
		t.Helper()
		return hs.do("POST", "/api/booking/request", hs.token(user, ""), body)
	}
	want(t, join("walkin", map[string]any{"event_id": "e1"}), 403, "code_required")
	want(t, join("member", map[string]any{"event_id": "e1", "code": codes[0]}), 200, "")

	r = hs.do("PUT", path, hs.admin, map[string]any{"phase": "general", "audience": "public"})
	if want(t, r, 200, ""); r.str("previous_phase") != "fanclub" {
		t.Fatalf("to the general sale: %s", r.raw)
	}
	want(t, join("walkin", map[string]any{"event_id": "e1"}), 200, "")
	want(t, join("late", map[string]any{"event_id": "e1", "code": codes[1]}), 403, "code_wrong_phase")
	if st := hs.do("GET", "/api/booking/position?event_id=e1", hs.token("member", ""), nil); st.str("status") != "active" {
		t.Fatalf("the presale's fan after the change: %s", st.raw)
	}
	r = hs.do("GET", "/api/admin/events/e1/phases", hs.admin, nil)
	if want(t, r, 200, ""); len(r.body["changes"].([]any)) != 2 {
		t.Fatalf("changes %s", r.raw)
	}
	if s, e := hs.rec.Topic(events.TopicPhaseStarted), hs.rec.Topic(events.TopicPhaseEnded); len(s) != 2 || len(e) != 1 ||
		e[0].Reason != "phase=fanclub" || s[1].Reason != "audience=public phase=general" {
		t.Fatalf("facts: started %+v ended %+v", s, e)
	}

	for _, body := range []any{
		map[string]any{"phase": "x"}, map[string]any{"phase": "x", "audience": "nobody"},
		map[string]any{"phase": "a b", "audience": "public"}, map[string]any{"phase": 1, "audience": "public"}, `{"phase":`,
	} {
		bad("PUT", path, hs.admin, body, 400, "invalid_body")
	}
	bad("PUT", path, hs.token("alice", ""), map[string]any{"audience": "public"}, 403, "forbidden")
	want(t, hs.do("PUT", "/api/admin/events/nope/phase", hs.admin, map[string]any{"audience": "public"}), 404, "event_not_found")
	want(t, hs.do("GET", "/api/admin/events/nope/phases", hs.admin, nil), 404, "event_not_found")
	if r := hs.do("GET", "/api/events/e1", "", nil); r.str("phase") != "general" || r.str("audience") != "public" {
		t.Fatalf("refused requests changed the phase: %s", r.raw)
	}
	ct.Report()
}

// A registered-fan phase through the API: the operator sets the window,
// fans register in it (not before or after), the draw at the close
// selects and reveals its seed, fans see their state, and in the
// registered phase the selected join and the others are told; each step
// validated against docs/openapi.yaml, bad input a 4xx.
func TestRegistrationPhase(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 10})
	const admin, fan = "/api/admin/events/e1/registration", "/api/events/e1/registration"
	want(t, hs.do("GET", fan, "", nil), 404, "registration_not_found")
	if r := hs.do("GET", fan+"/me", hs.token("ann", ""), nil); r.code != 200 || r.str("state") != "none" {
		t.Fatalf("no registration: %s", r.raw)
	}
	rfc := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	r := hs.do("PUT", admin, hs.admin, map[string]any{"phase": "verified", "opens_at": rfc(-time.Hour), "closes_at": rfc(time.Hour)})
	want(t, r, 200, "")
	commit := r.str("commit")
	if len(commit) != 64 || r.str("seed") != "" {
		t.Fatalf("window %s", r.raw)
	}
	users := []string{"ann", "ben", "cat", "dan"}
	for _, u := range users {
		want(t, hs.do("POST", fan, hs.token(u, ""), nil), 201, "")
	}
	want(t, hs.do("POST", fan, hs.token("ann", ""), nil), 200, "")
	if r := hs.do("GET", fan+"/me", hs.token("ann", ""), nil); r.str("state") != "registered" || r.body["window"] == nil {
		t.Fatalf("ann: %s", r.raw)
	}
	if r := hs.do("GET", fan+"/me", hs.token("zed", ""), nil); r.str("state") != "not_registered" {
		t.Fatalf("zed: %s", r.raw)
	}
	want(t, hs.do("POST", admin+"/draw", hs.admin, map[string]any{"method": "draw", "count": 2}), 409, "registration_open")
	// closed: no more registrations, and the draw
	want(t, hs.do("PUT", admin, hs.admin, map[string]any{"phase": "verified", "opens_at": rfc(-time.Hour), "closes_at": rfc(-time.Second)}), 200, "")
	want(t, hs.do("POST", fan, hs.token("late", ""), nil), 409, "registration_closed")
	r = hs.do("POST", admin+"/draw", hs.admin, map[string]any{"method": "draw", "count": 2})
	if want(t, r, 200, ""); r.num("selected") != 2 || r.num("registered") != 4 || r.str("seed") == "" {
		t.Fatalf("draw %s", r.raw)
	}
	order, err := booking.DrawOrder(r.str("seed"), commit, "e1", users)
	if err != nil {
		t.Fatal(err)
	}
	if pub := hs.do("GET", fan, "", nil); pub.str("seed") != r.str("seed") || pub.str("method") != "draw" {
		t.Fatalf("the revealed draw: %s", pub.raw)
	}
	want(t, hs.do("PUT", admin, hs.admin, map[string]any{"phase": "verified", "opens_at": rfc(0), "closes_at": rfc(time.Hour)}), 409, "registration_drawn")
	for i, u := range order {
		st := hs.do("GET", fan+"/me", hs.token(u, ""), nil)
		if wantState := map[bool]string{true: "selected", false: "not_selected"}[i < 2]; st.str("state") != wantState {
			t.Fatalf("%s (place %d): %s", u, i, st.raw)
		}
	}

	// the registered phase
	want(t, hs.do("PUT", "/api/admin/events/e1/phase", hs.admin, map[string]any{"phase": "verified", "audience": "registered"}), 200, "")
	want(t, hs.do("POST", "/api/booking/request", hs.token(order[3], ""), map[string]any{"event_id": "e1"}), 403, "not_selected")
	want(t, hs.do("POST", "/api/booking/request", hs.token(order[0], ""), map[string]any{"event_id": "e1"}), 200, "")
	for typ, n := range map[string]int{events.TopicRegistrationOpened: 2, events.TopicRegistered: 5, events.TopicSelectionDrawn: 1} {
		if fs := hs.rec.Topic(typ); len(fs) != n {
			t.Errorf("%d %s facts, want %d", len(fs), typ, n)
		}
	}
	if _, err := l.Registration(context.Background(), "e1"); err != nil {
		t.Fatal(err)
	}

	for _, body := range []any{
		map[string]any{"phase": "", "opens_at": rfc(0), "closes_at": rfc(time.Hour)},
		map[string]any{"phase": "v", "opens_at": "soon", "closes_at": rfc(time.Hour)},
		map[string]any{"phase": "v", "opens_at": rfc(time.Hour), "closes_at": rfc(0)},
	} {
		bad("PUT", admin, hs.admin, body, 400, "invalid_body")
	}
	for _, body := range []any{map[string]any{"method": "lottery", "count": 1}, map[string]any{"method": "draw", "count": 0}} {
		bad("POST", admin+"/draw", hs.admin, body, 400, "invalid_body")
	}
	bad("PUT", admin, hs.token("ann", ""), map[string]any{"phase": "v", "opens_at": rfc(0), "closes_at": rfc(time.Hour)}, 403, "forbidden")
	bad("POST", fan, "", nil, 401, "unauthorized")
	want(t, hs.do("PUT", "/api/admin/events/nope/registration", hs.admin, map[string]any{"phase": "v", "opens_at": rfc(0), "closes_at": rfc(time.Hour)}), 404, "event_not_found")
	want(t, hs.do("POST", "/api/admin/events/nope/registration/draw", hs.admin, map[string]any{"method": "draw", "count": 1}), 404, "event_not_found")
	want(t, hs.do("POST", "/api/events/nope/registration", hs.token("ann", ""), nil), 404, "registration_not_found")
	ct.Report()
}
