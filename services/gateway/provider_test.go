package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/payment"
)

// TestAdminProvider: an operator declares the payment provider degraded:
// the holds in the room stop, a join that would have entered at once
// queues, one fact per event; a repeat changes nothing; recovery restarts
// the clocks and promotes.
func TestAdminProvider(t *testing.T) {
	hs := newHarness(t, false)
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 2, "hold_seconds": 30})
	u1, u2 := hs.token("u1", ""), hs.token("u2", "")
	if r := hs.do("POST", "/api/booking/request", u1, map[string]any{"event_id": "e1"}); r.str("status") != "active" {
		t.Fatalf("join: %s", r.raw)
	}

	want(t, hs.do("PUT", "/api/admin/provider", u1, map[string]any{"degraded": true}), 403, "forbidden")
	want(t, hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{}), 400, "invalid_argument")
	want(t, hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": "yes"}), 400, "invalid_body")

	r := hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": true})
	evs, _ := r.body["events"].([]any)
	if r.code != 200 || r.num("changed") != 1 || len(evs) != 1 {
		t.Fatalf("degraded: %s", r.raw)
	}
	if e := evs[0].(map[string]any); e["holds"] != float64(1) || e["paused_since"] == "" || e["changed"] != true {
		t.Fatalf("degraded: %s", r.raw)
	}
	facts := hs.rec.Topic(events.TopicProviderDegraded)
	if len(facts) != 1 || facts[0].EventID != "e1" || facts[0].Reason != "holds=1 by=operator" {
		t.Fatalf("provider_degraded: %+v", facts)
	}
	if r := hs.do("POST", "/api/booking/request", u2, map[string]any{"event_id": "e1"}); r.str("status") != "queued" {
		t.Fatalf("join during the outage: %s, want queued", r.raw)
	}

	r = hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": true})
	if r.code != 200 || r.num("changed") != 0 {
		t.Fatalf("degraded again: %s", r.raw)
	}
	if again := hs.rec.Topic(events.TopicProviderDegraded); len(again) != 2 || again[1].ID != facts[0].ID {
		t.Fatalf("a repeat publishes the same fact: %+v", again)
	}

	released := len(hs.ann.Released())
	r = hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": false})
	if r.code != 200 || r.num("changed") != 1 {
		t.Fatalf("recovered: %s", r.raw)
	}
	rec := hs.rec.Topic(events.TopicProviderRecovered)
	if len(rec) != 1 || rec[0].Sequence != facts[0].Sequence {
		t.Fatalf("provider_recovered: %+v", rec)
	}
	if rel := hs.ann.Released(); len(rel) != released+1 || rel[len(rel)-1] != messages.ReasonCapacity {
		t.Fatalf("recovery did not release a slot: %v", rel)
	}
	if r := hs.do("PUT", "/api/admin/provider", hs.admin, map[string]any{"degraded": false}); r.code != 200 || r.num("changed") != 0 {
		t.Fatalf("recovered again: %s", r.raw)
	}
}

// TestBreakerDeclaresTheProvider: provider calls failing in a row open the
// breaker, which declares the provider degraded (by=breaker); after the
// open time a successful probe closes it and recovers.
func TestBreakerDeclaresTheProvider(t *testing.T) {
	h := operatorHarness(t)
	hs := h.harness
	hs.srv.Provider = payment.NewBreaker(hs.prov, nil, payment.BreakerSettings{Failures: 2, Open: 50 * time.Millisecond, Probes: 1,
		OnChange: hs.srv.onBreaker})
	hs.createEvent(map[string]any{"id": "e1", "rows": 2, "seats_per_row": 5, "capacity": 2, "hold_seconds": 300})
	u := hs.token("u1", "")
	hs.do("POST", "/api/booking/request", u, map[string]any{"event_id": "e1"})
	want(t, hs.do("POST", "/api/booking/select-seat", u, map[string]any{"event_id": "e1", "seat_id": "A1"}), 200, "")
	paused := func() bool {
		e, err := hs.store.GetEvent(context.Background(), "e1")
		return err == nil && !e.HoldsPausedSince.IsZero()
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("no %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	hs.prov.mu.Lock()
	hs.prov.fail = payment.ErrProvider
	hs.prov.mu.Unlock()
	for range 2 {
		want(t, hs.do("POST", "/api/booking/payment/initiate", u, map[string]any{"event_id": "e1"}), 503, "payment_provider_unavailable")
	}
	waitFor("degradation", paused)
	waitFor("provider_degraded", func() bool { return len(hs.rec.Topic(events.TopicProviderDegraded)) > 0 })
	if f := hs.rec.Topic(events.TopicProviderDegraded); len(f) != 1 || f[0].Reason != "holds=1 by=breaker" {
		t.Fatalf("provider_degraded: %+v", f)
	}
	hs.prov.mu.Lock()
	hs.prov.fail = nil
	hs.prov.mu.Unlock()
	time.Sleep(60 * time.Millisecond)
	want(t, hs.do("POST", "/api/booking/payment/initiate", u, map[string]any{"event_id": "e1"}), 200, "")
	waitFor("recovery", func() bool { return !paused() })
	waitFor("provider_recovered", func() bool { return len(hs.rec.Topic(events.TopicProviderRecovered)) > 0 })
	outages, err := h.l.ProviderOutages(context.Background(), "e1")
	if err != nil || len(outages) != 1 || outages[0].DegradedBy != "breaker" || outages[0].RecoveredBy != "breaker" {
		t.Fatalf("ledger: %+v %v", outages, err)
	}
	if f := hs.rec.Topic(events.TopicProviderRecovered); len(f) != 1 || !strings.HasSuffix(f[0].Reason, "by=breaker") {
		t.Fatalf("provider_recovered: %+v", f)
	}
	// both changes are in the audit trail, by the system (newest first)
	waitFor("the audit records", func() bool { return len(h.auditOf(operators.ActionProviderDeclare)) == 2 })
	for i, a := range h.auditOf(operators.ActionProviderDeclare) {
		if a.Actor != "breaker" || a.Via != operators.ViaSystem || string(a.After) != map[int]string{
			0: `{"degraded": false, "events_changed": 1}`, 1: `{"degraded": true, "events_changed": 1}`}[i] {
			t.Errorf("record %d: %+v after %s", i, a, a.After)
		}
	}
}
