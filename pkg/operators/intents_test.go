package operators_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/operators"
)

// TestSettleRecordsEachIntentOnce: intents older than the age become one
// request.interrupted record each, however many gateways settle at once;
// a younger intent, and one removed with its request's record, do not.
func TestSettleRecordsEachIntentOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	s, pool := newStore(t, operators.WithClock(func() time.Time { return now }))
	in := operators.Intent{Actor: "ada", Via: "session", Role: operators.Admin, Method: "POST",
		Route: "/api/admin/events/:id/codes", Path: "/api/admin/events/e1/codes", EventID: "e1"}
	const old = 250
	for range old {
		if _, err := s.Begin(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	done, err := s.Begin(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, operators.Action{Actor: "ada", Via: "session", Role: operators.Admin,
		Action: operators.ActionCodesCreate, EventID: "e1", Intent: done}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if _, err := s.Begin(ctx, in); err != nil { // young: its request may be at work
		t.Fatal(err)
	}
	var mu sync.Mutex
	settled := map[int64]int{}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			ids, err := s.Settle(ctx, time.Minute)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, id := range ids {
				settled[id]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(settled) != old {
		t.Errorf("%d records settled, want %d", len(settled), old)
	}
	for id, n := range settled {
		if n != 1 {
			t.Errorf("record %d settled %d times", id, n)
		}
	}
	var recs, queued, left int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM operator_actions WHERE action = $1),
		(SELECT count(*) FROM operator_action_outbox o JOIN operator_actions a ON a.id = o.action_id WHERE a.action = $1),
		(SELECT count(*) FROM operator_action_intents)`, operators.ActionInterrupted).Scan(&recs, &queued, &left); err != nil {
		t.Fatal(err)
	}
	if recs != old || queued != old || left != 1 {
		t.Errorf("%d records, %d in the outbox, %d intents left; want %d, %d, 1", recs, queued, left, old, old)
	}
}
