package booking

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func intp(n int) *int { return &n }

// A schedule makes the phase Redis's clock says current, with its
// audience and settings, once per boundary (a second call changes
// nothing); a gap closes joins; with on_phase_change leave the users
// waiting when a phase ends are told phase_ended and the room keeps its
// holds.
func TestApplySchedule(t *testing.T) {
	defer func(n int) { LeaveStep = n }(LeaveStep)
	LeaveStep = 2
	f := newFixture(t)
	cfg := EventConfig{ID: "sch", Capacity: 1, Sections: []Section{
		{Name: "floor", Rows: 1, SeatsPerRow: 4, PriceCents: 5000},
		{Name: "balcony", Rows: 1, SeatsPerRow: 4, PriceCents: 3000}}}
	f.event(cfg)
	now := f.clock.Now()
	club := Phase{ID: "fanclub", Name: "Fan club", StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
		Audience: AudienceCode, Prices: map[string]int64{"floor": 4000}, OrderLimit: intp(2), AdmitPerMinute: intp(30)}
	general := Phase{ID: "general", Name: "General sale", StartsAt: now.Add(2 * time.Hour), EndsAt: now.Add(3 * time.Hour),
		Audience: AudiencePublic}
	sch := Schedule{OnPhaseChange: PhaseChangeLeave, Phases: []Phase{club, general}}
	if err := CheckSchedule(cfg, &sch); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetSchedule(f.ctx, cfg, sch, 0); err != nil {
		t.Fatal(err)
	}
	if st, err := f.s.ApplySchedule(f.ctx, "sch", false); err != nil || !st.Changed || !st.Due || st.Next.Phase != "fanclub" {
		t.Fatalf("check: %+v %v", st, err)
	}
	if e, _ := f.s.GetEvent(f.ctx, "sch"); e.Phase != "" {
		t.Fatalf("a check changed the phase: %q", e.Phase)
	}
	st, err := f.s.ApplySchedule(f.ctx, "sch", true)
	if err != nil || !st.Changed || st.Slot != "p1" || st.Next != (PhaseState{"fanclub", AudienceCode}) || st.Previous.Phase != "" {
		t.Fatalf("apply: %+v %v", st, err)
	}
	if again, err := f.s.ApplySchedule(f.ctx, "sch", true); err != nil || again.Changed || again.Due || again.Slot != "p1" {
		t.Fatalf("a second apply: %+v %v", again, err)
	}
	e, _ := f.s.GetEvent(f.ctx, "sch")
	if e.Audience != AudienceCode || e.MaxSeatsPerOrder != 2 || e.AdmitPerMinute != 30 {
		t.Fatalf("the phase's settings: %+v", e)
	}
	// an operator's manual change stands within the slot
	if _, _, err := f.s.SetPhase(f.ctx, "sch", PhaseState{Phase: "fanclub", Audience: AudiencePublic}); err != nil {
		t.Fatal(err)
	}
	if again, _ := f.s.ApplySchedule(f.ctx, "sch", true); again.Changed {
		t.Fatalf("the schedule undid a manual change: %+v", again)
	}
	f.join("sch", "inroom")
	f.join("sch", "waiter")
	f.join("sch", "waiter2")
	f.join("sch", "waiter3")
	if f.state("sch", "inroom") != StateActive || f.state("sch", "waiter") != StateWaiting {
		t.Fatal("setup")
	}
	if _, err := f.s.LockSeat(f.ctx, "sch", "inroom", "A1"); err != nil {
		t.Fatal(err)
	}
	if h, err := f.s.InitiatePayment(f.ctx, "sch", "inroom", "pay1"); err != nil || h.AmountCents != 4000 {
		t.Fatalf("the presale's price: %+v %v", h, err)
	}
	// the presale has ended: the gap before the general sale
	f.clock.Advance(90 * time.Minute)
	st, err = f.s.ApplySchedule(f.ctx, "sch", true)
	if err != nil || !st.Changed || st.Slot != "g2" || st.Next != (PhaseState{"", AudienceClosed}) {
		t.Fatalf("the gap: %+v %v", st, err)
	}
	// two at a time: the first two left with the change, the third is left
	if !st.Leaving || f.state("sch", "waiter") != StatePhaseEnded || f.state("sch", "waiter2") != StatePhaseEnded ||
		f.state("sch", "waiter3") != StateWaiting || f.state("sch", "inroom") != StatePaymentPending {
		t.Fatalf("leave: %+v, waiter %s, waiter3 %s, inroom %s", st, f.state("sch", "waiter"), f.state("sch", "waiter3"), f.state("sch", "inroom"))
	}
	if check, _ := f.s.ApplySchedule(f.ctx, "sch", false); !check.Leaving || check.Due {
		t.Fatalf("a check while users are left: %+v", check)
	}
	if more, err := f.s.LeaveQueue(f.ctx, "sch"); err != nil || more || f.state("sch", "waiter3") != StatePhaseEnded {
		t.Fatalf("the rest: %v %v %s", more, err, f.state("sch", "waiter3"))
	}
	if more, err := f.s.LeaveQueue(f.ctx, "sch"); err != nil || more {
		t.Fatalf("nothing left: %v %v", more, err)
	}
	if f.counts("sch").Waiting != 0 {
		t.Fatal("the queue kept users of the phase that ended")
	}
	if _, err := f.s.Enqueue(f.ctx, "sch", "gapfan"); !errors.Is(err, ErrPhaseClosed) {
		t.Fatalf("a join between phases: %v", err)
	}
	// the general sale: its own prices (the event's), open to all
	f.clock.Advance(time.Hour)
	st, err = f.s.ApplySchedule(f.ctx, "sch", true)
	if err != nil || !st.Changed || st.Slot != "p2" || st.Next != (PhaseState{"general", AudiencePublic}) || st.Previous.Audience != AudienceClosed {
		t.Fatalf("the general sale: %+v %v", st, err)
	}
	if e, _ := f.s.GetEvent(f.ctx, "sch"); e.MaxSeatsPerOrder != DefaultMaxSeatsPerOrder || e.AdmitPerMinute != 0 {
		t.Fatalf("the general sale's settings: %+v", e)
	}
	f.join("sch", "gapfan")
	if got := scheduleField(cfg, sch); !strings.Contains(got, "|4:4000,4:3000\ngeneral|") || !strings.HasSuffix(got, "|4:5000,4:3000") {
		t.Fatalf("the prices of each phase: %q", got)
	}
	if _, err := f.s.ApplySchedule(f.ctx, "nope", true); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
}

