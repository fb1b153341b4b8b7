package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
	"github.com/boxoffice/boxoffice/pkg/messages"
)

// PUT /api/admin/events/{id}/beacon: a round committed before the
// pre-queue opens is on the draw document and in the ledger; its value is
// taken once; bad input is a 4xx with its own code, nothing changed.
func TestDrawBeaconAPI(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	hs.h = contracttest.Load(t).Wrap(hs.h, nil) // responses; the requests include deliberate errors
	start := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "sales_start": start.Format(time.RFC3339),
		"early_join_seconds": 3600})
	hs.createEvent(map[string]any{"id": "open", "rows": 1, "seats_per_row": 4,
		"sales_start": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339), "early_join_seconds": 3600})
	hs.createEvent(map[string]any{"id": "plain", "rows": 1, "seats_per_row": 4})
	const path = "/api/admin/events/e1/beacon"
	value := strings.Repeat("5a", 32)

	want(t, hs.do("PUT", path, hs.admin, map[string]any{"round": 0}), 400, "invalid_body")
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"round": 5, "value": "XYZ"}), 400, CodeInvalidBeacon)
	want(t, hs.do("PUT", "/api/admin/events/nope/beacon", hs.admin, map[string]any{"round": 5}), 404, "event_not_found")
	want(t, hs.do("PUT", "/api/admin/events/open/beacon", hs.admin, map[string]any{"round": 5}), 409, "beacon_locked")
	want(t, hs.do("PUT", "/api/admin/events/plain/beacon", hs.admin, map[string]any{"round": 5}), 409, "no_prequeue")
	if d := hs.do("GET", "/api/events/e1/draw", "", nil); d.body["beacon_round"] != nil {
		t.Fatalf("a refused call changed the draw: %s", d.raw)
	}

	r := hs.do("PUT", path, hs.admin, map[string]any{"round": 5, "source": "NIST beacon v2"})
	if want(t, r, 200, ""); r.body["changed"] != true || r.num("beacon_round") != 5 {
		t.Fatalf("commit: %s", r.raw)
	}
	if r := hs.do("PUT", path, hs.admin, map[string]any{"round": 5}); r.body["changed"] != false {
		t.Fatalf("repeat: %s", r.raw)
	}
	d := hs.do("GET", "/api/events/e1/draw", "", nil)
	if d.num("beacon_round") != 5 || d.str("beacon_source") != "NIST beacon v2" || d.str("beacon") != "" {
		t.Fatalf("draw document: %s", d.raw)
	}
	r = hs.do("PUT", path, hs.admin, map[string]any{"round": 5, "value": value})
	if want(t, r, 200, ""); r.str("beacon") != value {
		t.Fatalf("value: %s", r.raw)
	}
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"round": 5, "value": strings.Repeat("00", 32)}), 409, "beacon_value_set")
	bs, err := l.Beacons(context.Background(), "e1")
	if b := bs[""]; err != nil || len(bs) != 1 || b != (fairness.Beacon{Round: 5, Source: "NIST beacon v2", Value: value}) {
		t.Fatalf("ledger's beacons: %+v %v", bs, err)
	}
}

