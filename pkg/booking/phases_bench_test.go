package booking

import (
	"testing"
	"time"
)

// BenchmarkLeaveQueue: users taken out of the queue at a phase's end
// (on_phase_change leave), LeaveStep a call, from a queue of b.N users
// (one op = one user; run it with -benchtime Nx).
func BenchmarkLeaveQueue(b *testing.B) {
	cfg := EventConfig{ID: "bench", Rows: 10, SeatsPerRow: 10, Capacity: 1}
	s, ctx := benchStore(b, cfg)
	now := time.Now().Truncate(time.Second)
	phase := func(id string, from, to time.Duration) Phase {
		return Phase{ID: id, StartsAt: now.Add(from), EndsAt: now.Add(to), Audience: AudiencePublic}
	}
	set := func(first, second Phase) {
		sch := Schedule{OnPhaseChange: PhaseChangeLeave, Phases: []Phase{first, second}}
		if err := CheckSchedule(cfg, &sch); err != nil {
			b.Fatal(err)
		}
		if err := s.SetSchedule(ctx, cfg, sch, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := s.ApplySchedule(ctx, "bench", true); err != nil {
			b.Fatal(err)
		}
	}
	set(phase("first", -time.Hour, time.Hour), phase("second", time.Hour, 2*time.Hour))
	fill(b, s, ctx, "bench", b.N+1) // the first is admitted
	// the same schedule with the first phase over: the change takes them out
	sch := Schedule{OnPhaseChange: PhaseChangeLeave, Phases: []Phase{phase("first", -2*time.Hour, -time.Hour),
		phase("second", -time.Hour, time.Hour)}}
	if err := CheckSchedule(cfg, &sch); err != nil {
		b.Fatal(err)
	}
	if err := s.SetSchedule(ctx, cfg, sch, 0); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	st, err := s.ApplySchedule(ctx, "bench", true)
	if err != nil || !st.Changed {
		b.Fatalf("the change: %+v %v", st, err)
	}
	for more := st.Leaving; more; {
		if more, err = s.LeaveQueue(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if c, _ := s.Counts(ctx, "bench"); c.Waiting != 0 {
		b.Fatalf("%d still waiting", c.Waiting)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "users/s")
}
