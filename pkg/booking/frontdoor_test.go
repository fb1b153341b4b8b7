package booking

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// early_join_seconds is patchable. A change applies to joins from then
// on: switching the pre-queue on commits a seed; later changes keep that
// seed; users already pre-queued stay in the draw when the pre-queue is
// shortened or switched off, and are admitted at the start in the order
// the committed seed gives, ahead of everyone who joins after it.
func TestEarlyJoinPatch(t *testing.T) {
	f := newFixture(t)
	start := f.clock.Now().Add(time.Hour).Truncate(time.Second)
	e := f.event(EventConfig{ID: "pp", Rows: 2, SeatsPerRow: 5, Capacity: 10, SalesStart: start})
	if e.DrawCommit != "" || e.EarlyJoin != 0 {
		t.Fatalf("no pre-queue yet: %+v", e)
	}
	if _, err := f.s.Enqueue(f.ctx, "pp", "a"); !errors.Is(err, ErrSalesNotStarted) {
		t.Fatalf("join before the start without a pre-queue: %v", err)
	}
	patch := func(d time.Duration) Event {
		t.Helper()
		e, err := f.s.UpdateEvent(f.ctx, "pp", EventUpdate{EarlyJoin: &d})
		if err != nil {
			t.Fatalf("patch early join %v: %v", d, err)
		}
		if e.EarlyJoin != d {
			t.Fatalf("early join %v after patching %v", e.EarlyJoin, d)
		}
		return e
	}
	commit := patch(30 * time.Minute).DrawCommit
	if len(commit) != 64 {
		t.Fatalf("switching the pre-queue on commits to a seed: %q", commit)
	}
	if _, err := f.s.Enqueue(f.ctx, "pp", "a"); !errors.Is(err, ErrSalesNotStarted) {
		t.Fatalf("join an hour before the start, pre-queue 30 min: %v", err)
	}
	f.clock.Advance(35 * time.Minute) // 25 min before the start
	prequeued := func(user string) {
		t.Helper()
		if r := f.join("pp", user); r.State != StateWaiting || !r.PrequeuedUntil.Equal(start) {
			t.Fatalf("%s not pre-queued: %+v", user, r)
		}
	}
	prequeued("a")
	if e := patch(45 * time.Minute); e.DrawCommit != commit {
		t.Fatalf("lengthening replaced the committed seed: %s, was %s", e.DrawCommit, commit)
	}
	prequeued("b")
	// shortened to open 10 min before the start: new early joins wait for
	// it; those already in stay
	if e := patch(10 * time.Minute); e.DrawCommit != commit {
		t.Fatalf("shortening replaced the committed seed")
	}
	if _, err := f.s.Enqueue(f.ctx, "pp", "c"); !errors.Is(err, ErrSalesNotStarted) {
		t.Fatalf("join before the shortened pre-queue opens: %v", err)
	}
	if e := patch(0); e.DrawCommit != commit {
		t.Fatalf("switching off replaced the committed seed")
	}
	for _, u := range []string{"a", "b"} {
		st, err := f.s.Position(f.ctx, "pp", u)
		if err != nil || st.State != StateWaiting || !st.SalesStart.Equal(start) {
			t.Fatalf("%s after the pre-queue was switched off: %+v %v", u, st, err)
		}
	}
	for _, bad := range []time.Duration{-time.Second, MaxEarlyJoin + time.Second} {
		if _, err := f.s.UpdateEvent(f.ctx, "pp", EventUpdate{EarlyJoin: &bad}); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("early join %v: %v, want ErrInvalidArgument", bad, err)
		}
	}

	f.clock.Advance(start.Sub(f.clock.Now()))
	if r := f.join("pp", "c"); r.State != StateWaiting || !r.PrequeuedUntil.IsZero() || r.Position != 3 {
		t.Fatalf("a join after the start is queued behind the pre-queue: %+v", r)
	}
	if res, err := f.s.Promote(f.ctx, "pp", 0); err != nil || res.Reason != "draw_pending" {
		t.Fatalf("the pre-queue switched off before the start is still drawn: %+v %v", res, err)
	}
	d, err := f.s.CloseDraw(f.ctx, "pp")
	if err != nil || d.Count != 2 || d.Commit != commit {
		t.Fatalf("draw: %+v %v (commit %s)", d, err, commit)
	}
	if err := f.s.MarkDrawn(f.ctx, "pp"); err != nil {
		t.Fatal(err)
	}
	res, err := f.s.Promote(f.ctx, "pp", 0)
	if err != nil || len(res.Promoted) != 3 {
		t.Fatalf("promote: %+v %v", res, err)
	}
	salt, _ := f.s.FairSalt(f.ctx, "pp")
	want, err := DrawOrder(d.Seed, commit, salt, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "c")
	for i, a := range res.Promoted {
		if a.UserID != want[i] {
			t.Fatalf("admitted %s at %d, the committed draw says %v", a.UserID, i, want)
		}
	}
}