// A later phase's pre-queue may commit its own draw to a beacon round,
// until that pre-queue opens: the draw waits for the round's value at the
// phase's start, then ranks the closed list with it (the published order
// recomputes from seed, digest and value); the ledger keeps the beacon
// per phase for a rebuild.
func TestPhaseDrawBeacon(t *testing.T) {
	t.Parallel()
	hs, l, clk := clockedLedgerHarness(t)
	ct, bad := contractChecked(t, hs)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 10, "capacity": 10})
	t0 := clk.Now()
	at := minutesAfter(t0)
	want(t, hs.do("PUT", "/api/admin/events/e1/phases", hs.admin, map[string]any{"phases": []map[string]any{
		{"id": "first", "starts_at": at(0), "ends_at": at(10), "audience": "public"},
		{"id": "second", "starts_at": at(20), "ends_at": at(30), "audience": "public", "early_join_seconds": 900}}}), 200, "")
	const path = "/api/admin/events/e1/beacon"
	value := strings.Repeat("7e", 32)
	r := hs.do("PUT", path, hs.admin, map[string]any{"round": 9000, "source": "NIST beacon v2", "phase": "second"})
	if want(t, r, 200, ""); r.str("phase") != "second" || r.num("beacon_round") != 9000 {
		t.Fatalf("commit: %s", r.raw)
	}
	bad("PUT", path, hs.admin, map[string]any{"round": 9000, "phase": "first"}, 404, CodePhaseDrawNotFound)
	bad("PUT", path, hs.admin, map[string]any{"round": 9000, "phase": "a b"}, 400, "invalid_body")
	bad("PUT", path, hs.admin, map[string]any{"round": 9000}, 409, "no_prequeue") // the event's own: none
	if d := hs.do("GET", "/api/events/e1/draw?phase=second", "", nil); d.num("beacon_round") != 9000 || d.str("beacon") != "" {
		t.Fatalf("the open draw: %s", d.raw)
	}

	clk.Advance(12 * time.Minute) // the second phase's pre-queue is open
	if _, err := hs.srv.applySchedules(ctx); err != nil {
		t.Fatal(err)
	}
	bad("PUT", path, hs.admin, map[string]any{"round": 9001, "phase": "second"}, 409, "beacon_locked")
	users := []string{"ann", "bob", "cid", "dee"}
	for _, u := range users {
		if r := hs.do("POST", "/api/booking/request", hs.token(u, ""), map[string]any{"event_id": "e1"}); r.str("status") != "prequeued" {
			t.Fatalf("a join in the gap: %s", r.raw)
		}
	}
	clk.Advance(8 * time.Minute)
	if _, err := hs.srv.applySchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hs.store.ClosePhaseDraw(ctx, "e1"); !errors.Is(err, booking.ErrBeaconPending) {
		t.Fatalf("the draw before the beacon's value: %v", err)
	}
	if d := hs.do("GET", "/api/events/e1/draw?phase=second", "", nil); d.str("status") != "pending" || d.num("beacon_round") != 9000 {
		t.Fatalf("the pending draw: %s", d.raw)
	}
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"round": 9000, "value": value, "phase": "second"}), 200, "")
	dr, ok, err := hs.store.ClosePhaseDraw(ctx, "e1")
	if err != nil || !ok || dr.Count != 4 || dr.Beacon.Value != value {
		t.Fatalf("draw: %+v %v %v", dr, ok, err)
	}
	if err := hs.store.MarkPhaseDrawn(ctx, "e1", "second"); err != nil {
		t.Fatal(err)
	}
	salt, err := hs.store.FairSalt(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]string, len(users))
	for i, u := range users {
		hashes[i] = fairness.UserHash(salt, u)
	}
	order := fairness.DrawOrder(dr.Seed, fairness.DrawInput(fairness.ListDigest(hashes), value), hashes)
	d := hs.do("GET", "/api/events/e1/draw?phase=second", "", nil)
	entries, _ := d.body["entries"].([]any)
	if d.str("status") != "drawn" || d.str("beacon") != value || len(entries) != len(order) {
		t.Fatalf("the drawn draw: %s", d.raw)
	}
	for i, e := range entries {
		if h, _ := e.(map[string]any)["user_hash"].(string); h != order[i] {
			t.Fatalf("rank %d is %s, the order from seed, digest and beacon says %s", i+1, h, order[i])
		}
	}
	bs, err := l.Beacons(ctx, "e1")
	if err != nil || bs["second"] != (fairness.Beacon{Round: 9000, Source: "NIST beacon v2", Value: value}) || len(bs) != 1 {
		t.Fatalf("the ledger's beacons: %+v %v", bs, err)
	}
	ct.Report()
}

