package admission_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

type recordingPublisher struct {
	mu   sync.Mutex
	msgs []amqpx.Message
}

func (p *recordingPublisher) Publish(_ context.Context, _, _ string, m amqpx.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, m)
	return nil
}

func (p *recordingPublisher) PublishDelayed(context.Context, string, string, amqpx.Message, time.Duration) error {
	return nil
}

// A your_turn carries the admission pass, valid for the hold.
func TestYourTurnCarriesThePass(t *testing.T) {
	ctx := context.Background()
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)))
	t.Cleanup(store.Close)
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 2, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	keys, err := pass.ParseKeys([]string{"k1:" + base64.RawURLEncoding.EncodeToString(seed)})
	if err != nil {
		t.Fatal(err)
	}
	pub := &recordingPublisher{}
	ann := admission.New(store, pub, &events.Recorder{}, nil, admission.WithPass(pass.NewSigner(keys, "bo")))
	res, err := store.Enqueue(ctx, "e1", "alice")
	if err != nil || !res.State.InRoom() {
		t.Fatalf("join: %+v %v", res, err)
	}
	if err := ann.Announce(ctx, "e1", res.Outbox); err != nil {
		t.Fatal(err)
	}
	jwks, _ := keys.JWKS()
	for _, m := range pub.msgs {
		var n messages.Notification
		if json.Unmarshal(m.Body, &n) != nil || n.Type != messages.NotifyYourTurn {
			continue
		}
		c, err := pass.Verify(jwks, n.Pass, "bo", "e1", time.Now())
		if err != nil || c.Subject != "alice" || c.Seq != res.Sequence || c.ExpiresAt.Unix() != n.ExpireTime {
			t.Fatalf("your_turn pass: %+v %v (%s)", c, err, m.Body)
		}
		return
	}
	t.Fatalf("no your_turn among %d messages", len(pub.msgs))
}

// At the sales start the promoter publishes the pre-queue's draw
// (queue_randomized: count, seed, digest) before it admits anyone, then
// admits in the draw's order.
func TestPromoterPublishesTheDraw(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)), booking.WithClock(clock))
	t.Cleanup(store.Close)
	start := now.Add(time.Minute)
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 10, Capacity: 3,
		SalesStart: start, EarlyJoin: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var users []string
	for i := range 5 {
		u := "u" + string(rune('a'+i))
		users = append(users, u)
		if _, err := store.Enqueue(ctx, "e1", u); err != nil {
			t.Fatal(err)
		}
	}
	rec := &events.Recorder{}
	ann := admission.New(store, &recordingPublisher{}, rec, nil, admission.WithClock(clock))
	p := admission.NewPromoter(store, ann, nil)
	if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 0 {
		t.Fatalf("before the start: %d %v", n, err)
	}
	mu.Lock()
	now = start
	mu.Unlock()
	n, err := p.PromoteEvent(ctx, "e1")
	if err != nil || n != 3 {
		t.Fatalf("at the start: admitted %d %v", n, err)
	}
	facts := rec.Topic(events.TopicQueueRandomized)
	if len(facts) != 1 || facts[0].Sequence != 5 || facts[0].UserID != events.RestoredBy {
		t.Fatalf("queue_randomized: %+v", facts)
	}
	e, _ := store.GetEvent(ctx, "e1")
	if !strings.Contains(facts[0].Reason, "seed="+e.DrawSeed) || !strings.Contains(facts[0].Reason, "commit="+e.DrawCommit) {
		t.Fatalf("fact %q lacks the revealed seed %s", facts[0].Reason, e.DrawSeed)
	}
	salt, _ := store.FairSalt(ctx, "e1")
	order, _ := booking.DrawOrder(e.DrawSeed, e.DrawCommit, salt, users)
	promoted := rec.Topic(events.TopicUserPromoted)
	for i, ev := range promoted {
		if ev.UserID != order[i] {
			t.Fatalf("promoted %d: %s, the draw says %s", i, ev.UserID, order[i])
		}
	}
	if _, err := p.PromoteEvent(ctx, "e1"); err != nil || len(rec.Topic(events.TopicQueueRandomized)) != 1 {
		t.Fatal("the draw was published twice")
	}
}

func (p *recordingPublisher) PublishBatch(ctx context.Context, out []amqpx.Outgoing) []error {
	return oneByOne(ctx, p, out)
}

// clockedStore is a store on the real Redis whose scripts read a test
// clock (booking.WithClock), with the clock and its setter.
func clockedStore(t *testing.T) (func() time.Time, func(time.Time), *booking.Store) {
	now := time.UnixMilli(1_800_000_000_000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	setNow := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)), booking.WithClock(clock))
	t.Cleanup(store.Close)
	return clock, setNow, store
}

