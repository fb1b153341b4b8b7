package admission_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// gatedProducer is a Recorder whose Publish waits until the gate opens.
type gatedProducer struct {
	events.Recorder
	gate chan struct{}
}

func (g *gatedProducer) Publish(ctx context.Context, evs ...events.Event) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Recorder.Publish(ctx, evs...)
}

// joinAll joins n users concurrently and returns every entry their joins
// wrote (the joined entry, and the promotion of one admitted at once).
func (e *env) joinAll(id string, n int) [][]booking.OutboxEntry {
	e.t.Helper()
	out := make([][]booking.OutboxEntry, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := e.store.Enqueue(e.ctx, id, fmt.Sprintf("u%03d", i))
			if err != nil {
				e.t.Errorf("join %d: %v", i, err)
			}
			out[i] = r.Outbox
		})
	}
	wg.Wait()
	return out
}

// bookingRequests returns the booking_request events by sequence and fails
// on a sequence published for two users.
func bookingRequests(t *testing.T, rec *events.Recorder) map[int64]string {
	t.Helper()
	seqs := map[int64]string{}
	for _, ev := range rec.Topic(events.TopicBookingRequest) {
		if u, ok := seqs[ev.Sequence]; ok && u != ev.UserID {
			t.Fatalf("sequence %d published for %s and %s", ev.Sequence, u, ev.UserID)
		}
		seqs[ev.Sequence] = ev.UserID
	}
	return seqs
}

// TestRelayAnnouncesJoins: the joined entries of concurrent joins reach
// Kafka as booking_request events (one per join sequence, with the
// request id handed in) and leave the outbox.
func TestRelayAnnouncesJoins(t *testing.T) {
	e := newEnv(t)
	e.event("relay", 1, time.Minute, 0, 10)
	e.pause("relay", true)
	rec := &events.Recorder{}
	ann := admission.New(e.store, e.pub, rec, e.log, admission.WithMetrics(e.metrics))
	relay := admission.NewRelay(ann, admission.WithRelayBatch(64))
	const n = 300
	for i, entries := range e.joinAll("relay", n) {
		for j := range entries {
			entries[j].RequestID = "req-" + entries[j].UserID
		}
		if !relay.Add("relay", entries...) {
			t.Fatalf("Add %d refused", i)
		}
	}
	if err := relay.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	seqs := bookingRequests(t, rec)
	if len(seqs) != n {
		t.Fatalf("%d booking_request sequences, want %d", len(seqs), n)
	}
	for _, ev := range rec.Topic(events.TopicBookingRequest) {
		if ev.RequestID != "req-"+ev.UserID {
			t.Fatalf("event of %s carries request id %q", ev.UserID, ev.RequestID)
		}
	}
	if left, err := e.store.Outbox(e.ctx, "relay", 0); err != nil || len(left) != 0 {
		t.Fatalf("outbox after relay: %d entries, %v", len(left), err)
	}
	if got := e.counter("boxoffice_admission_relay_entries_total", "result", "announced"); got != n {
		t.Fatalf("announced counter %v, want %d", got, n)
	}
	if relay.Add("relay", booking.OutboxEntry{Kind: booking.KindJoined}) {
		t.Fatal("Add after Close accepted")
	}
}

// TestRelayFailureLeavesOutbox: with Kafka failing, and with the queue
// full, joins lose nothing: the entries stay in the outbox and the safety
// net's sweep publishes every one of them once Kafka is back.
func TestRelayFailureLeavesOutbox(t *testing.T) {
	e := newEnv(t)
	e.event("down", 1, time.Minute, 0, 10)
	e.pause("down", true)

	// Kafka down: every batch fails
	rec := &events.Recorder{}
	rec.FailWith(errors.New("kafka down"))
	ann := admission.New(e.store, e.pub, rec, e.log, admission.WithMetrics(e.metrics))
	relay := admission.NewRelay(ann)
	joins := e.joinAll("down", 50)
	for _, entries := range joins {
		relay.Add("down", entries...)
	}
	if err := relay.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := e.store.Outbox(e.ctx, "down", 0); len(left) != 50 {
		t.Fatalf("outbox after failed relay: %d entries, want 50", len(left))
	}
	if got := e.counter("boxoffice_admission_relay_entries_total", "result", "failed"); got != 50 {
		t.Fatalf("failed counter %v", got)
	}

	// Queue full: a relay whose one worker is stuck in Kafka takes one
	// batch and one queued call; the rest is left to the sweep at once.
	gated := &gatedProducer{gate: make(chan struct{})}
	stuck := admission.NewRelay(admission.New(e.store, e.pub, gated, e.log, admission.WithMetrics(e.metrics)),
		admission.WithRelayWorkers(1), admission.WithRelayQueue(1))
	more := e.joinAll("down", 60)[50:]
	accepted := 0
	for _, entries := range more {
		if stuck.Add("down", entries...) {
			accepted++
		}
	}
	// the worker holds 1-2 calls (a batch takes what is queued), the queue 1
	if accepted > 3 || accepted == 0 {
		t.Fatalf("%d of 10 accepted by a stuck relay with a queue of 1", accepted)
	}
	if got := e.counter("boxoffice_admission_relay_entries_total", "result", "left_to_sweep"); got != float64(10-accepted) {
		t.Fatalf("left_to_sweep counter %v, want %d", got, 10-accepted)
	}
	close(gated.gate)
	if err := stuck.Close(e.ctx); err != nil {
		t.Fatal(err)
	}

	// Kafka back: the sweep publishes what is left, once each.
	rec.FailWith(nil)
	n, err := ann.SweepOutbox(e.ctx, "down", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != 60-accepted {
		t.Fatalf("swept %d entries, want %d", n, 60-accepted)
	}
	all := bookingRequests(t, rec)
	for s, u := range bookingRequests(t, &gated.Recorder) {
		all[s] = u
	}
	if len(all) != 60 {
		t.Fatalf("%d booking_request sequences after the sweep, want 60", len(all))
	}
	if left, _ := e.store.Outbox(e.ctx, "down", 0); len(left) != 0 {
		t.Fatalf("outbox after sweep: %+v", left)
	}
}

// TestSweepDrainsBacklog: a backlog larger than one outbox read (joins
// piled up during a Kafka outage) is published by one SweepOutbox call.
func TestSweepDrainsBacklog(t *testing.T) {
	e := newEnv(t)
	e.event("big", 1, time.Minute, 0, 10)
	e.pause("big", true)
	n := booking.OutboxReadMax + 700
	e.joinAll("big", n)
	rec := &events.Recorder{}
	ann := admission.New(e.store, e.pub, rec, e.log, admission.WithMetrics(e.metrics))
	swept, err := ann.SweepOutbox(e.ctx, "big", 0)
	if err != nil || swept != n {
		t.Fatalf("swept %d, %v; want %d", swept, err, n)
	}
	if got := len(bookingRequests(t, rec)); got != n {
		t.Fatalf("%d booking_request sequences, want %d", got, n)
	}
	if left, _ := e.store.Outbox(e.ctx, "big", 0); len(left) != 0 {
		t.Fatalf("%d entries left", len(left))
	}
}
