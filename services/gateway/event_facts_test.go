package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestEventFactsOncePerChange: creating an event publishes event_created
// (its settings, the ledger's creation time); each PATCH that changes a
// setting publishes one event_updated numbered by the ledger's revision,
// saying what changed; a PATCH that changes nothing republishes the last
// change as it was (same id, same bytes), never a new one.
func TestEventFactsOncePerChange(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2})
	created := hs.rec.Topic(events.TopicEventCreated)
	if len(created) != 1 || created[0].EventID != "e1" || created[0].UserID != events.RestoredBy ||
		created[0].Reason != "abandon_seconds=0 batch_size=500 capacity=2 grace_seconds=120 hold_seconds=600 seats=4" {
		t.Fatalf("event_created %+v", created)
	}
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"capacity": 3, "paused": true}), 200, "")
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"capacity": 3}), 200, "") // no change
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"paused": false, "hold_seconds": 90}), 200, "")
	up := hs.rec.Topic(events.TopicEventUpdated)
	if len(up) != 3 {
		t.Fatalf("%d event_updated, want 3: %+v", len(up), up)
	}
	if up[0].Sequence != 1 || up[0].Reason != "capacity=3 paused=true" {
		t.Errorf("first change %+v", up[0])
	}
	a, _ := events.Encode(up[0])
	b, _ := events.Encode(up[1])
	if string(a) != string(b) {
		t.Errorf("a PATCH that changed nothing published a new fact:\n%s\n%s", a, b)
	}
	if up[2].Sequence != 2 || up[2].Reason != "hold_seconds=90 paused=false" || up[2].ID == up[0].ID {
		t.Errorf("second change %+v", up[2])
	}
}

// TestRetriedCreateRepublishesTheSameEventCreated: the same create again
// (the retry of a call whose answer or publish was lost) answers 201 and
// republishes event_created byte for byte (the ledger's creation time).
func TestRetriedCreateRepublishesTheSameEventCreated(t *testing.T) {
	t.Parallel()
	hs, _, _ := ledgerHarness(t)
	def := map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2}
	hs.createEvent(def)
	want(t, hs.do("POST", "/api/admin/events", hs.admin, def), 201, "")
	got := hs.rec.Topic(events.TopicEventCreated)
	if len(got) != 2 {
		t.Fatalf("%d event_created, want 2", len(got))
	}
	a, _ := events.Encode(got[0])
	b, _ := events.Encode(got[1])
	if string(a) != string(b) {
		t.Errorf("copies differ:\n%s\n%s", a, b)
	}
}

// TestScheduleSettingIsAnEventUpdate: on_phase_change changed by PUT
// /api/admin/events/{id}/phases is a settings change like PATCH's: the
// ledger's revision moves and one event_updated says so; the schedule
// given with the same setting republishes the last change as it was, and
// a schedule without the setting publishes none.
func TestScheduleSettingIsAnEventUpdate(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2})
	at := func(h int) string { return time.Now().Add(time.Duration(h) * time.Hour).UTC().Format(time.RFC3339) }
	phases := []map[string]any{{"id": "presale", "starts_at": at(1), "ends_at": at(2), "audience": "public"}}
	path := "/api/admin/events/e1/phases"
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"phases": phases, "on_phase_change": "leave"}), 200, "")
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"phases": phases, "on_phase_change": "leave"}), 200, "") // no change
	want(t, hs.do("PUT", path, hs.admin, map[string]any{"phases": phases}), 200, "")                             // setting not given
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"on_phase_change": "keep"}), 200, "")
	up := hs.rec.Topic(events.TopicEventUpdated)
	if len(up) != 3 {
		t.Fatalf("%d event_updated, want 3: %+v", len(up), up)
	}
	if up[0].Sequence != 1 || up[0].Reason != "on_phase_change=leave" {
		t.Errorf("the schedule's change %+v", up[0])
	}
	a, _ := events.Encode(up[0])
	b, _ := events.Encode(up[1])
	if string(a) != string(b) {
		t.Errorf("a schedule that changed nothing published a new fact:\n%s\n%s", a, b)
	}
	if up[2].Sequence != 2 || up[2].Reason != "on_phase_change=keep" {
		t.Errorf("the PATCH after it %+v", up[2])
	}
	if d, err := l.Event(ctx, "e1"); err != nil || d.Revision != 2 || d.LastChange != "on_phase_change=keep" {
		t.Fatalf("ledger revision %d %q, %v", d.Revision, d.LastChange, err)
	}
}

