package main

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// TestAnInterruptedAdminCallIsStillOnRecord: a change whose own audit
// record could not be written (here PostgreSQL refuses the insert; a
// gateway killed between the change and the record is the same) still
// reaches the audit trail: the sweep records request.interrupted with who
// called what, from where and when, and publishes its fact. A refused
// call and a repeat that changed nothing leave nothing behind.
func TestAnInterruptedAdminCallIsStillOnRecord(t *testing.T) {
	t.Parallel()
	h := operatorHarness(t)
	ctx := context.Background()
	pool := h.l.Pool()
	h.account("ada", operators.Admin)
	admin := h.signIn("ada", opPassword)
	call := func(method, path string, body any, code int) {
		t.Helper()
		r, _ := h.send(method, path, admin, body)
		if r.code != code {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.code, r.raw, code)
		}
	}
	intents := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM operator_action_intents`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	call("POST", "/api/admin/events", map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2}, 201)
	call("PATCH", "/api/admin/events/e1", map[string]any{"capacity": -1}, 400) // refused
	call("PUT", "/api/admin/provider", map[string]any{"degraded": false}, 200) // changed nothing
	if n := intents(); n != 0 {
		t.Fatalf("%d intents left by calls that completed", n)
	}

	if _, err := pool.Exec(ctx, `CREATE FUNCTION refuse_record() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'disk full'; END; $$;
		CREATE TRIGGER refuse_record BEFORE INSERT ON operator_actions FOR EACH ROW EXECUTE FUNCTION refuse_record()`); err != nil {
		t.Fatal(err)
	}
	call("PATCH", "/api/admin/events/e1", map[string]any{"capacity": 3}, 503)
	if def, err := h.l.Event(ctx, "e1"); err != nil || def.Config.Capacity != 3 {
		t.Fatalf("the change was not made: %+v %v", def.Config, err)
	}
	if _, err := pool.Exec(ctx, `DROP TRIGGER refuse_record ON operator_actions`); err != nil {
		t.Fatal(err)
	}
	if len(h.auditOf(operators.ActionInterrupted)) != 0 {
		t.Fatal("recorded as interrupted before the intent's age")
	}
	h.srv.AuditPublisher.IntentAge = time.Millisecond
	h.srv.AuditPublisher.Metrics = operators.NewMetrics(nil)
	time.Sleep(5 * time.Millisecond)
	if _, err := h.srv.AuditPublisher.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(h.srv.AuditPublisher.Metrics.Interrupted()); n != 1 {
		t.Errorf("boxoffice_operators_interrupted_calls_total %v, want 1", n)
	}
	recs := h.auditOf(operators.ActionInterrupted)
	if len(recs) != 1 {
		t.Fatalf("%d request.interrupted records, want 1: %+v", len(recs), recs)
	}
	a := recs[0]
	after := obj(t, a.After)
	if a.Actor != "ada" || a.EventID != "e1" || a.Target != "/api/admin/events/e1" || a.RemoteAddr != "127.0.0.1" ||
		a.RequestID == "" || after["method"] != "PATCH" || after["route"] != "/api/admin/events/:id" || after["outcome"] != "unknown" {
		t.Errorf("record %+v after %v", a, after)
	}
	if time.Since(a.At) > time.Minute || a.At.After(time.Now()) {
		t.Errorf("at %v: not when the call began", a.At)
	}
	facts := 0
	for _, e := range h.rec.Topic(events.TopicOperatorAction) {
		if e.Action == operators.ActionInterrupted {
			facts++
			if e.EventID != "e1" || e.UserID != "ada" || e.Target != a.Target || !reflect.DeepEqual(obj(t, e.After), after) {
				t.Errorf("fact %+v, record %+v", e, a)
			}
		}
	}
	if facts != 1 {
		t.Fatalf("%d operator_action facts of the interrupted call, want 1", facts)
	}
	if n := intents(); n != 0 {
		t.Errorf("%d intents left after the sweep", n)
	}
	if _, err := h.srv.AuditPublisher.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(h.auditOf(operators.ActionInterrupted)); n != 1 {
		t.Errorf("a second sweep made %d records", n)
	}
}