// A schedule that breaks a rule is refused with that rule's code.
func TestCheckScheduleRefusals(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	cfg := EventConfig{ID: "x", Sections: []Section{{Name: "floor", Rows: 1, SeatsPerRow: 2, PriceCents: 100}},
		SalesStart: now, SalesEnd: now.Add(10 * time.Hour)}
	p := func(id string, from, to int) Phase {
		return Phase{ID: id, StartsAt: now.Add(time.Duration(from) * time.Hour), EndsAt: now.Add(time.Duration(to) * time.Hour), Audience: AudiencePublic}
	}
	withPrice := p("a", 0, 1)
	withPrice.Prices = map[string]int64{"stalls": 1}
	badHold := p("a", 0, 1)
	badHold.HoldSeconds = intp(0)
	badLimit := p("a", 0, 1)
	badLimit.OrderLimit = intp(0)
	for code, s := range map[string]Schedule{
		SchedOverlap:        {Phases: []Phase{p("a", 0, 2), p("b", 1, 3)}},
		SchedOrder:          {Phases: []Phase{p("a", 2, 3), p("b", 0, 1)}},
		SchedDuplicate:      {Phases: []Phase{p("a", 0, 1), p("a", 1, 2)}},
		SchedOutsideSales:   {Phases: []Phase{p("a", 9, 11)}},
		SchedUnknownSection: {Phases: []Phase{withPrice}},
		SchedInvalid:        {Phases: []Phase{badHold}},
		SchedOnPhaseChange:  {OnPhaseChange: "stay", Phases: []Phase{p("a", 0, 1)}},
	} {
		err := CheckSchedule(cfg, &s)
		if se, ok := IsScheduleError(err); !ok || se.Code != code || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v", code, err)
		}
	}
	early := p("a", 1, 2)
	early.EarlyJoinSeconds = intp(600)
	if se, ok := IsScheduleError(CheckSchedule(cfg, &Schedule{Phases: []Phase{early}})); !ok || se.Code != SchedInvalid {
		t.Errorf("a pre-queue before a phase the sale does not start with: %v", se)
	}
	early = p("a", 0, 1)
	early.EarlyJoinSeconds = intp(600)
	if err := CheckSchedule(cfg, &Schedule{Phases: []Phase{early}}); err != nil {
		t.Errorf("a pre-queue before the sale's first phase: %v", err)
	}
	s := Schedule{Phases: []Phase{badLimit}}
	if se, ok := IsScheduleError(CheckSchedule(cfg, &s)); !ok || se.Code != SchedInvalid {
		t.Errorf("order_limit 0: %v", se)
	}
	ok := Schedule{Phases: []Phase{p("a", 0, 1), p("b", 1, 2)}}
	if err := CheckSchedule(cfg, &ok); err != nil || ok.OnPhaseChange != PhaseChangeKeep {
		t.Fatalf("back-to-back phases: %v", err)
	}
}