// A later phase whose draw is committed to a drand round cannot move its
// start past that round while its pre-queue is open: the schedule is
// refused (nothing changes) until the operator commits a later round.
func TestPhaseStartAfterItsBeaconRound(t *testing.T) {
	t.Parallel()
	hs, _, clk := clockedLedgerHarness(t)
	ct, bad := contractChecked(t, hs)
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 10, "capacity": 10})
	at := minutesAfter(clk.Now())
	schedule := func(second int) map[string]any {
		return map[string]any{"phases": []map[string]any{
			{"id": "first", "starts_at": at(0), "ends_at": at(10), "audience": "public"},
			{"id": "second", "starts_at": at(second), "ends_at": at(60), "audience": "public", "early_join_seconds": 900}}}
	}
	want(t, hs.do("PUT", "/api/admin/events/e1/phases", hs.admin, schedule(20)), 200, "")
	quick, _ := fairness.BeaconChainOf("drand quicknet")
	start, _ := time.Parse(time.RFC3339, at(20))
	want(t, hs.do("PUT", "/api/admin/events/e1/beacon", hs.admin, map[string]any{"round": quick.FirstRoundAfter(start),
		"source": "drand quicknet", "phase": "second"}), 200, "")
	bad("PUT", "/api/admin/events/e1/phases", hs.admin, schedule(30), 409, "beacon_round_too_early")
	if r := hs.do("GET", "/api/events/e1/draw?phase=second", "", nil); r.str("sales_start") != start.UTC().Format(time.RFC3339) {
		t.Fatalf("the refused schedule moved the phase: %s", r.raw)
	}
	later, _ := time.Parse(time.RFC3339, at(30))
	want(t, hs.do("PUT", "/api/admin/events/e1/beacon", hs.admin, map[string]any{"round": quick.FirstRoundAfter(later),
		"phase": "second"}), 200, "")
	want(t, hs.do("PUT", "/api/admin/events/e1/phases", hs.admin, schedule(30)), 200, "")
	ct.Report()
}

