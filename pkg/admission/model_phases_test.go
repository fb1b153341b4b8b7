package admission_test

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// The model's scheduled phases: every fourth event (a created one, not a
// rebuilt one) sells in three phases, a presale for access codes, a sale
// for the fans the registration selected and the general sale, with a
// gap before the last; each has its own price. Half of those events keep
// the waiting fans at a phase's end, the other half let them leave
// (on_phase_change). The gateway's tick (apply_schedule, then LeaveQueue
// while users are left) is a step of its own, taken at random like the
// others, so a boundary may pass with fans in the room, in the queue and
// joining; joins with codes (valid, used up, bound to another fan, for
// another phase, unknown) are another.

const (
	modelPhaseLen = 10 * time.Minute
	modelGap      = time.Minute
	modelPrice    = 5000 // the event's price, which the general sale keeps
)

// mSchedule is a scheduled event's phases and what Redis has applied.
type mSchedule struct {
	phases          []mPhase
	leave           bool
	slot            string // the slot last applied ("" none yet)
	phase, audience string
	codes           map[string]*mCode // digest -> code
	selected        map[string]bool   // the registration's selection
}

type mPhase struct {
	id, audience string
	from, to     int64 // ms
	price        int64
}

type mCode struct {
	phase      string // "" every phase
	uses, used int
	user       string
}

// scheduled reports whether the event being created sells in phases, and
// gives its config the price the phases override.
func (r *modelRun) scheduled(cfg *booking.EventConfig) bool {
	if r.events%4 != 3 {
		return false
	}
	cfg.PriceCents = modelPrice
	return true
}

// setPhases saves the schedule of the event just created (cfg), its codes
// and its registration's selection, into Redis and the model.
func (r *modelRun) setPhases(cfg booking.EventConfig) {
	now := r.now()
	at := func(d time.Duration) time.Time { return now.Add(d) }
	sch := booking.Schedule{OnPhaseChange: booking.PhaseChangeKeep, Phases: []booking.Phase{
		{ID: "presale", StartsAt: at(0), EndsAt: at(modelPhaseLen), Audience: booking.AudienceCode,
			Prices: map[string]int64{booking.DefaultSectionName: 3000}},
		{ID: "registered", StartsAt: at(modelPhaseLen), EndsAt: at(2 * modelPhaseLen), Audience: booking.AudienceRegistered,
			Prices: map[string]int64{booking.DefaultSectionName: 4000}},
		{ID: "general", StartsAt: at(2*modelPhaseLen + modelGap), EndsAt: at(4 * modelPhaseLen), Audience: booking.AudiencePublic}}}
	ms := &mSchedule{leave: r.events%8 == 7, codes: map[string]*mCode{}, selected: map[string]bool{"u1": true, "u3": true}}
	if ms.leave {
		sch.OnPhaseChange = booking.PhaseChangeLeave
	}
	for _, p := range sch.Phases {
		price := int64(modelPrice)
		if v, ok := p.Prices[booking.DefaultSectionName]; ok {
			price = v
		}
		ms.phases = append(ms.phases, mPhase{id: p.ID, audience: p.Audience, from: p.StartsAt.UnixMilli(), to: p.EndsAt.UnixMilli(), price: price})
	}
	def, err := booking.NormalizeEvent(cfg)
	if err != nil {
		r.fatalf("normalize: %v", err)
	}
	if err := booking.CheckSchedule(def, &sch); err != nil {
		r.fatalf("check schedule: %v", err)
	}
	if err := r.store.SetSchedule(r.ctx, def, sch, 0); err != nil {
		r.fatalf("set schedule: %v", err)
	}
	// codes: two single-use presale codes, one with three uses, one for
	// every phase, one for the registered sale
	var recs []booking.CodeRecord
	for i, c := range []mCode{{phase: "presale", uses: 1}, {phase: "presale", uses: 1}, {phase: "presale", uses: 3},
		{uses: 2}, {phase: "registered", uses: 1}} {
		d := modelDigest(i)
		recs = append(recs, booking.CodeRecord{ID: int64(i + 1), Digest: d, Phase: c.phase, Uses: c.uses})
		ms.codes[d] = &c
	}
	if err := r.store.LoadCodes(r.ctx, r.event, recs); err != nil {
		r.fatalf("load codes: %v", err)
	}
	if err := r.store.MarkSelected(r.ctx, r.event, []string{"u1", "u3"}); err != nil {
		r.fatalf("mark selected: %v", err)
	}
	r.m.sch = ms
	r.logf("schedule: presale, registered, gap, general; on_phase_change %s", sch.OnPhaseChange)
	r.phaseTick() // the presale is current at once, as the gateway applies a saved schedule
}