// A draw committed to a beacon round: the promoter admits nobody from the
// pre-queue until the round's value is supplied, then publishes the draw
// with the beacon and admits in its order.
func TestPromoterWaitsForTheBeacon(t *testing.T) {
	ctx := context.Background()
	clock, setNow, store := clockedStore(t)
	now := clock()
	start := now.Add(2 * time.Hour)
	if _, err := store.CreateEvent(ctx, booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 10, Capacity: 3,
		SalesStart: start, EarlyJoin: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetBeaconRound(ctx, "e1", "", 42, "drand"); err != nil {
		t.Fatal(err)
	}
	setNow(start.Add(-time.Minute))
	for i := range 5 {
		if _, err := store.Enqueue(ctx, "e1", "u"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	rec := &events.Recorder{}
	ann := admission.New(store, &recordingPublisher{}, rec, nil, admission.WithClock(clock))
	p := admission.NewPromoter(store, ann, nil)
	setNow(start)
	for range 2 {
		if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 0 || len(rec.Topic(events.TopicQueueRandomized)) != 0 {
			t.Fatalf("without the beacon's value: admitted %d %v", n, err)
		}
	}
	value := strings.Repeat("ab", 32)
	if _, err := store.SetBeaconValue(ctx, "e1", "", value, ""); err != nil {
		t.Fatal(err)
	}
	if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 3 {
		t.Fatalf("with the value: admitted %d %v", n, err)
	}
	facts := rec.Topic(events.TopicQueueRandomized)
	if len(facts) != 1 || !strings.Contains(facts[0].Reason, "beacon_round=42 beacon="+value+" beacon_source=drand") {
		t.Fatalf("queue_randomized: %+v", facts)
	}
}

// At a later phase's start the promoter draws that phase's pre-queue
// (booking.Store.ClosePhaseDraw), publishes its queue_randomized (reason
// ending with phase=<id>, an id of its own) and then admits the presale's
// waiter, the drawn fans in the draw's order, then the later joiner.
func TestPromoterPublishesAPhaseDraw(t *testing.T) {
	ctx := context.Background()
	clock, setNow, store := clockedStore(t)
	now := clock()
	cfg := booking.EventConfig{ID: "e1", Rows: 1, SeatsPerRow: 20, Capacity: 20}
	if _, err := store.CreateEvent(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	general := now.Add(time.Hour)
	early := 1800
	sch := booking.Schedule{Phases: []booking.Phase{
		{ID: "presale", StartsAt: now.Add(-time.Hour), EndsAt: general, Audience: booking.AudienceRegistered},
		{ID: "general", StartsAt: general, EndsAt: general.Add(time.Hour), Audience: booking.AudiencePublic, EarlyJoinSeconds: &early}}}
	if err := booking.CheckSchedule(cfg, &sch); err != nil {
		t.Fatal(err)
	}
	if err := store.SetSchedule(ctx, cfg, sch, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ApplySchedule(ctx, "e1", true); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkSelected(ctx, "e1", []string{"member"}); err != nil {
		t.Fatal(err)
	}
	paused := true
	if _, err := store.UpdateEvent(ctx, "e1", booking.EventUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, "e1", "member"); err != nil {
		t.Fatal(err)
	}
	setNow(general.Add(-10 * time.Minute))
	var fans []string
	for i := range 5 {
		u := "fan" + string(rune('a'+i))
		fans = append(fans, u)
		if r, err := store.Enqueue(ctx, "e1", u); err != nil || r.PrequeuedUntil.IsZero() {
			t.Fatalf("pre-queued join: %+v %v", r, err)
		}
	}
	rec := &events.Recorder{}
	ann := admission.New(store, &recordingPublisher{}, rec, nil, admission.WithClock(clock))
	p := admission.NewPromoter(store, ann, nil)
	setNow(general)
	if _, err := store.ApplySchedule(ctx, "e1", true); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, "e1", "late"); err != nil {
		t.Fatal(err)
	}
	paused = false
	if _, err := store.UpdateEvent(ctx, "e1", booking.EventUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	if n, err := p.PromoteEvent(ctx, "e1"); err != nil || n != 7 {
		t.Fatalf("at the general sale's start: admitted %d %v", n, err)
	}
	facts := rec.Topic(events.TopicQueueRandomized)
	if len(facts) != 1 || facts[0].Sequence != 5 || !strings.HasSuffix(facts[0].Reason, " phase=general") {
		t.Fatalf("queue_randomized: %+v", facts)
	}
	in, err := store.DrawInputs(ctx, "e1", "general")
	if err != nil || !strings.Contains(facts[0].Reason, "seed="+in.Seed) || !strings.Contains(facts[0].Reason, "digest="+in.Digest) {
		t.Fatalf("fact %q, the draw %+v %v", facts[0].Reason, in, err)
	}
	if first := events.QueueRandomized("e1", 5, in.Seed, in.Commit, in.Digest, fairness.Beacon{}, clock()); first.ID == facts[0].ID {
		t.Fatal("a phase's draw has the id of the first phase's")
	}
	salt, _ := store.FairSalt(ctx, "e1")
	order, _ := booking.DrawOrder(in.Seed, in.Commit, salt, fans)
	want := append(append([]string{"member"}, order...), "late")
	promoted := rec.Topic(events.TopicUserPromoted)
	if len(promoted) != len(want) {
		t.Fatalf("promoted %d, want %d", len(promoted), len(want))
	}
	for i, ev := range promoted {
		if ev.UserID != want[i] {
			t.Fatalf("promoted %d: %s, want %s (%v)", i, ev.UserID, want[i], want)
		}
	}
	if _, err := p.PromoteEvent(ctx, "e1"); err != nil || len(rec.Topic(events.TopicQueueRandomized)) != 1 {
		t.Fatal("the draw was published twice")
	}
}