// A draw committed to a drand quicknet round, on a test clock set before
// a round drand published (quicknetRound): a round out before the
// pre-queue closes is refused, naming the first after; the round's time is
// on the draw document; a later sales start that the round would precede
// is refused; the value comes only from the round's signature, checked
// against the chain's public key (no signature, another round's, or a
// value other than its randomness: 400, nothing changed).
func TestDrawBeaconSignedRound(t *testing.T) {
	t.Parallel()
	hs, l, clk := clockedLedgerHarness(t)
	ct, bad := contractChecked(t, hs)
	q := quicknetRound
	quick, _ := fairness.BeaconChainOf("drand quicknet")
	start := quick.RoundTime(q.round).Add(-29 * time.Minute).Truncate(time.Minute) // 11:00, the round at 11:29:09
	clk.mu.Lock()
	clk.t = start.Add(-time.Hour)
	clk.mu.Unlock()
	hs.createEvent(map[string]any{"id": "e1", "rows": 1, "seats_per_row": 4, "sales_start": start.Format(time.RFC3339),
		"early_join_seconds": 1800})
	hs.createEvent(map[string]any{"id": "nist", "rows": 1, "seats_per_row": 4, "sales_start": start.Format(time.RFC3339),
		"early_join_seconds": 1800})
	const path = "/api/admin/events/e1/beacon"

	first := quick.FirstRoundAfter(start)
	early := hs.do("PUT", path, hs.admin, map[string]any{"round": first - 1, "source": "drand quicknet"})
	if want(t, early, 409, "beacon_round_too_early"); !strings.Contains(early.str("message"), fmt.Sprintf("commit round %d or later", first)) {
		t.Fatalf("a round out before the close: %s", early.raw)
	}
	at := quick.RoundTime(q.round).Format(time.RFC3339)
	r := hs.do("PUT", path, hs.admin, map[string]any{"round": q.round, "source": "drand quicknet"})
	if want(t, r, 200, ""); r.num("beacon_round") != q.round || r.str("beacon_round_at") != at {
		t.Fatalf("commit: %s", r.raw)
	}
	if d := hs.do("GET", "/api/events/e1/draw", "", nil); d.str("beacon_round_at") != at {
		t.Fatalf("draw document: %s", d.raw)
	}
	// a later start would put the round inside the open list
	bad("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"sales_start": start.Add(time.Hour).Format(time.RFC3339)},
		409, "beacon_round_too_early")
	if d := hs.do("GET", "/api/events/e1/draw", "", nil); d.str("sales_start") != start.Format(time.RFC3339) {
		t.Fatalf("the refused start was kept: %s", d.raw)
	}

	clk.Advance(time.Hour) // the list closed; the round is out
	flipped := []byte(q.signature)
	flipped[10] ^= 1
	for _, body := range []map[string]any{
		{"round": q.round, "value": q.randomness},                                       // no signature
		{"round": q.round, "signature": string(flipped)},                                // not the round's
		{"round": q.round, "signature": q.signature, "value": strings.Repeat("00", 32)}, // not its randomness
		{"round": q.round, "signature": "xyz"},
	} {
		bad("PUT", path, hs.admin, body, 400, CodeInvalidBeacon)
	}
	if d := hs.do("GET", "/api/events/e1/draw", "", nil); d.str("beacon") != "" {
		t.Fatalf("a refused value was kept: %s", d.raw)
	}
	released := len(hs.ann.Released())
	r = hs.do("PUT", path, hs.admin, map[string]any{"round": q.round, "signature": q.signature})
	if want(t, r, 200, ""); r.str("beacon") != q.randomness || r.str("beacon_signature") != q.signature {
		t.Fatalf("the signed round's value: %s", r.raw)
	}
	// published, so anyone can check the value without asking drand
	if d := hs.do("GET", "/api/events/e1/draw", "", nil); d.str("beacon_signature") != q.signature {
		t.Fatalf("draw document: %s", d.raw)
	}
	// the draw is made by the promotion this asks for, not at the next tick
	if rel := hs.ann.Released(); len(rel) != released+1 || rel[len(rel)-1] != messages.ReasonDraw {
		t.Fatalf("promotions asked for: %v", rel)
	}
	// the same signature in capitals is the same signature
	r = hs.do("PUT", path, hs.admin, map[string]any{"round": q.round, "signature": strings.ToUpper(q.signature)})
	if want(t, r, 200, ""); r.str("beacon_signature") != q.signature || strings.Contains(r.raw, `"changed":true`) {
		t.Fatalf("a repeat: %s", r.raw)
	}
	if rel := hs.ann.Released(); len(rel) != released+1 {
		t.Fatalf("a repeat asked for another promotion: %v", rel)
	}
	bs, err := l.Beacons(context.Background(), "e1")
	if err != nil || bs[""] != (fairness.Beacon{Round: q.round, Source: "drand quicknet", Value: q.randomness, Signature: q.signature}) {
		t.Fatalf("ledger's beacons: %+v %v", bs, err)
	}

	// a beacon boxoffice does not check takes no signature
	clk.mu.Lock()
	clk.t = start.Add(-time.Hour)
	clk.mu.Unlock()
	want(t, hs.do("PUT", "/api/admin/events/nist/beacon", hs.admin, map[string]any{"round": 7, "source": "NIST beacon v2"}), 200, "")
	bad("PUT", "/api/admin/events/nist/beacon", hs.admin, map[string]any{"round": 7, "signature": q.signature}, 400, CodeInvalidBeacon)
	ct.Report()
}

// quicknetRound is a round drand quicknet published
// (https://api.drand.sh/<quicknet hash>/public/5928395).
var quicknetRound = struct {
	round                 int64
	signature, randomness string
}{5928395, "a5d07c0071b4e386b3ae09206522253c68fefe8490ad59ecc44a7dd0d0745be91da5779e2247a82403fbc0cb9a34cb61",
	"51722dab0761a1ba5b39f653fa87bef41b442d91fc926a4d727a6be87373fc58"}
