package booking

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// phasePrequeueFixture is an event with a registered presale running now
// and a public general sale an hour later whose pre-queue opens half an
// hour before it (early_join_seconds 1800), the presale applied; fans
// selected for the presale are selected.
func phasePrequeueFixture(t *testing.T, id string, leave bool, selected ...string) (*fixture, EventConfig, time.Time) {
	t.Helper()
	f := newFixture(t)
	cfg := EventConfig{ID: id, Capacity: 500, Sections: []Section{{Name: "floor", Rows: 10, SeatsPerRow: 100, PriceCents: 5000}}}
	f.event(cfg)
	now := f.clock.Now().Truncate(time.Second)
	general := now.Add(time.Hour)
	sch := Schedule{Phases: []Phase{
		{ID: "presale", StartsAt: now.Add(-time.Hour), EndsAt: general, Audience: AudienceRegistered},
		{ID: "general", StartsAt: general, EndsAt: now.Add(3 * time.Hour), Audience: AudiencePublic, EarlyJoinSeconds: intp(1800)}}}
	if leave {
		sch.OnPhaseChange = PhaseChangeLeave
	}
	if err := CheckSchedule(cfg, &sch); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetSchedule(f.ctx, cfg, sch, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ApplySchedule(f.ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if err := f.s.MarkSelected(f.ctx, id, selected); err != nil {
		t.Fatal(err)
	}
	return f, cfg, general
}

// drawPhase closes, places and marks the pending later phase's draw as
// the promoter does (admission.Promoter.publishDraw).
func (f *fixture) drawPhase(event string) PhaseDraw {
	f.t.Helper()
	d, ok, err := f.s.ClosePhaseDraw(f.ctx, event)
	if err != nil || !ok {
		f.t.Fatalf("close phase draw: %+v %v %v", d, ok, err)
	}
	if err := f.s.MarkPhaseDrawn(f.ctx, event, d.Phase); err != nil {
		f.t.Fatal(err)
	}
	// a second promoter that drew it too: nothing changes
	if err := f.s.MarkPhaseDrawn(f.ctx, event, d.Phase); err != nil {
		f.t.Fatalf("a repeated mark: %v", err)
	}
	if err := f.s.MarkPhaseDrawn(f.ctx, event, "nope"); !errors.Is(err, ErrInvalidArgument) {
		f.t.Fatalf("marking a phase without a pending draw: %v", err)
	}
	return d
}

// A later phase's pre-queue: fans the running presale refuses and the
// general sale admits join it in its window, are not admitted in the
// presale, keep their rank when they retry, may cancel and join again
// (pre-queued again before the start; after the close, behind the later
// joiners, the closed list keeping them unplaced);
// at the general sale's start they are drawn (the order recomputed from
// the revealed seed, the salt and the closed list) and admitted after
// the presale's users still waiting and before everyone who joined after
// the start, including a join that saw the start before the schedule
// was applied.
func TestPhasePrequeueDraw(t *testing.T) {
	f, _, general := phasePrequeueFixture(t, "lpq", false, "sel0", "mover1", "mover2", "mover3", "late0")
	d0, err := f.s.DrawInputs(f.ctx, "lpq", "general")
	if err != nil || len(d0.Commit) != 64 || d0.Seed != "" {
		t.Fatalf("before the window: the commitment is published, the seed secret: %+v %v", d0, err)
	}
	if first, _ := f.s.DrawInputs(f.ctx, "lpq", ""); !slices.Equal(first.Phases, []string{"general"}) {
		t.Fatalf("the first draw's document lists the phases with a draw: %v", first.Phases)
	}
	if _, err := f.s.DrawInputs(f.ctx, "lpq", "presale"); !errors.Is(err, ErrNoPhaseDraw) {
		t.Fatalf("a phase without a pre-queue: %v", err)
	}
	// before the window: the presale refuses a fan it did not select
	if _, err := f.s.Enqueue(f.ctx, "lpq", "fan0"); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("a join before the window: %v", err)
	}
	if r := f.join("lpq", "sel0"); r.State != StateActive {
		t.Fatalf("a selected fan is admitted at once: %+v", r)
	}
	f.clock.Advance(31 * time.Minute)
	const n = 60
	fans := make([]string, n)
	seqs := map[string]int64{}
	for i := range n {
		fans[i] = "fan" + strconv.Itoa(i)
		r := f.join("lpq", fans[i])
		if r.State != StateWaiting || r.Position != 0 || !r.Created || !r.PrequeuedUntil.Equal(general) {
			t.Fatalf("pre-queued join: %+v", r)
		}
		seqs[fans[i]] = r.Sequence
	}
	// a selected fan joins the presale's queue as before
	if _, err := f.s.UpdateEvent(f.ctx, "lpq", EventUpdate{Paused: new(true)}); err != nil {
		t.Fatal(err)
	}
	for i, u := range []string{"mover1", "mover2", "mover3"} {
		if r := f.join("lpq", u); r.State != StateWaiting || r.Position != int64(i+1) || !r.PrequeuedUntil.IsZero() {
			t.Fatalf("a presale join: %+v", r)
		}
	}
	// a retry changes nothing
	if r := f.join("lpq", "fan3"); r.Created || r.Sequence != seqs["fan3"] || r.Position != 0 || !r.PrequeuedUntil.Equal(general) {
		t.Fatalf("a retried pre-queued join: %+v", r)
	}
	st, err := f.s.Position(f.ctx, "lpq", "fan5")
	if err != nil || st.State != StateWaiting || st.Position != 0 || !st.SalesStart.Equal(general) || st.Sequence != seqs["fan5"] {
		t.Fatalf("pre-queued position: %+v %v", st, err)
	}
	if c := f.counts("lpq"); c.Waiting != 3 {
		t.Fatalf("the pre-queue is not in the presale's queue: %+v", c)
	}
	// not admitted in the presale
	if _, err := f.s.UpdateEvent(f.ctx, "lpq", EventUpdate{Paused: new(false)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Cancel(f.ctx, "lpq", "mover3"); err != nil {
		t.Fatal(err)
	}
	if res, err := f.s.Promote(f.ctx, "lpq", 0); err != nil || len(res.Promoted) != 2 || res.Reason != "no_waiting" {
		t.Fatalf("promotion in the presale: %+v %v", res, err)
	}
	if _, err := f.s.UpdateEvent(f.ctx, "lpq", EventUpdate{Paused: new(true)}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"mover1", "mover2"} {
		if _, err := f.s.Cancel(f.ctx, "lpq", u); err != nil {
			t.Fatal(err)
		}
		if r := f.join("lpq", u); r.State != StateWaiting {
			t.Fatalf("a presale join: %+v", r)
		}
	}
	// a pre-queued fan cancels (and is out), another cancels and joins again
	c, err := f.s.Cancel(f.ctx, "lpq", "fan7")
	if err != nil || c.From != "queue" || c.Sequence != seqs["fan7"] {
		t.Fatalf("cancel a pre-queued fan: %+v %v", c, err)
	}
	if st := f.state("lpq", "fan7"); st != StateCancelled {
		t.Fatalf("cancelled: %s", st)
	}
	if _, err := f.s.Cancel(f.ctx, "lpq", "fan8"); err != nil {
		t.Fatal(err)
	}
	if r := f.join("lpq", "fan8"); !r.Created || r.Position != 0 || r.Sequence <= seqs["fan8"] || !r.PrequeuedUntil.Equal(general) {
		t.Fatalf("a pre-queued fan joins again: %+v", r)
	}
	f.checkInvariants("lpq")
	if e, _ := f.s.GetEvent(f.ctx, "lpq"); e.PhasePrequeued != n-1 {
		t.Fatalf("the event counts %d fans in the general sale's pre-queue", e.PhasePrequeued)
	}
	in, _ := f.s.DrawInputs(f.ctx, "lpq", "general")
	if in.Prequeued != n-1 || in.Seed != "" {
		t.Fatalf("the open pre-queue: %+v", in)
	}

	// the general sale starts; a join sees it before the schedule is
	// applied (the presale's audience still applies): it closes the
	// pre-queue and ranks after it
	f.clock.Advance(general.Sub(f.clock.Now()))
	late := []string{"late0"}
	for _, u := range late {
		if r := f.join("lpq", u); r.State != StateWaiting || r.Position < 2+n-1 {
			t.Fatalf("a join after the start is not behind the pre-queue: %+v", r)
		}
	}
	if _, err := f.s.UpdateEvent(f.ctx, "lpq", EventUpdate{Paused: new(false)}); err != nil {
		t.Fatal(err)
	}
	if res, err := f.s.Promote(f.ctx, "lpq", 0); err != nil || len(res.Promoted) != 0 || res.Reason != "draw_pending" {
		t.Fatalf("promotion before the draw: %+v %v", res, err)
	}
	if st, err := f.s.ApplySchedule(f.ctx, "lpq", true); err != nil || st.Next.Phase != "general" {
		t.Fatalf("apply: %+v %v", st, err)
	}
	for _, u := range []string{"late1", "late2"} {
		if r := f.join("lpq", u); r.State != StateWaiting || r.Position < 2+n {
			t.Fatalf("a join after the apply: %+v", r)
		}
		late = append(late, u)
	}
	if st, err := f.s.Position(f.ctx, "lpq", "fan9"); err != nil || st.Position != 0 || !st.SalesStart.Equal(general) {
		t.Fatalf("a pre-queued fan before the draw: %+v %v", st, err)
	}
	// a fan of the closed list cancels before the draw and joins again:
	// the list keeps them (its digest is fixed), the draw does not place
	// them, their new join ranks after the later joiners
	if c, err := f.s.Cancel(f.ctx, "lpq", "fan11"); err != nil || c.From != "queue" || c.Sequence != seqs["fan11"] {
		t.Fatalf("cancel from the closed list: %+v %v", c, err)
	}
	if r := f.join("lpq", "fan11"); !r.Created || r.State != StateWaiting || !r.PrequeuedUntil.IsZero() {
		t.Fatalf("joining again after the start: %+v", r)
	}
	late = append(late, "fan11")
	f.checkInvariants("lpq")
	d := f.drawPhase("lpq")
	f.checkInvariants("lpq")
	if d.Phase != "general" || d.Count != n-1 || d.Commit != d0.Commit {
		t.Fatalf("draw: %+v", d)
	}
	in, err = f.s.DrawInputs(f.ctx, "lpq", "general")
	if err != nil || in.Seed != d.Seed || in.Digest != d.Digest || in.Count != n-1 || in.Base != d.Base {
		t.Fatalf("the drawn inputs: %+v %v", in, err)
	}
	// the closed list: everyone who was in the pre-queue at the start
	// (fan7 cancelled before: out; fan8 joined again: once)
	closed := slices.DeleteFunc(slices.Clone(fans), func(u string) bool { return u == "fan7" })
	salt, err := f.s.FairSalt(f.ctx, "lpq")
	if err != nil {
		t.Fatal(err)
	}
	want, err := DrawOrder(d.Seed, d.Commit, salt, closed)
	if err != nil || len(want) != n-1 {
		t.Fatal(len(want), err)
	}
	var order []string
	for range 10 {
		res, err := f.s.Promote(f.ctx, "lpq", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range res.Promoted {
			order = append(order, a.UserID)
			if s, ok := seqs[a.UserID]; ok && a.UserID != "fan8" && a.UserID != "fan11" && a.Sequence != s {
				t.Fatalf("%s admitted with sequence %d, joined as %d", a.UserID, a.Sequence, s)
			}
		}
		if res.Reason == "no_waiting" {
			break
		}
	}
	drawn := slices.DeleteFunc(slices.Clone(want), func(u string) bool { return u == "fan11" })
	wantAll := append(append([]string{"mover1", "mover2"}, drawn...), late...)
	if !slices.Equal(order, wantAll) {
		t.Fatalf("admission order\n%v\nwant\n%v", order, wantAll)
	}
	list, err := f.s.DrawList(f.ctx, "lpq", "general", 0, n+1)
	if err != nil || len(list) != n-1 {
		t.Fatalf("the draw's list: %d %v", len(list), err)
	}
	for i, u := range want {
		if list[i] != fairness.UserHash(salt, u) {
			t.Fatalf("the draw's list %d is not %s", i, u)
		}
	}
	f.checkInvariants("lpq")
	if res, _ := f.s.Promote(f.ctx, "lpq", 0); res.Reason == "draw_pending" {
		t.Fatal("the draw is still pending")
	}
}

// With on_phase_change leave, the presale's end takes its waiting users
// out and leaves the general sale's pre-queue alone; the general sale's
// end takes its drawn users out with their own join sequences.
func TestPhasePrequeueLeave(t *testing.T) {
	f, _, general := phasePrequeueFixture(t, "lpl", true, "sel0", "w1")
	if _, err := f.s.UpdateEvent(f.ctx, "lpl", EventUpdate{Paused: new(true)}); err != nil {
		t.Fatal(err)
	}
	w1 := f.join("lpl", "w1")
	f.clock.Advance(31 * time.Minute)
	seqs := map[string]int64{}
	for _, u := range []string{"fan0", "fan1", "fan2"} {
		seqs[u] = f.join("lpl", u).Sequence
	}
	f.clock.Advance(general.Sub(f.clock.Now()))
	st, err := f.s.ApplySchedule(f.ctx, "lpl", true)
	if err != nil || st.Next.Phase != "general" {
		t.Fatalf("apply: %+v %v", st, err)
	}
	for more := st.Leaving; more; {
		if more, err = f.s.LeaveQueue(f.ctx, "lpl"); err != nil {
			t.Fatal(err)
		}
	}
	if s := f.state("lpl", "w1"); s != StatePhaseEnded {
		t.Fatalf("a presale waiter at its end: %s", s)
	}
	d := f.drawPhase("lpl")
	if d.Count != 3 {
		t.Fatalf("draw: %+v", d)
	}
	for u := range seqs {
		if st, err := f.s.Position(f.ctx, "lpl", u); err != nil || st.State != StateWaiting || st.Position < 1 || st.Sequence != seqs[u] {
			t.Fatalf("%s after the draw: %+v %v", u, st, err)
		}
	}
	if c := f.counts("lpl"); c.Waiting != 3 {
		t.Fatalf("the drawn users wait: %+v", c)
	}
	entries, err := f.s.Outbox(f.ctx, "lpl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.AckOutbox(f.ctx, "lpl", entries...); err != nil {
		t.Fatal(err)
	}
	// the general sale ends: its drawn users leave, each announced with
	// the sequence of their own join
	f.clock.Advance(2*time.Hour + time.Second)
	st, err = f.s.ApplySchedule(f.ctx, "lpl", true)
	if err != nil {
		t.Fatal(err)
	}
	for more := st.Leaving; more; {
		if more, err = f.s.LeaveQueue(f.ctx, "lpl"); err != nil {
			t.Fatal(err)
		}
	}
	entries, err = f.s.Outbox(f.ctx, "lpl", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, e := range entries {
		if e.Kind == KindCancelled && e.From == FromPhaseEnded {
			got[e.UserID] = e.Sequence
		}
	}
	if len(got) != 3 || got["fan0"] != seqs["fan0"] || got["fan1"] != seqs["fan1"] || got["fan2"] != seqs["fan2"] || got["w1"] != 0 {
		t.Fatalf("leave entries %v, want %v (w1 %d left at the presale's end)", got, seqs, w1.Sequence)
	}
}

// A later phase's pre-queue must open while the phase before runs or in
// the gap before it (one pre-queue open at a time); a phase without
// early_join_seconds has none.
func TestPhasePrequeueRefusals(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	cfg := EventConfig{ID: "x", Sections: []Section{{Name: "floor", Rows: 1, SeatsPerRow: 2, PriceCents: 100}}}
	p := func(id string, from, to int, early int) Phase {
		ph := Phase{ID: id, StartsAt: now.Add(time.Duration(from) * time.Hour), EndsAt: now.Add(time.Duration(to) * time.Hour),
			Audience: AudiencePublic}
		if early > 0 {
			ph.EarlyJoinSeconds = intp(early)
		}
		return ph
	}
	bad := Schedule{Phases: []Phase{p("a", 0, 1, 0), p("b", 2, 3, 3*3600)}}
	if se, ok := IsScheduleError(CheckSchedule(cfg, &bad)); !ok || se.Code != SchedPrequeue {
		t.Fatalf("a pre-queue opening before the phase before starts: %v", se)
	}
	ok := Schedule{Phases: []Phase{p("a", 0, 1, 0), p("b", 2, 3, 2*3600), p("c", 3, 4, 3600)}}
	if err := CheckSchedule(cfg, &ok); err != nil {
		t.Fatalf("pre-queues opening at the phase before's start: %v", err)
	}
}

// Redis's state of an event is lost while a later phase's pre-queue is
// open: the rebuild (restore_event, then the schedule written back)
// drops its fans as it drops waiting users, with nothing left of the
// old list, and a fan joining again is pre-queued for the phase anew.
func TestPhasePrequeueRestored(t *testing.T) {
	f, cfg, general := phasePrequeueFixture(t, "lpr", false)
	f.clock.Advance(31 * time.Minute)
	if r := f.join("lpr", "fan0"); !r.Created || r.PrequeuedUntil.IsZero() {
		t.Fatalf("pre-queued: %+v", r)
	}
	k := f.s.eventKeys("lpr")
	if err := f.rdb.Del(f.ctx, k[kConfig]).Err(); err != nil {
		t.Fatal(err)
	}
	f.rebuilt(cfg)
	if n, _ := f.rdb.Exists(f.ctx, k[kPq], k[kPqdraw]).Result(); n != 0 {
		t.Fatalf("the old pre-queue's lists survived the rebuild: %d", n)
	}
	sch := Schedule{Phases: []Phase{
		{ID: "presale", StartsAt: general.Add(-2 * time.Hour), EndsAt: general, Audience: AudienceRegistered},
		{ID: "general", StartsAt: general, EndsAt: general.Add(2 * time.Hour), Audience: AudiencePublic, EarlyJoinSeconds: intp(1800)}}}
	if err := f.s.SetSchedule(f.ctx, cfg, sch, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ApplySchedule(f.ctx, "lpr", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Position(f.ctx, "lpr", "fan0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a pre-queued fan after the rebuild: %v", err)
	}
	if r := f.join("lpr", "fan0"); !r.Created || !r.PrequeuedUntil.Equal(general) {
		t.Fatalf("joining again after the rebuild: %+v", r)
	}
	f.seats("lpr") // (the rebuilt status string is made at its first read)
	f.checkInvariants("lpr")
	in, err := f.s.DrawInputs(f.ctx, "lpr", "general")
	if err != nil || in.Prequeued != 1 || len(in.Commit) != 64 {
		t.Fatalf("the rebuilt pre-queue: %+v %v", in, err)
	}
}

// A later phase for code holders: during the presale a fan whose code
// opens that phase is pre-queued for it (the code redeemed for that
// phase, once), a fan without one is refused as the presale refuses, and
// a code of no phase of the schedule is refused as before.
func TestPhasePrequeueWithCodes(t *testing.T) {
	f := newFixture(t)
	cfg := EventConfig{ID: "lpc", Capacity: 10, Sections: []Section{{Name: "floor", Rows: 1, SeatsPerRow: 20, PriceCents: 5000}}}
	f.event(cfg)
	now := f.clock.Now().Truncate(time.Second)
	club := now.Add(time.Hour)
	sch := Schedule{Phases: []Phase{
		{ID: "presale", StartsAt: now.Add(-time.Hour), EndsAt: club, Audience: AudienceRegistered},
		{ID: "club", StartsAt: club, EndsAt: club.Add(time.Hour), Audience: AudienceCode, EarlyJoinSeconds: intp(1800)}}}
	if err := CheckSchedule(cfg, &sch); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetSchedule(f.ctx, cfg, sch, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ApplySchedule(f.ctx, "lpc", true); err != nil {
		t.Fatal(err)
	}
	code := f.loadCode("lpc", "CLUB-1", CodeRecord{ID: 1, Phase: "club", Uses: 1})
	other := f.loadCode("lpc", "ELSE-1", CodeRecord{ID: 2, Phase: "elsewhere", Uses: 1})
	f.clock.Advance(31 * time.Minute)
	r, err := f.s.EnqueueCode(f.ctx, "lpc", "member", code)
	if err != nil || !r.Created || !r.PrequeuedUntil.Equal(club) || r.Code == nil || r.Code.Phase != "club" || r.Code.Use != 1 {
		t.Fatalf("a club code during the presale: %+v %v", r, err)
	}
	if r2, err := f.s.EnqueueCode(f.ctx, "lpc", "member", code); err != nil || r2.Created || r2.Sequence != r.Sequence || r2.Code != nil {
		t.Fatalf("a retry with the code: %+v %v", r2, err)
	}
	if _, err := f.s.Enqueue(f.ctx, "lpc", "nocode"); !errors.Is(err, ErrNotSelected) {
		t.Fatalf("no code during the presale: %v", err)
	}
	if _, err := f.s.EnqueueCode(f.ctx, "lpc", "stranger", other); !errors.Is(err, ErrCodeWrongPhase) {
		t.Fatalf("a code of another phase: %v", err)
	}
	if e, _ := f.s.GetEvent(f.ctx, "lpc"); e.PhasePrequeued != 1 {
		t.Fatalf("pre-queued: %d", e.PhasePrequeued)
	}
}

// A phase taken out of the schedule while its pre-queue is open keeps
// its promise to the fans in it: they stay pre-queued, and at the start
// the list was opened with it is closed and drawn with the seed whose
// commitment was published, its fans admitted in the draw's order.
func TestPhasePrequeueKeptWhenRemoved(t *testing.T) {
	f, cfg, general := phasePrequeueFixture(t, "lpr", false)
	commit, err := f.s.DrawInputs(f.ctx, "lpr", "general")
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(31 * time.Minute)
	fans := []string{"fan0", "fan1", "fan2", "fan3", "fan4"}
	for _, u := range fans {
		if r := f.join("lpr", u); r.State != StateWaiting || !r.PrequeuedUntil.Equal(general) {
			t.Fatalf("pre-queued join: %+v", r)
		}
	}
	// the general sale is taken out: the presale runs on to the end
	now := f.clock.Now().Truncate(time.Second)
	sch := Schedule{Phases: []Phase{{ID: "presale", StartsAt: now.Add(-2 * time.Hour), EndsAt: now.Add(3 * time.Hour), Audience: AudienceRegistered}}}
	if err := CheckSchedule(cfg, &sch); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetSchedule(f.ctx, cfg, sch, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ApplySchedule(f.ctx, "lpr", true); err != nil {
		t.Fatal(err)
	}
	for _, u := range fans {
		if st, err := f.s.Position(f.ctx, "lpr", u); err != nil || st.State != StateWaiting || st.Position != 0 || !st.SalesStart.Equal(general) {
			t.Fatalf("%s after the phase was taken out: %+v %v", u, st, err)
		}
	}
	f.clock.Advance(general.Sub(f.clock.Now()))
	if _, err := f.s.ApplySchedule(f.ctx, "lpr", true); err != nil {
		t.Fatal(err)
	}
	if res, err := f.s.Promote(f.ctx, "lpr", 0); err != nil || len(res.Promoted) != 0 || res.Reason != "draw_pending" {
		t.Fatalf("promotion at the old start: %+v %v", res, err)
	}
	d := f.drawPhase("lpr")
	if d.Phase != "general" || d.Count != int64(len(fans)) || d.Commit != commit.Commit {
		t.Fatalf("the removed phase's draw: %+v (published commitment %s)", d, commit.Commit)
	}
	salt, err := f.s.FairSalt(f.ctx, "lpr")
	if err != nil {
		t.Fatal(err)
	}
	want, err := DrawOrder(d.Seed, d.Commit, salt, fans)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.s.Promote(f.ctx, "lpr", 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, a := range res.Promoted {
		order = append(order, a.UserID)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("admitted %v, the draw says %v", order, want)
	}
	f.checkInvariants("lpr")
}
