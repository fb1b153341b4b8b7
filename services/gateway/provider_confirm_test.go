package main

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// TestConfirmWatchDeclaresTheProvider: on the real Redis and PostgreSQL,
// a payment unconfirmed past the timeout that the provider says is
// pending (a fan on the checkout page) is no outage; one the provider
// says is paid while no webhook came declares the provider degraded
// (by=unconfirmed, in the audit trail); the recovery waits for the
// webhook, the probes and a closed breaker.
func TestConfirmWatchDeclaresTheProvider(t *testing.T) {
	h := operatorHarness(t)
	hs, l := h.harness, h.l
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 4, "hold_seconds": 300})
	start := func(user, seat string) string {
		t.Helper()
		tok := hs.token(user, "")
		want(t, hs.do("POST", "/api/booking/request", tok, map[string]any{"event_id": "e1"}), 200, "")
		want(t, hs.do("POST", "/api/booking/select-seat", tok, map[string]any{"event_id": "e1", "seat_id": seat}), 200, "")
		r := hs.do("POST", "/api/booking/payment/initiate", tok, map[string]any{"event_id": "e1"})
		want(t, r, 200, "")
		return r.str("payment_id")
	}
	age := func(pid string, d time.Duration) {
		t.Helper()
		if _, err := l.Pool().Exec(ctx, `UPDATE payments SET created_at = created_at - make_interval(secs => $2),
			updated_at = updated_at - make_interval(secs => $2) WHERE payment_id = $1`, pid, d.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	statuses := map[string]string{} // the provider's; absent: it does not answer
	setStatus := func(pid, st string) { mu.Lock(); statuses[pid] = st; mu.Unlock() }
	status := func(_ context.Context, pid string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if st, ok := statuses[pid]; ok {
			if st == "404" {
				return "", &payment.Error{Path: "/v1/payments/" + pid, Status: http.StatusNotFound}
			}
			return st, nil
		}
		return "", payment.ErrProvider
	}
	breakerOpen := false
	w := hs.srv.confirmWatch(l, status, time.Minute, 2, func() bool { return breakerOpen })
	check := func(wantChanged int) {
		t.Helper()
		if n, err := w.Check(ctx); err != nil || n != wantChanged {
			t.Fatalf("check: changed %d %v, want %d", n, err, wantChanged)
		}
	}
	paused := func() bool {
		e, err := hs.store.GetEvent(ctx, "e1")
		if err != nil {
			t.Fatal(err)
		}
		return !e.HoldsPausedSince.IsZero()
	}

	left := start("u1", "A1")
	check(0) // within the timeout
	age(left, 2*time.Minute)
	setStatus(left, "pending")
	check(0) // the fan has not paid: no outage
	if paused() {
		t.Fatal("a fan on the checkout page stopped the clocks")
	}

	never := start("u4", "A4") // the provider never heard of it
	age(never, 2*time.Minute)
	setStatus(never, "404")
	check(0)
	paid := start("u2", "A2")
	age(paid, 90*time.Second)
	setStatus(paid, "paid")
	check(1)
	if !paused() {
		t.Fatal("an unconfirmed payment did not stop the clocks")
	}
	if f := hs.rec.Topic(events.TopicProviderDegraded); len(f) != 1 || f[0].Reason != "holds=3 by=unconfirmed" {
		t.Fatalf("provider_degraded: %+v", f)
	}
	for range 3 { // still paid without a webhook: the probes fail
		check(0)
	}
	// the webhook comes: nothing unconfirmed, the provider answers
	if _, err := l.RecordSale(ctx, ledger.Sale{PaymentID: paid, EventID: "e1", UserID: "u2", SeatID: "A2"}); err != nil {
		t.Fatal(err)
	}
	setStatus(probeID, "404")
	breakerOpen = true
	check(0)
	check(0) // two probes, but the breaker is open
	if !paused() {
		t.Fatal("recovered while the breaker is open")
	}
	breakerOpen = false
	check(1)
	if paused() {
		t.Fatal("the probes did not recover the provider")
	}
	if f := hs.rec.Topic(events.TopicProviderRecovered); len(f) != 1 || f[0].Reason[len(f[0].Reason)-len("by=unconfirmed"):] != "by=unconfirmed" {
		t.Fatalf("provider_recovered: %+v", f)
	}
	if o, err := l.ProviderOutages(ctx, "e1"); err != nil || len(o) != 1 || o[0].DegradedBy != "unconfirmed" || o[0].HoldsPaused != 3 ||
		o[0].RecoveredBy != "unconfirmed" || o[0].RecoveredAt.IsZero() {
		t.Fatalf("ledger: %+v %v", o, err)
	}
	recs := h.auditOf(operators.ActionProviderDeclare)
	if len(recs) != 2 || recs[0].Actor != "unconfirmed" || recs[0].Via != operators.ViaSystem ||
		string(recs[0].After) != `{"degraded": false, "events_changed": 1}` || string(recs[1].After) != `{"degraded": true, "events_changed": 1}` {
		t.Fatalf("audit: %+v", recs)
	}

	// an outage an operator declared is not the watch's to end
	late := start("u3", "A3")
	want(t, hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": true}), 200, "")
	age(late, 2*time.Minute)
	setStatus(late, "declined")
	check(0) // declares, changes nothing
	setStatus(late, "pending")
	check(0)
	check(0) // probes succeed: the watch stands down
	if !paused() {
		t.Fatal("the watch ended an operator's outage")
	}
}