// A waiting user taken out of the queue at a phase's end (on_phase_change
// leave) leaves a cancelled outbox entry from FromPhaseEnded with their
// join's sequence, written with the state change, so the announcer
// publishes booking_cancelled (reason phase_ended) and tells the user;
// a user in the room and a pre-queued user of the next phase get none.
func TestPhaseEndLeaveIsAnnounced(t *testing.T) {
	defer func(n int) { LeaveStep = n }(LeaveStep)
	LeaveStep = 1
	f := newFixture(t)
	cfg := EventConfig{ID: "lv", Capacity: 1, Sections: []Section{{Name: "floor", Rows: 1, SeatsPerRow: 4, PriceCents: 5000}}}
	f.event(cfg)
	now := f.clock.Now()
	sch := Schedule{OnPhaseChange: PhaseChangeLeave, Phases: []Phase{
		{ID: "first", StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Audience: AudiencePublic},
		{ID: "second", StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), Audience: AudiencePublic}}}
	if err := CheckSchedule(cfg, &sch); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetSchedule(f.ctx, cfg, sch, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ApplySchedule(f.ctx, "lv", true); err != nil {
		t.Fatal(err)
	}
	f.join("lv", "inroom")
	seqs := map[string]int64{"w1": f.join("lv", "w1").Sequence, "w2": f.join("lv", "w2").Sequence}
	ack := func() {
		entries, err := f.s.Outbox(f.ctx, "lv", 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.s.AckOutbox(f.ctx, "lv", entries...); err != nil {
			t.Fatal(err)
		}
	}
	ack()
	f.clock.Advance(time.Hour)
	st, err := f.s.ApplySchedule(f.ctx, "lv", true)
	if err != nil || !st.Leaving {
		t.Fatalf("apply: %+v %v", st, err)
	}
	for more := st.Leaving; more; {
		if more, err = f.s.LeaveQueue(f.ctx, "lv"); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := f.s.Outbox(f.ctx, "lv", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, e := range entries {
		if e.Kind != KindCancelled || e.From != FromPhaseEnded || e.At.IsZero() {
			t.Fatalf("an entry other than the leave's: %+v", e)
		}
		got[e.UserID] = e.Sequence
	}
	if len(got) != 2 || got["w1"] != seqs["w1"] || got["w2"] != seqs["w2"] {
		t.Fatalf("leave entries %v, want %v", got, seqs)
	}
	ack()
	if more, err := f.s.LeaveQueue(f.ctx, "lv"); err != nil || more {
		t.Fatalf("nothing left: %v %v", more, err)
	}
	if entries, _ := f.s.Outbox(f.ctx, "lv", 0); len(entries) != 0 {
		t.Fatalf("a second leave call wrote %+v", entries)
	}
}

// on_phase_change is an event setting: given at creation (a bad value
// refused), changed by UpdateEvent (validated), read by GetEvent as the
// config's phase_leave that apply_schedule reads.
func TestOnPhaseChangeSetting(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{ID: "opc", Rows: 1, SeatsPerRow: 2, OnPhaseChange: PhaseChangeLeave})
	if e, _ := f.s.GetEvent(f.ctx, "opc"); e.OnPhaseChange != PhaseChangeLeave {
		t.Fatalf("created with leave: %q", e.OnPhaseChange)
	}
	if _, err := f.s.CreateEvent(f.ctx, EventConfig{ID: "opc2", Rows: 1, SeatsPerRow: 2, OnPhaseChange: "stay"}); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("a bad setting at creation: %v", err)
	}
	bad := "stay"
	if _, err := f.s.UpdateEvent(f.ctx, "opc", EventUpdate{OnPhaseChange: &bad}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a bad setting: %v", err)
	}
	keep := PhaseChangeKeep
	if _, err := f.s.UpdateEvent(f.ctx, "opc", EventUpdate{OnPhaseChange: &keep}); err != nil {
		t.Fatal(err)
	}
	if e, _ := f.s.GetEvent(f.ctx, "opc"); e.OnPhaseChange != PhaseChangeKeep {
		t.Fatalf("updated to keep: %q", e.OnPhaseChange)
	}
}
