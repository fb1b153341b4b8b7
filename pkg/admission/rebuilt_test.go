package admission_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// rebuiltNow is the clock of the tests on a rebuilt event, and
// rebuiltBase the join sequence base its rebuild gets (now_ms ×
// ledger.SeqBaseFactor, as pkg/ledger's Restorer picks it): above 10^14,
// where Lua's tostring and .. write a number in exponent form.
var (
	rebuiltNow  = time.UnixMilli(1_795_811_857_885)
	rebuiltBase = rebuiltNow.UnixMilli() * 1000
)

// rebuiltStore is a Store on the real Redis with a clock the test moves,
// holding event id rebuilt from the ledger's point of view: restored with
// sequences starting at rebuiltBase.
func rebuiltStore(t *testing.T, id string, cfg booking.EventConfig) (*booking.Store, func(time.Duration), func() time.Time) {
	t.Helper()
	var mu sync.Mutex
	clock := rebuiltNow
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	s := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)), booking.WithClock(now))
	t.Cleanup(s.Close)
	cfg.ID = id
	def, err := booking.NormalizeEvent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.RestoreEvent(context.Background(), booking.RestoreInput{Config: def, SeqBase: rebuiltBase})
	if err != nil || res.SeqBase != rebuiltBase {
		t.Fatalf("restore: %+v %v", res, err)
	}
	return s, advance, now
}

// TestExpiryOnARebuiltEventReachesKafka: on an event rebuilt from the
// ledger, whose join sequences start near 1.8 × 10^15, a hold that expires
// is announced: its outbox entry carries the exact sequence, the safety
// net's sweep publishes its booking_expired fact and empties the outbox.
func TestExpiryOnARebuiltEventReachesKafka(t *testing.T) {
	ctx := context.Background()
	s, advance, now := rebuiltStore(t, "rebuilt", booking.EventConfig{Rows: 1, SeatsPerRow: 4, Capacity: 2, Hold: time.Minute})
	rec := &events.Recorder{}
	ann := admission.New(s, &memPub{sent: map[string]int{}}, rec, nil, admission.WithClock(now))

	j, err := s.Enqueue(ctx, "rebuilt", "a")
	if err != nil || j.State != booking.StateActive || j.Sequence != rebuiltBase+1 {
		t.Fatalf("join: %+v %v, want active with sequence %d", j, err, rebuiltBase+1)
	}
	if err := ann.Announce(ctx, "rebuilt", j.Outbox); err != nil {
		t.Fatalf("announce the join: %v", err)
	}
	if _, err := s.LockSeat(ctx, "rebuilt", "a", "A1"); err != nil {
		t.Fatal(err)
	}
	advance(time.Minute + time.Second)
	x, err := s.HandleTimeout(ctx, "rebuilt", "a")
	if err != nil || x.Outcome != booking.OutcomeReleased {
		t.Fatalf("timeout: %+v %v", x, err)
	}
	// the timeout consumer's announcement fails (say Kafka is down): the
	// entry is left to the safety net
	rec.FailWith(context.DeadlineExceeded)
	_ = ann.Announce(ctx, "rebuilt", x.Outbox)
	rec.FailWith(nil)

	// (the rebuild's own event_restored entry is there too: the Restorer
	// publishes it, here the sweep does)
	left, err := s.Outbox(ctx, "rebuilt", 0)
	if err != nil || len(left) != 2 || left[1].Kind != booking.KindExpired || left[1].Sequence != rebuiltBase+1 {
		t.Fatalf("outbox %+v %v, want the rebuild and the expiry of sequence %d", left, err, rebuiltBase+1)
	}
	if _, err := ann.SweepOutbox(ctx, "rebuilt", 0); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if left, _ := s.Outbox(ctx, "rebuilt", 0); len(left) != 0 {
		t.Fatalf("outbox after the sweep: %+v", left)
	}
	expired := rec.Topic(events.TopicBookingExpired)
	if len(expired) != 1 || expired[0].Sequence != rebuiltBase+1 || expired[0].SeatID != "A1" {
		t.Fatalf("booking_expired %+v, want one for sequence %d, seat A1", expired, rebuiltBase+1)
	}
	if r := rec.Topic(events.TopicEventRestored); len(r) != 1 || r[0].Sequence != rebuiltBase {
		t.Fatalf("event_restored %+v, want one with the sequence base %d", r, rebuiltBase)
	}
}