// modelDigest is the digest of the model's code i (32 hex digits), and
// i = -1 a digest no code has.
func modelDigest(i int) string { return fmt.Sprintf("%032x", 0xc0de00+i+1) }

// phaseGate mirrors j_join's checks of the phase, after sold out: a gap
// refuses every join; a code is redeemed whatever the audience (the last
// refusal); without one a code-only phase refuses and a registered one
// lets only the selected in. digest is the join's code ("" none).
func (m *model) phaseGate(name, digest string) error {
	s := m.sch
	if s == nil {
		return nil
	}
	if s.audience == booking.AudienceClosed {
		return booking.ErrPhaseClosed
	}
	if digest != "" {
		c := s.codes[digest]
		switch {
		case c == nil:
			return booking.ErrInvalidCode
		case c.phase != "" && c.phase != s.phase:
			return booking.ErrCodeWrongPhase
		case c.user != "" && c.user != name:
			return booking.ErrCodeTaken
		case c.used >= c.uses:
			return booking.ErrCodeUsedUp
		}
		c.used++
		c.user = name
		return nil
	}
	switch {
	case s.audience == booking.AudienceCode:
		return booking.ErrCodeRequired
	case s.audience == booking.AudienceRegistered && !s.selected[name]:
		return booking.ErrNotSelected
	}
	return nil
}

// applySchedule mirrors apply_schedule.lua at the model's time: the slot
// now, and when it is a new one the phase and audience it makes current;
// with leave, a phase's end takes every waiting user out of the queue
// (each joined at or below the sequence then), told phase_ended with a
// booking_cancelled fact. It answers whether the phase or audience
// changed and who left.
func (m *model) applySchedule() (changed bool, left []string) {
	s := m.sch
	slot, found := "", -1
	for i, p := range s.phases {
		if m.now < p.from {
			if i > 0 {
				slot = "g" + strconv.Itoa(i+1)
			}
			break
		}
		if m.now < p.to {
			slot, found = "p"+strconv.Itoa(i+1), i
			break
		}
		slot = "g" + strconv.Itoa(i+2)
	}
	if slot == s.slot || slot == "" {
		return false, nil
	}
	phase, aud := "", booking.AudienceClosed
	if found >= 0 {
		phase, aud = s.phases[found].id, s.phases[found].audience
	}
	changed = phase != s.phase || aud != s.audience
	if s.leave && s.phase != "" && phase != s.phase {
		for _, name := range m.waiting() {
			u := m.users[name]
			u.state, u.seen = booking.StatePhaseEnded, 0
			m.fact(events.TopicBookingCancelled, name, u.seq)
			left = append(left, name)
		}
	}
	s.slot, s.phase, s.audience = slot, phase, aud
	m.phase = phase // the sale's phase is a channel of every request (allocations)
	return changed, left
}

// price is the section's price the current phase charges (the event's
// outside a phase: a gap keeps the last phase's prices in the config).
func (s *mSchedule) price() int64 {
	for _, p := range s.phases {
		if p.id == s.phase {
			return p.price
		}
	}
	return -1
}

// phaseStep is one of the scheduled event's own steps: the gateway's
// tick, now and then after time has passed to the next boundary, or a
// join with an access code.
func (r *modelRun) phaseStep() {
	s := r.m.sch
	if s == nil {
		return
	}
	if r.rng.IntN(2) == 0 {
		r.joinCode()
		return
	}
	if r.rng.IntN(4) == 0 {
		// just past the next boundary
		for _, p := range s.phases {
			for _, b := range []int64{p.from, p.to} {
				if b >= r.m.now {
					r.advance(time.Duration(b-r.m.now)*time.Millisecond + time.Duration(r.rng.IntN(3))*time.Second)
					r.logf("advance to a phase boundary")
					r.phaseTick()
					return
				}
			}
		}
	}
	r.phaseTick()
}

