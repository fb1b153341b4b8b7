package booking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/ids"
)

// Scheduled phases (docs/booking-engine.md "Scheduled phases"): an
// event's sale as an ordered list of phases, each with its window, its
// audience and its own settings. The schedule lives in the event's config
// (field 'schedule', one line per phase); apply_schedule.lua makes the
// phase Redis's clock says current, once per boundary, and the gateway
// records the change as it records a manual one (ledger.Ledger.ApplyPhase).

// AudienceClosed is the audience between two phases of a schedule (and
// after its last): every join is refused ErrPhaseClosed.
const AudienceClosed = "closed"

// What happens to the users waiting when a scheduled phase ends
// (ScheduleSettings.OnPhaseChange).
const (
	// PhaseChangeKeep: they keep their place (the default).
	PhaseChangeKeep = "keep"
	// PhaseChangeLeave: they leave the queue, told StatePhaseEnded; the
	// users in the room finish within their hold.
	PhaseChangeLeave = "leave"
)

// MaxPhases bounds a schedule.
const MaxPhases = 20

// Phase is one phase of a schedule as an operator gives it. A nil
// setting is the event's own (its definition when the schedule is
// saved); Prices overrides the price of the sections it names.
type Phase struct {
	ID               string           `json:"id"`
	Name             string           `json:"name"`
	StartsAt         time.Time        `json:"starts_at"`
	EndsAt           time.Time        `json:"ends_at"`
	Audience         string           `json:"audience"`
	Prices           map[string]int64 `json:"prices,omitempty"`
	AdmitPerMinute   *int             `json:"admit_per_minute,omitempty"`
	HoldSeconds      *int             `json:"hold_seconds,omitempty"`
	OrderLimit       *int             `json:"order_limit,omitempty"`
	EarlyJoinSeconds *int             `json:"early_join_seconds,omitempty"`
}

// Schedule is an event's phases, in order, and what a phase's end does
// to the users waiting.
type Schedule struct {
	OnPhaseChange string  `json:"on_phase_change"`
	Phases        []Phase `json:"phases"`
}

// ScheduleError is a schedule refused: Code says which rule (the admin
// API answers it), nothing is changed.
type ScheduleError struct {
	Code string
	Msg  string
}

func (e *ScheduleError) Error() string { return e.Code + ": " + e.Msg }

// Unwrap makes a ScheduleError an ErrInvalidArgument.
func (e *ScheduleError) Unwrap() error { return ErrInvalidArgument }

// The codes of ScheduleError.
const (
	SchedInvalid        = "invalid_phase"           // a setting out of its bounds, a bad id or audience
	SchedDuplicate      = "duplicate_phase"         // two phases with one id
	SchedOrder          = "phases_out_of_order"     // a phase ends before it starts, or starts before the one before
	SchedOverlap        = "phases_overlap"          // a phase starts before the one before ends
	SchedOutsideSales   = "phase_outside_sales"     // a phase outside the event's sales window
	SchedUnknownSection = "phase_unknown_section"   // a price for a section the event does not have
	SchedOnPhaseChange  = "invalid_on_phase_change" // neither keep nor leave
	SchedPrequeue       = "prequeue_overlap"        // a later phase's pre-queue opens before the phase before starts
)

// phaseLeaveArg is the config's phase_leave for an on_phase_change
// setting ("" is keep); an error names the values allowed.
func phaseLeaveArg(v string) (string, error) {
	switch v {
	case "", PhaseChangeKeep:
		return "0", nil
	case PhaseChangeLeave:
		return "1", nil
	}
	return "", fmt.Errorf("on_phase_change must be %q or %q", PhaseChangeKeep, PhaseChangeLeave)
}

// phaseChangeOf is the event's on_phase_change from its config hash.
func phaseChangeOf(cfg map[string]string) string {
	if cfg["phase_leave"] == "1" {
		return PhaseChangeLeave
	}
	return PhaseChangeKeep
}

// orKeep is an on_phase_change setting with its default filled.
func orKeep(v string) string {
	if v == "" {
		return PhaseChangeKeep
	}
	return v
}

