package booking

import (
	"errors"
	"testing"
	"time"
)

// TestProviderOutagePausesHoldClocks: while the provider is degraded no
// hold expires, whether the timeout consumer or the safety net's
// promotion looks, nobody is admitted and joins queue; on recovery every
// hold has the time it had left and expires exactly that much later.
func TestProviderOutagePausesHoldClocks(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 3, Hold: time.Minute, Grace: 20 * time.Second})
	start := f.clock.Now()
	f.join("evt", "a") // active until start+60s
	f.clock.Advance(30 * time.Second)
	f.join("evt", "b") // active until start+90s
	if _, err := f.s.LockSeat(f.ctx, "evt", "b", "A2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "b", "pb"); err != nil {
		t.Fatal(err)
	}

	f.clock.Advance(20 * time.Second) // a has 10 s left, b 40 s
	down := f.clock.Now()
	st, err := f.s.SetProviderDegraded(f.ctx, "evt", true)
	if err != nil || !st.Changed || st.PausedSince != down || st.Holds != 2 {
		t.Fatalf("degraded: %+v %v", st, err)
	}
	if again, err := f.s.SetProviderDegraded(f.ctx, "evt", true); err != nil || again.Changed || again.PausedSince != down {
		t.Fatalf("degraded again: %+v %v, want unchanged", again, err)
	}

	// an outage of 5 minutes, far past every deadline and grace
	for range 10 {
		f.clock.Advance(30 * time.Second)
		for _, u := range []string{"a", "b"} {
			r, err := f.s.HandleTimeout(f.ctx, "evt", u)
			// (a message comes back no sooner than a minute on)
			if err != nil || r.Outcome != OutcomeNotDue || r.ExpireAt.Sub(r.At) < time.Minute {
				t.Fatalf("timeout of %s during the outage: %+v %v", u, r, err)
			}
		}
		p, err := f.s.Promote(f.ctx, "evt", 0)
		if err != nil || p.Reason != "provider_degraded" || len(p.Expired)+len(p.Promoted) != 0 {
			t.Fatalf("promotion during the outage: %+v %v", p, err)
		}
	}
	// the time left stands still: a's deadline is now + 10 s
	pa, err := f.s.Position(f.ctx, "evt", "a")
	if err != nil || pa.ExpireAt != f.clock.Now().Add(10*time.Second) {
		t.Fatalf("a during the outage: %+v %v, want 10 s left", pa, err)
	}
	// a seat can still be chosen; the room admits nobody, joins queue
	if _, err := f.s.LockSeat(f.ctx, "evt", "a", "A1"); err != nil {
		t.Fatalf("select during the outage: %v", err)
	}
	if j := f.join("evt", "c"); j.State != StateWaiting {
		t.Fatalf("join during the outage: %+v, want waiting (room has a free slot)", j)
	}

	outage := f.clock.Now().Sub(down)
	st, err = f.s.SetProviderDegraded(f.ctx, "evt", false)
	if err != nil || !st.Changed || !st.PausedSince.IsZero() || st.Paused != outage || st.Ended != down {
		t.Fatalf("recovered: %+v %v, want paused %v", st, err, outage)
	}
	if again, err := f.s.SetProviderDegraded(f.ctx, "evt", false); err != nil || again.Changed || again.Paused != outage {
		t.Fatalf("recovered again: %+v %v", again, err)
	}
	// promotion resumes: c is admitted with a full hold
	p, err := f.s.Promote(f.ctx, "evt", 0)
	if err != nil || len(p.Promoted) != 1 || p.Promoted[0].ExpireAt != f.clock.Now().Add(time.Minute) {
		t.Fatalf("promotion after recovery: %+v %v", p, err)
	}
	// a expires exactly 10 s later, not a millisecond before
	f.clock.Advance(10*time.Second - time.Millisecond)
	if r, err := f.s.HandleTimeout(f.ctx, "evt", "a"); err != nil || r.Outcome != OutcomeNotDue || r.ExpireAt != start.Add(time.Minute+outage) {
		t.Fatalf("a 1 ms before its moved deadline: %+v %v", r, err)
	}
	f.clock.Advance(time.Millisecond)
	p, err = f.s.Promote(f.ctx, "evt", 0)
	if err != nil || len(p.Expired) != 1 || p.Expired[0].UserID != "a" || p.Expired[0].At != start.Add(time.Minute+outage) {
		t.Fatalf("promotion at a's moved deadline: %+v %v", p, err)
	}
	// b, in payment, kept its 40 s and then gets its grace
	f.clock.Advance(30 * time.Second)
	if r, err := f.s.HandleTimeout(f.ctx, "evt", "b"); err != nil || r.Outcome != OutcomeExtended ||
		r.ExpireAt != start.Add(90*time.Second+outage+20*time.Second) {
		t.Fatalf("b at its moved deadline: %+v %v", r, err)
	}
	if r, err := f.s.PaymentSuccess(f.ctx, "evt", "b", "pb"); err != nil || r.Outcome != OutcomeCompleted {
		t.Fatalf("b's payment after the outage: %+v %v", r, err)
	}
	f.checkInvariants("evt")

	if _, err := f.s.SetProviderDegraded(f.ctx, "nope", true); !errors.Is(err, ErrEventNotFound) {
		t.Fatal(err)
	}
}

// EndProviderOutage restarts the clocks like a recovery and leaves the
// event saying so until its next change of provider state.
func TestEndProviderOutageMarksTheEvent(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 3, Hold: time.Minute})
	f.join("evt", "a")
	f.clock.Advance(20 * time.Second) // a has 40 s left
	down, err := f.s.SetProviderDegraded(f.ctx, "evt", true)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	st, err := f.s.EndProviderOutage(f.ctx, "evt")
	if err != nil || !st.Changed || st.Ended != down.PausedSince || st.Paused != time.Hour {
		t.Fatalf("end: %+v %v", st, err)
	}
	e, err := f.s.GetEvent(f.ctx, "evt")
	if err != nil || !e.ProviderOutageEnded.Equal(f.clock.Now()) || !e.HoldsPausedSince.IsZero() {
		t.Fatalf("event after the end: %+v %v", e, err)
	}
	if p, err := f.s.Position(f.ctx, "evt", "a"); err != nil || p.ExpireAt != f.clock.Now().Add(40*time.Second) {
		t.Fatalf("a: %+v %v, want its 40 s left", p, err)
	}
	if again, err := f.s.EndProviderOutage(f.ctx, "evt"); err != nil || again.Changed {
		t.Fatalf("again: %+v %v", again, err)
	}
	for _, degraded := range []bool{true, false} { // the next change clears it
		if _, err := f.s.SetProviderDegraded(f.ctx, "evt", degraded); err != nil {
			t.Fatal(err)
		}
		if e, err := f.s.GetEvent(f.ctx, "evt"); err != nil || !e.ProviderOutageEnded.IsZero() {
			t.Fatalf("after degraded=%v: %+v %v", degraded, e.ProviderOutageEnded, err)
		}
	}
}