// TestRefusedUpdateLeavesTheLedgerAlone: a PATCH refused with a 4xx (a
// sales end before the event's sales start) changes nothing: not Redis,
// and not the ledger that a rebuild of Redis starts from.
func TestRefusedUpdateLeavesTheLedgerAlone(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	start := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2,
		"sales_start": start.Format(time.RFC3339)})
	r := hs.do("PATCH", "/api/admin/events/e1", hs.admin,
		map[string]any{"sales_end": start.Add(-time.Hour).Format(time.RFC3339), "capacity": 3})
	want(t, r, 400, "invalid_argument")
	if msg := r.str("message"); msg != "invalid argument: sales_end must be after sales_start" {
		t.Errorf("message %q", msg)
	}
	def, err := l.Event(context.Background(), "e1")
	if err != nil {
		t.Fatal(err)
	}
	if !def.Config.SalesEnd.IsZero() || def.Config.Capacity != 2 || def.Revision != 0 {
		t.Errorf("the ledger took a refused change: sales_end %v capacity %d revision %d",
			def.Config.SalesEnd, def.Config.Capacity, def.Revision)
	}
	if up := hs.rec.Topic(events.TopicEventUpdated); len(up) != 0 {
		t.Errorf("a refused change published %+v", up)
	}
}

// failScript fails every call of one Redis function (FCALL name) while on,
// as a Redis lost mid-request would.
type failScript struct {
	name string
	on   atomic.Bool
}

func (f *failScript) fails(cmd redis.Cmder) bool {
	args := cmd.Args()
	if !f.on.Load() || len(args) < 2 || !strings.EqualFold(fmt.Sprint(args[0]), "fcall") {
		return false
	}
	return fmt.Sprint(args[1]) == lua.Function(f.name)
}
func (f *failScript) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *failScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.fails(cmd) {
			return errors.New("read tcp: connection reset by peer")
		}
		return next(ctx, cmd)
	}
}
func (f *failScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if f.fails(cmd) {
				return errors.New("read tcp: connection reset by peer")
			}
		}
		return next(ctx, cmds)
	}
}

// TestUpdateRedisFailedLeavesTheLedgerAlone: a PATCH or a waitlist change
// whose Redis step fails answers 503 and leaves the ledger as it was, so
// the two never disagree about the settings and the retry does it all.
func TestUpdateRedisFailedLeavesTheLedgerAlone(t *testing.T) {
	t.Parallel()
	hs, l, _ := ledgerHarness(t)
	ctx := context.Background()
	hs.createEvent(map[string]any{"id": "e1", "name": "Show", "rows": 1, "seats_per_row": 4, "capacity": 2})
	fail := &failScript{name: "update_event"}
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(fail)
	hs.srv.Store = booking.New(rdb, booking.WithPrefix(hs.store.Prefix()))
	t.Cleanup(hs.srv.Store.Close)
	fail.on.Store(true)
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"capacity": 3}), 503, "unavailable")
	want(t, hs.do("PUT", "/api/admin/events/e1/waitlist", hs.admin, map[string]any{"offer_seconds": 600}), 503, "unavailable")
	def, err := l.Event(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	if def.Config.Capacity != 2 || def.Config.OfferTime != 0 || def.Revision != 0 {
		t.Errorf("the ledger kept a change Redis never made: capacity %d offer %v revision %d",
			def.Config.Capacity, def.Config.OfferTime, def.Revision)
	}
	fail.on.Store(false)
	want(t, hs.do("PATCH", "/api/admin/events/e1", hs.admin, map[string]any{"capacity": 3}), 200, "")
	e, err := hs.store.GetEvent(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	if def, err = l.Event(ctx, "e1"); err != nil || def.Config.Capacity != 3 || e.Capacity != 3 || def.Revision != 1 {
		t.Errorf("the retry: ledger capacity %d revision %d, Redis %d (%v)", def.Config.Capacity, def.Revision, e.Capacity, err)
	}
}