// The challenge setting: "pow" or "none" at creation (anything else
// refused), patchable both ways, read alone by EventChallenge, and part of
// the definition a retried create must repeat.
func TestChallengeSetting(t *testing.T) {
	f := newFixture(t)
	e := f.event(EventConfig{ID: "ch", Challenge: ChallengePoW})
	if e.Challenge != ChallengePoW {
		t.Fatalf("created with pow: %q", e.Challenge)
	}
	if e := f.event(EventConfig{ID: "plain"}); e.Challenge != ChallengeNone {
		t.Fatalf("default challenge: %q", e.Challenge)
	}
	if _, err := f.s.CreateEvent(f.ctx, EventConfig{ID: "bad", Rows: 1, SeatsPerRow: 1, Challenge: "captcha"}); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("challenge captcha at creation: %v", err)
	}
	if _, err := f.s.CreateEvent(f.ctx, EventConfig{ID: "ch", Rows: 2, SeatsPerRow: 5, Capacity: 2, Challenge: ChallengePoW}); err != nil {
		t.Fatalf("retried create: %v", err)
	}
	if _, err := f.s.CreateEvent(f.ctx, EventConfig{ID: "ch", Rows: 2, SeatsPerRow: 5, Capacity: 2}); !errors.Is(err, ErrEventExists) {
		t.Fatalf("create without the challenge over one with it: %v", err)
	}
	check := func(want string) {
		t.Helper()
		if got, err := f.s.EventChallenge(f.ctx, "ch"); err != nil || got != want {
			t.Fatalf("EventChallenge = %q %v, want %q", got, err, want)
		}
		if e, _ := f.s.GetEvent(f.ctx, "ch"); e.Challenge != want {
			t.Fatalf("GetEvent challenge %q, want %q", e.Challenge, want)
		}
	}
	check(ChallengePoW)
	for _, v := range []string{ChallengeNone, ChallengePoW, ""} {
		if _, err := f.s.UpdateEvent(f.ctx, "ch", EventUpdate{Challenge: &v}); err != nil {
			t.Fatal(err)
		}
		want := v
		if v == "" {
			want = ChallengeNone
		}
		check(want)
	}
	bogus := "hcaptcha"
	if _, err := f.s.UpdateEvent(f.ctx, "ch", EventUpdate{Challenge: &bogus}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("patch challenge %q: %v", bogus, err)
	}
	if _, err := f.s.EventChallenge(f.ctx, "nope"); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("EventChallenge of a missing event: %v", err)
	}
}

// cutAfterCreate is a connection that breaks right after create_event
// ran: every later command fails, as when the process creating the event
// dies there.
type cutAfterCreate struct{ cut atomic.Bool }

func (h *cutAfterCreate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cutAfterCreate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.cut.Load() {
			cmd.SetErr(errConnectionCut)
			return errConnectionCut
		}
		err := next(ctx, cmd)
		if args := cmd.Args(); err == nil && len(args) > 1 && args[0] == "fcall" && args[1] == scriptCreateEvent.fn {
			h.cut.Store(true)
		}
		return err
	}
}
func (h *cutAfterCreate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

var errConnectionCut = errors.New("connection cut")

// A create cut off right after its script leaves the event whole, its
// door, sales window and waitlist settings with it: no join finds it
// open to anyone without the challenge or the rate cap, or pre-queues
// without a committed draw, however long until someone retries.
func TestCreateEventIsOneStep(t *testing.T) {
	f := newFixture(t)
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	cut := &cutAfterCreate{}
	rdb.AddHook(cut)
	s := New(rdb, WithPrefix(f.s.prefix), WithClock(f.clock.Now), WithAutoPipeline(0))
	t.Cleanup(s.Close)
	start := f.clock.Now().Add(time.Hour).Truncate(time.Second)
	refundable := start.Add(48 * time.Hour)
	cfg := EventConfig{ID: "evt", Rows: 2, SeatsPerRow: 5, Capacity: 2, SalesStart: start,
		AdmitPerMinute: 600, EarlyJoin: 30 * time.Minute, Challenge: ChallengePoW, NoOrphanRule: true,
		HoldsEndWithSale: true, RefundableUntil: refundable, OfferTime: 5 * time.Minute, WaitlistEarly: true,
		OnPhaseChange: PhaseChangeLeave}
	if _, err := s.CreateEvent(f.ctx, cfg); !errors.Is(err, errConnectionCut) {
		t.Fatalf("create cut after its script: %v", err)
	}
	if !cut.cut.Load() {
		t.Fatal("create_event never ran")
	}
	e, err := f.s.GetEvent(f.ctx, "evt")
	if err != nil {
		t.Fatal(err)
	}
	if e.AdmitPerMinute != 600 || e.EarlyJoin != 30*time.Minute || len(e.DrawCommit) != 64 || e.Challenge != ChallengePoW ||
		!e.NoOrphanRule || e.FinishAfterEnd || !e.RefundableUntil.Equal(refundable) || e.OfferSeconds != 300 ||
		!e.WaitlistEarly || e.OnPhaseChange != PhaseChangeLeave {
		t.Fatalf("the event a cut create left: %+v", e)
	}
	// the retry registers it and answers the same event
	again, err := f.s.CreateEvent(f.ctx, cfg)
	if err != nil || again.DrawCommit != e.DrawCommit {
		t.Fatalf("retry: %+v %v (commit was %s)", again, err, e.DrawCommit)
	}
}