// phaseTick is the gateway's tick on the event: check, apply when due,
// then take out the users left to leave; Redis is compared with the model
// (the phase, audience, price, and by check() the users and the queue).
func (r *modelRun) phaseTick() {
	m, ctx, ev := r.m, r.ctx, r.event
	before := m.sch.slot
	changed, left := m.applySchedule()
	st, err := r.store.ApplySchedule(ctx, ev, false)
	if err != nil {
		r.fatalf("check schedule: %v", err)
	}
	if st.Due != (m.sch.slot != before) || (st.Due && st.Changed != changed) {
		r.fatalf("check schedule: %+v, model slot %q -> %q changed %v", st, before, m.sch.slot, changed)
	}
	if st.Due {
		if st, err = r.store.ApplySchedule(ctx, ev, true); err != nil || st.Slot != m.sch.slot || st.Changed != changed ||
			st.Next.Phase != m.sch.phase || st.Next.Audience != m.sch.audience {
			r.fatalf("apply schedule: %+v %v, model slot %s phase %q audience %s changed %v",
				st, err, m.sch.slot, m.sch.phase, m.sch.audience, changed)
		}
		for more := st.Leaving; more; {
			if more, err = r.store.LeaveQueue(ctx, ev); err != nil {
				r.fatalf("leave queue: %v", err)
			}
		}
	}
	r.logf("phase-tick -> %s phase %q audience %s left %v", m.sch.slot, m.sch.phase, m.sch.audience, left)
	if len(left) > 0 {
		r.stats["phase-tick fans left"] += len(left)
	}
	e, err := r.store.GetEvent(ctx, ev)
	if err != nil || e.Phase != m.sch.phase || (e.Audience != m.sch.audience && m.sch.slot != "") {
		r.fatalf("event phase %q audience %q %v, model %q %q", e.Phase, e.Audience, err, m.sch.phase, m.sch.audience)
	}
	// the price list every script charges from (config prices: seats:cents)
	prices, err := r.rdb.HGet(ctx, booking.EventKeys(r.store.Prefix(), ev)[0], "prices").Result()
	if p := m.sch.price(); p >= 0 && (err != nil || prices != fmt.Sprintf("%d:%d", modelSeats, p)) {
		r.fatalf("phase %s prices %q %v, model %d", m.sch.phase, prices, err, p)
	}
	// outbox entries of the leave: announced like any
	entries, err := r.store.Outbox(ctx, ev, 0)
	if err != nil {
		r.fatalf("outbox: %v", err)
	}
	n := 0
	for _, e := range entries {
		if e.Kind == booking.KindCancelled && e.From == booking.FromPhaseEnded {
			n++
		}
	}
	if len(left) > 0 && n < len(left) {
		r.fatalf("%d fans left at the phase's end, %d cancellations in the outbox", len(left), n)
	}
	r.announce(entries)
}

// joinCode joins a fan with a code: one of the event's, sometimes one no
// code has; a fan who left at a phase's end joins again this way too.
func (r *modelRun) joinCode() {
	m, ctx, ev := r.m, r.ctx, r.event
	name := r.userIn(false, "", booking.StateCancelled, booking.StateExpired, booking.StateFailed,
		booking.StateAbandoned, booking.StatePhaseEnded)
	i := r.rng.IntN(len(m.sch.codes) + 1)
	if i == len(m.sch.codes) {
		i = -1
	}
	d := modelDigest(i)
	m.joinCode = d
	st, created, wantErr := m.join(name)
	m.joinCode = ""
	res, err := r.store.EnqueueCode(ctx, ev, name, d)
	r.logf("code-join %s code %d -> %s%s created=%v", name, i, res.State, errKey(err), res.Created)
	if !sameErr(err, wantErr) || (err == nil && (res.State != st || res.Created != created)) {
		r.fatalf("join %s with code %d: got %+v %v, model %s created=%v %v", name, i, res, err, st, created, wantErr)
	}
	if err == nil && res.Sequence != m.users[name].seq {
		r.fatalf("join %s with code: sequence %d, model %d", name, res.Sequence, m.users[name].seq)
	}
	if err != nil && !errors.Is(err, wantErr) {
		r.fatalf("join %s with code: %v", name, err)
	}
	if created && st == booking.StateActive {
		r.checkRoom("join with code")
	}
	r.announce(res.Outbox)
}