func schedErr(code, format string, a ...any) error {
	return &ScheduleError{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// CheckSchedule checks a schedule against the event c (its definition):
// each phase's settings within the bounds of the event's settings, the
// phases ordered and not overlapping, inside the sales window, pricing
// only sections the event has. It fills OnPhaseChange's default.
func CheckSchedule(c EventConfig, s *Schedule) error {
	if s.OnPhaseChange == "" {
		s.OnPhaseChange = PhaseChangeKeep
	}
	if s.OnPhaseChange != PhaseChangeKeep && s.OnPhaseChange != PhaseChangeLeave {
		return schedErr(SchedOnPhaseChange, "on_phase_change must be %q or %q", PhaseChangeKeep, PhaseChangeLeave)
	}
	if len(s.Phases) > MaxPhases {
		return schedErr(SchedInvalid, "at most %d phases", MaxPhases)
	}
	sections := map[string]bool{}
	c, total := schedBase(c)
	for _, sec := range layoutOf(c, total) {
		sections[sec.Name] = true
	}
	seen := map[string]bool{}
	for i, p := range s.Phases {
		name := fmt.Sprintf("phases[%d]", i)
		if !ids.Valid(p.ID) {
			return schedErr(SchedInvalid, "%s.id must be 1-128 printable ASCII characters without spaces, braces or |", name)
		}
		if seen[p.ID] {
			return schedErr(SchedDuplicate, "%s.id %q is used twice", name, p.ID)
		}
		seen[p.ID] = true
		if err := checkName(name+".name", p.Name, MaxNameLen); err != nil {
			return schedErr(SchedInvalid, "%v", err)
		}
		if p.Audience != AudiencePublic && p.Audience != AudienceCode && p.Audience != AudienceRegistered {
			return schedErr(SchedInvalid, "%s.audience must be %q, %q or %q", name, AudiencePublic, AudienceCode, AudienceRegistered)
		}
		if p.StartsAt.IsZero() || p.EndsAt.IsZero() {
			return schedErr(SchedInvalid, "%s needs starts_at and ends_at", name)
		}
		if err := checkSalesTime(name+".starts_at", p.StartsAt); err != nil {
			return schedErr(SchedInvalid, "%v", err)
		}
		if !p.EndsAt.After(p.StartsAt) {
			return schedErr(SchedOrder, "%s.ends_at must be after its starts_at", name)
		}
		if i > 0 {
			prev := s.Phases[i-1]
			if p.StartsAt.Before(prev.StartsAt) {
				return schedErr(SchedOrder, "%s starts before phases[%d]: list the phases in order", name, i-1)
			}
			if p.StartsAt.Before(prev.EndsAt) {
				return schedErr(SchedOverlap, "%s starts before phases[%d] ends", name, i-1)
			}
		}
		if (!c.SalesStart.IsZero() && p.StartsAt.Before(c.SalesStart)) || (!c.SalesEnd.IsZero() && p.EndsAt.After(c.SalesEnd)) {
			return schedErr(SchedOutsideSales, "%s must be inside the event's sales window", name)
		}
		for sec, cents := range p.Prices {
			if !sections[sec] {
				return schedErr(SchedUnknownSection, "%s.prices: the event has no section %q", name, sec)
			}
			if cents < 0 || cents > MaxPriceCents {
				return schedErr(SchedInvalid, "%s.prices[%q] must be from 0 to %d", name, sec, MaxPriceCents)
			}
		}
		u := EventUpdate{AdmitPerMinute: p.AdmitPerMinute, MaxSeatsPerOrder: p.OrderLimit}
		if p.HoldSeconds != nil {
			d := time.Duration(*p.HoldSeconds) * time.Second
			u.Hold = &d
		}
		if p.EarlyJoinSeconds != nil {
			d := time.Duration(*p.EarlyJoinSeconds) * time.Second
			u.EarlyJoin = &d
		}
		if err := u.Validate(); err != nil {
			return schedErr(SchedInvalid, "%s: %s", name, strings.TrimPrefix(err.Error(), ErrInvalidArgument.Error()+": "))
		}
		if i == 0 && p.EarlyJoinSeconds != nil && *p.EarlyJoinSeconds > 0 && !c.SalesStart.Equal(p.StartsAt) {
			// the pre-queue opens before the sales start: before the first
			// phase's start only when the sale starts with it
			return schedErr(SchedInvalid, "%s.early_join_seconds needs the event's sales_start at the phase's starts_at", name)
		}
		if i > 0 && p.EarlyJoinSeconds != nil &&
			p.StartsAt.Add(-time.Duration(*p.EarlyJoinSeconds)*time.Second).Before(s.Phases[i-1].StartsAt) {
			// one later phase's pre-queue open at a time, while the phase
			// before runs or in the gap before it (docs/booking-engine.md
			// "A later phase's pre-queue")
			return schedErr(SchedPrequeue, "%s.early_join_seconds opens its pre-queue before phases[%d] starts", name, i-1)
		}
	}
	return nil
}

// schedBase is the event's definition with its defaults and its seats.
func schedBase(c EventConfig) (EventConfig, int) {
	seats, _ := normalise(&c)
	return c, len(seats)
}

// scheduleField is the schedule as config 'schedule' (apply_schedule.lua
// reads it): each phase with every setting filled from c and its prices
// as the event's whole price list (the event's own prices where the
// phase names none).
func scheduleField(c EventConfig, s Schedule) string {
	c, total := schedBase(c)
	layout := layoutOf(c, total)
	var b strings.Builder
	for i, p := range s.Phases {
		if i > 0 {
			b.WriteByte('\n')
		}
		or := func(v *int, def int) int {
			if v != nil {
				return *v
			}
			return def
		}
		hold := c.Hold
		if p.HoldSeconds != nil {
			hold = time.Duration(*p.HoldSeconds) * time.Second
		}
		early := phaseEarly(c, p)
		parts := make([]string, len(layout))
		for j, sec := range layout {
			cents := sec.PriceCents
			if v, ok := p.Prices[sec.Name]; ok {
				cents = v
			}
			parts[j] = strconv.Itoa(sec.Len) + ":" + strconv.FormatInt(cents, 10)
		}
		prices := strings.Join(parts, ",")
		fmt.Fprintf(&b, "%s|%d|%d|%s|%d|%d|%d|%d|%s", p.ID, unixMS(p.StartsAt), unixMS(p.EndsAt), p.Audience,
			or(p.AdmitPerMinute, c.AdmitPerMinute), hold.Milliseconds(), or(p.OrderLimit, c.MaxSeatsPerOrder),
			early.Milliseconds(), prices)
	}
	return b.String()
}

// phaseEarly is the phase's early join, the event's (c, with its
// defaults) when it sets none.
func phaseEarly(c EventConfig, p Phase) time.Duration {
	if p.EarlyJoinSeconds != nil {
		return time.Duration(*p.EarlyJoinSeconds) * time.Second
	}
	return c.EarlyJoin
}

// scheduleArgs are the config field, value pairs of the schedule sch of
// the event c: the schedule, its on_phase_change and no slot applied yet,
// and a new seed and commitment for each later phase's pre-queue (a
// later phase has one when it sets early_join_seconds itself), but for
// the phases kept says have one (nil: none; update_event keeps a seed a
// phase has already, restore_event is given the kept ones).
func scheduleArgs(c EventConfig, sch Schedule, kept func(phase string) bool) []any {
	leave := "0"
	if sch.OnPhaseChange == PhaseChangeLeave {
		leave = "1"
	}
	args := []any{"schedule", scheduleField(c, sch), "phase_leave", leave, "sched_slot", ""}
	for i, p := range sch.Phases {
		if i > 0 && p.EarlyJoinSeconds != nil && *p.EarlyJoinSeconds > 0 && (kept == nil || !kept(p.ID)) {
			seed := drawSeedArgs()
			seedField, commitField := drawFields(p.ID)
			args = append(args, seedField, seed[1], commitField, seed[3])
		}
	}
	return args
}

// SetSchedule puts the schedule s (checked with CheckSchedule) of the
// event defined by c into Redis, and the base prices back: the phase it
// says current is applied by the next ApplySchedule. An empty schedule
// removes it (the current phase stays). ErrEventNotFound;
// ErrBeaconRoundEarly when a later phase's new start would come after
// the beacon round its draw is committed to (checkBeaconStart).
// revision (0: none) is the ledger's settings revision of the change, as
// EventUpdate.Revision.
func (s *Store) SetSchedule(ctx context.Context, c EventConfig, sch Schedule, revision int64) error {
	if err := checkIDs(c.ID); err != nil {
		return err
	}
	for _, p := range sch.Phases[min(1, len(sch.Phases)):] {
		if err := s.checkBeaconStart(ctx, c.ID, p.ID, p.StartsAt); err != nil {
			return err
		}
	}
	args := scheduleArgs(c, sch, nil)
	if revision != 0 {
		args = append(args, "settings_rev", revision)
	}
	if _, err := s.run(ctx, scriptUpdateEvent, c.ID, args...); err != nil {
		return fmt.Errorf("set schedule: %w", err)
	}
	return nil
}

var scriptApplySchedule = newScript("apply_schedule")

// ScheduleStep is what ApplySchedule found: the slot of the schedule now
// ("p<i>" phase i, "g<i>" the gap before it, "" before the first or no
// schedule), the phase and audience from then on, the ones before, and
// whether the phase or audience changed; Due: a boundary passed since
// the slot last applied (false: nothing was or would be written);
// Leaving: users of a phase that ended (on_phase_change leave) are still
// waiting, for LeaveQueue.
type ScheduleStep struct {
	Slot     string
	Next     PhaseState
	Previous PhaseState
	Changed  bool
	Due      bool
	Leaving  bool
}

// LeaveStep is how many waiting users one call takes out of the queue
// at a phase's end (on_phase_change leave): a call holds Redis for that
// many users, not for the whole queue (a promotion's batch; docs/benchmarks.md
// "phase end, leave").
var LeaveStep = 500

// ApplySchedule makes current the phase the event's schedule says at
// Redis's time when a boundary passed since the last call (of any
// gateway): its phase, audience and settings; with apply false it only
// answers what it would do. Calls in the same slot change nothing, so an
// operator's manual SetPhase stands until the next boundary.
// ErrEventNotFound.
func (s *Store) ApplySchedule(ctx context.Context, eventID string, apply bool) (ScheduleStep, error) {
	if err := checkIDs(eventID); err != nil {
		return ScheduleStep{}, err
	}
	mode := "check"
	if apply {
		mode = "apply"
	}
	r, err := s.run(ctx, scriptApplySchedule, eventID, mode, LeaveStep)
	if err != nil {
		return ScheduleStep{}, fmt.Errorf("apply schedule: %w", err)
	}
	var st ScheduleStep
	r.scan(&st.Changed, &st.Slot, &st.Next.Phase, &st.Next.Audience, &st.Previous.Phase, &st.Previous.Audience, &st.Due, &st.Leaving)
	return st, nil
}

// LeaveQueue takes the next LeaveStep users waiting since a phase that
// ended out of the queue (ScheduleStep.Leaving); true while more are
// left. ErrEventNotFound.
func (s *Store) LeaveQueue(ctx context.Context, eventID string) (bool, error) {
	if err := checkIDs(eventID); err != nil {
		return false, err
	}
	r, err := s.run(ctx, scriptApplySchedule, eventID, "leave", LeaveStep)
	if err != nil {
		return false, fmt.Errorf("leave queue: %w", err)
	}
	var st ScheduleStep
	r.scan(&st.Changed, &st.Slot, &st.Next.Phase, &st.Next.Audience, &st.Previous.Phase, &st.Previous.Audience, &st.Due, &st.Leaving)
	return st.Leaving, nil
}

// IsScheduleError reports a refused schedule and its code.
func IsScheduleError(err error) (*ScheduleError, bool) {
	var se *ScheduleError
	ok := errors.As(err, &se)
	return se, ok
}
