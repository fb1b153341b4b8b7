package booking

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCreateEvent(t *testing.T) {
	f := newFixture(t)
	start := f.clock.Now()
	tests := []struct {
		name    string
		cfg     EventConfig
		wantErr error
		check   func(t *testing.T, e Event)
	}{
		{name: "rows by seats with defaults", cfg: EventConfig{ID: "grid", Rows: 5, SeatsPerRow: 10},
			check: func(t *testing.T, e Event) {
				want := Event{ID: "grid", Name: "grid", Capacity: DefaultCapacity, Hold: DefaultHold,
					Grace: DefaultGrace, BatchSize: DefaultBatchSize, Rows: 5, PerRow: 10,
					Counts: Counts{Total: 50, Available: 50}}
				if diff := cmp.Diff(want, e); diff != "" {
					t.Errorf("event (-want +got):\n%s", diff)
				}
				seats := f.seats("grid")
				for _, id := range []string{"A1", "A10", "E1", "E10"} {
					if seats[id] != SeatAvailable {
						t.Errorf("seat %s: %q", id, seats[id])
					}
				}
				if _, ok := seats["F1"]; ok {
					t.Error("seat F1 should not exist")
				}
			}},
		{name: "explicit seats keep their order", cfg: EventConfig{ID: "explicit", Seats: []string{"VIP-2", "VIP-1", "GA-1"},
			Capacity: 3, Hold: 90 * time.Second, SalesStart: start, SalesEnd: start.Add(time.Hour)},
			check: func(t *testing.T, e Event) {
				all, err := f.s.Seats(f.ctx, "explicit")
				if err != nil {
					t.Fatal(err)
				}
				want := []Seat{{"VIP-2", SeatAvailable}, {"VIP-1", SeatAvailable}, {"GA-1", SeatAvailable}}
				if diff := cmp.Diff(want, all); diff != "" {
					t.Errorf("seats (-want +got):\n%s", diff)
				}
				if e.Hold != 90*time.Second || !e.SalesEnd.Equal(start.Add(time.Hour)) || e.Counts.Total != 3 {
					t.Errorf("event %+v", e)
				}
			}},
		{name: "exists", cfg: EventConfig{ID: "grid", Rows: 1, SeatsPerRow: 1}, wantErr: ErrEventExists},
		{name: "no seats", cfg: EventConfig{ID: "empty"}, wantErr: ErrInvalidEvent},
		{name: "duplicate seat", cfg: EventConfig{ID: "dup", Seats: []string{"A1", "A1"}}, wantErr: ErrInvalidEvent},
		{name: "bad seat id", cfg: EventConfig{ID: "badseat", Seats: []string{"A 1"}}, wantErr: ErrInvalidEvent},
		{name: "bad event id", cfg: EventConfig{ID: "x{y}", Rows: 1, SeatsPerRow: 1}, wantErr: ErrInvalidEvent},
		{name: "hold too short", cfg: EventConfig{ID: "short", Rows: 1, SeatsPerRow: 1, Hold: time.Millisecond}, wantErr: ErrInvalidEvent},
		{name: "end before start", cfg: EventConfig{ID: "window", Rows: 1, SeatsPerRow: 1, SalesStart: start, SalesEnd: start.Add(-time.Second)}, wantErr: ErrInvalidEvent},
		{name: "too many seats", cfg: EventConfig{ID: "huge", Rows: 1000, SeatsPerRow: 1000}, wantErr: ErrInvalidEvent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := f.s.CreateEvent(f.ctx, tc.cfg)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
	ids, err := f.s.EventIDs(f.ctx)
	if err != nil || !cmp.Equal(ids, []string{"explicit", "grid"}) {
		t.Fatalf("event ids %v %v", ids, err)
	}
	list, err := f.s.ListEvents(f.ctx)
	if err != nil || len(list) != 2 || list[1].Counts.Total != 50 {
		t.Fatalf("list events %+v %v", list, err)
	}
}

func TestSeatIDs(t *testing.T) {
	got := SeatIDs(28, 2)
	if got[0] != "A1" || got[1] != "A2" || got[50] != "Z1" || got[52] != "AA1" || got[55] != "AB2" {
		t.Fatalf("seat ids %v", got)
	}
}

func TestUpdateEvent(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1})
	yes, no, cap3, hold := true, false, 3, 30*time.Second
	e, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Paused: &yes, Capacity: &cap3, Hold: &hold})
	if err != nil || !e.Paused || e.Capacity != 3 || e.Hold != hold {
		t.Fatalf("update: %+v %v", e, err)
	}
	// paused: joins queue instead of entering the room, promotion stops
	if r := f.join("evt", "u1"); r.State != StateWaiting {
		t.Fatalf("join while paused: %+v", r)
	}
	if p, _ := f.s.Promote(f.ctx, "evt", 0); p.Reason != "paused" || len(p.Promoted) != 0 {
		t.Fatalf("promote while paused: %+v", p)
	}
	if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Paused: &no}); err != nil {
		t.Fatal(err)
	}
	p, _ := f.s.Promote(f.ctx, "evt", 0)
	if len(p.Promoted) != 1 || p.Promoted[0].ExpireAt != f.clock.Now().Add(hold) {
		t.Fatalf("promote after resume with new hold: %+v", p)
	}
	neg := -1
	for name, u := range map[string]EventUpdate{"negative capacity": {Capacity: &neg}, "short hold": {Hold: new(time.Duration)}} {
		if _, err := f.s.UpdateEvent(f.ctx, "evt", u); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := f.s.UpdateEvent(f.ctx, "nope", EventUpdate{Paused: &yes}); !errors.Is(err, ErrEventNotFound) {
		t.Errorf("unknown event: %v", err)
	}
}

func TestEnqueue(t *testing.T) {
	f := newFixture(t)
	now := f.clock.Now()
	f.event(EventConfig{ID: "evt", Capacity: 2})
	f.event(EventConfig{ID: "later", SalesStart: now.Add(time.Minute)})
	f.event(EventConfig{ID: "over", SalesStart: now.Add(-time.Hour), SalesEnd: now.Add(-time.Minute)})
	f.event(EventConfig{ID: "tiny", Seats: []string{"S1"}, Capacity: 5})

	t.Run("admitted at once while the room has room", func(t *testing.T) {
		for i, u := range []string{"a", "b"} {
			r := f.join("evt", u)
			want := JoinResult{State: StateActive, Sequence: int64(i + 1), ExpireAt: now.Add(DefaultHold), Created: true,
				Outbox: []OutboxEntry{{Kind: "joined", UserID: u, Sequence: int64(i + 1), At: now},
					{Kind: "promoted", UserID: u, Sequence: int64(i + 1), ExpireAt: now.Add(DefaultHold), At: now}}}
			if diff := cmp.Diff(want, r); diff != "" {
				t.Errorf("join %s (-want +got):\n%s", u, diff)
			}
		}
	})
	t.Run("queued when full, FIFO positions", func(t *testing.T) {
		for i, u := range []string{"c", "d", "e"} {
			r := f.join("evt", u)
			joined := []OutboxEntry{{Kind: "joined", UserID: u, Sequence: int64(i + 3), At: now}}
			if r.State != StateWaiting || r.Position != int64(i+1) || r.Sequence != int64(i+3) || !r.Created || !cmp.Equal(joined, r.Outbox) {
				t.Errorf("join %s: %+v", u, r)
			}
		}
	})
	t.Run("joining again changes nothing", func(t *testing.T) {
		before := f.counts("evt")
		if r := f.join("evt", "d"); r.State != StateWaiting || r.Position != 2 || r.Sequence != 4 || r.Created || len(r.Outbox) != 0 {
			t.Errorf("rejoin waiting: %+v", r)
		}
		if r := f.join("evt", "a"); r.State != StateActive || r.Sequence != 1 || r.Created || r.ExpireAt != now.Add(DefaultHold) {
			t.Errorf("rejoin active: %+v", r)
		}
		if after := f.counts("evt"); after != before {
			t.Errorf("counts changed: %+v → %+v", before, after)
		}
	})
	t.Run("a freed slot goes to the queue, not to a newcomer", func(t *testing.T) {
		if _, err := f.s.Cancel(f.ctx, "evt", "a"); err != nil {
			t.Fatal(err)
		}
		if r := f.join("evt", "f"); r.State != StateWaiting || r.Position != 4 {
			t.Errorf("newcomer jumped the queue: %+v", r)
		}
	})
	t.Run("cancelled user joins again at the back", func(t *testing.T) {
		if r := f.join("evt", "a"); r.State != StateWaiting || r.Sequence != 7 || r.Position != 5 || !r.Created {
			t.Errorf("rejoin after cancel: %+v", r)
		}
	})
	t.Run("completed user does not join again", func(t *testing.T) {
		f.join("tiny", "buyer")
		f.buy("tiny", "buyer", "S1")
		if r := f.join("tiny", "buyer"); r.State != StateCompleted || r.Created {
			t.Errorf("rejoin completed: %+v", r)
		}
	})
	for _, tc := range []struct {
		name, event, user string
		want              error
	}{
		{"sold out", "tiny", "late", ErrSoldOut},
		{"before sales start", "later", "u", ErrSalesNotStarted},
		{"after sales end", "over", "u", ErrSalesEnded},
		{"unknown event", "nope", "u", ErrEventNotFound},
		{"bad user id", "evt", "", ErrInvalidArgument},
		{"user id with brace", "evt", "a{b", ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.s.Enqueue(f.ctx, tc.event, tc.user); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("sales window bounds are inclusive", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		if r := f.join("later", "first"); !r.Created {
			t.Errorf("join at sales start: %+v", r)
		}
	})
	f.checkInvariants("evt")
}

func TestPosition(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1})
	f.join("evt", "a")
	f.join("evt", "b")
	f.join("evt", "c")
	t.Run("waiting", func(t *testing.T) {
		st, err := f.s.Position(f.ctx, "evt", "c")
		if err != nil || st.State != StateWaiting || st.Position != 2 || st.Sequence != 3 {
			t.Fatalf("%+v %v", st, err)
		}
		if st.Counts.Served != 1 || st.Counts.Waiting != 2 || st.Counts.AdmittedLastMinute != 1 {
			t.Fatalf("counts %+v", st.Counts)
		}
	})
	t.Run("active with seat and payment", func(t *testing.T) {
		f.s.LockSeat(f.ctx, "evt", "a", "B2")
		f.s.InitiatePayment(f.ctx, "evt", "a", "p1")
		st, err := f.s.Position(f.ctx, "evt", "a")
		want := Status{State: StatePaymentPending, Sequence: 1, SeatID: "B2", PaymentID: "p1",
			ExpireAt: f.clock.Now().Add(DefaultHold), Counts: Counts{Served: 1, Waiting: 2, AdmittedLastMinute: 1}}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, st); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("not found still reports the event", func(t *testing.T) {
		st, err := f.s.Position(f.ctx, "evt", "nobody")
		if !errors.Is(err, ErrNotFound) || st.Counts.Waiting != 2 {
			t.Fatalf("%+v %v", st, err)
		}
	})
	t.Run("unknown event", func(t *testing.T) {
		if _, err := f.s.Position(f.ctx, "nope", "a"); !errors.Is(err, ErrEventNotFound) {
			t.Fatal(err)
		}
	})
	t.Run("rate window forgets after a minute", func(t *testing.T) {
		f.clock.Advance(61 * time.Second)
		st, _ := f.s.Position(f.ctx, "evt", "c")
		if st.Counts.AdmittedLastMinute != 0 {
			t.Fatalf("admitted last minute %d", st.Counts.AdmittedLastMinute)
		}
	})
}

func TestPromote(t *testing.T) {
	t.Run("fills free capacity in FIFO order", func(t *testing.T) {
		f := newFixture(t)
		f.event(EventConfig{Capacity: 3})
		for i := range 8 {
			f.join("evt", "u"+strconv.Itoa(i))
		}
		// u0..u2 were admitted on join; free two slots
		f.s.Cancel(f.ctx, "evt", "u0")
		f.s.Cancel(f.ctx, "evt", "u2")
		p, err := f.s.Promote(f.ctx, "evt", 0)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, a := range p.Promoted {
			got = append(got, a.UserID)
		}
		if !cmp.Equal(got, []string{"u3", "u4"}) || p.Reason != "room_full" {
			t.Fatalf("promoted %v reason %s", got, p.Reason)
		}
		if p.Promoted[0].Sequence != 4 || p.Promoted[0].ExpireAt != f.clock.Now().Add(DefaultHold) {
			t.Fatalf("admission %+v", p.Promoted[0])
		}
		if again, _ := f.s.Promote(f.ctx, "evt", 0); len(again.Promoted) != 0 || again.Reason != "room_full" {
			t.Fatalf("second promote admitted past capacity: %+v", again)
		}
		if c := f.counts("evt"); c.Served != 5 || c.Active != 3 || c.Waiting != 3 {
			t.Fatalf("counts %+v", c)
		}
		f.checkInvariants("evt")
	})
	t.Run("bounded by the batch", func(t *testing.T) {
		f := newFixture(t)
		f.event(EventConfig{Capacity: 10})
		no := false
		yes := true
		f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Paused: &yes})
		for i := range 6 {
			f.join("evt", "u"+strconv.Itoa(i))
		}
		f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Paused: &no})
		p, _ := f.s.Promote(f.ctx, "evt", 4)
		if len(p.Promoted) != 4 || p.Reason != "batch" {
			t.Fatalf("batch: %+v", p)
		}
		p, _ = f.s.Promote(f.ctx, "evt", 4)
		if len(p.Promoted) != 2 || p.Reason != "no_waiting" {
			t.Fatalf("rest: %+v", p)
		}
	})
	t.Run("reclaims expired holds before filling", func(t *testing.T) {
		f := newFixture(t)
		f.event(EventConfig{Capacity: 2, Hold: time.Minute})
		f.join("evt", "a")
		f.join("evt", "b")
		f.join("evt", "c")
		f.s.LockSeat(f.ctx, "evt", "a", "A1")
		f.clock.Advance(time.Minute - time.Millisecond)
		if p, _ := f.s.Promote(f.ctx, "evt", 0); len(p.Expired) != 0 || len(p.Promoted) != 0 {
			t.Fatalf("reclaimed before the deadline: %+v", p)
		}
		f.clock.Advance(time.Millisecond)
		p, _ := f.s.Promote(f.ctx, "evt", 0)
		// At: each hold's deadline, booking_expired's time
		want := []Expiry{{UserID: "a", Sequence: 1, SeatID: "A1", At: f.clock.Now()}, {UserID: "b", Sequence: 2, At: f.clock.Now()}}
		if diff := cmp.Diff(want, p.Expired); diff != "" {
			t.Fatalf("expired (-want +got):\n%s", diff)
		}
		if len(p.Promoted) != 1 || p.Promoted[0].UserID != "c" {
			t.Fatalf("promoted %+v", p.Promoted)
		}
		if f.seats("evt")["A1"] != SeatAvailable || f.state("evt", "a") != StateExpired {
			t.Fatal("expired hold kept its seat")
		}
		if len(p.Outbox) != 3 {
			t.Fatalf("outbox %+v", p.Outbox)
		}
		f.checkInvariants("evt")
	})
	t.Run("payment pending gets the grace period once", func(t *testing.T) {
		f := newFixture(t)
		f.event(EventConfig{Capacity: 1, Hold: time.Minute, Grace: 30 * time.Second})
		f.join("evt", "a")
		f.join("evt", "b")
		f.s.LockSeat(f.ctx, "evt", "a", "A1")
		f.s.InitiatePayment(f.ctx, "evt", "a", "p")
		f.clock.Advance(time.Minute)
		p, _ := f.s.Promote(f.ctx, "evt", 0)
		if len(p.Expired) != 0 || len(p.Promoted) != 0 || p.Reason != "room_full" {
			t.Fatalf("grace not given: %+v", p)
		}
		f.clock.Advance(30 * time.Second)
		p, _ = f.s.Promote(f.ctx, "evt", 0)
		if len(p.Expired) != 1 || p.Expired[0].PaymentID != "p" || len(p.Promoted) != 1 {
			t.Fatalf("after grace: %+v", p)
		}
		if _, err := f.s.PaymentSuccess(f.ctx, "evt", "a", "p"); !errors.Is(err, ErrLatePayment) {
			t.Fatalf("payment after release: %v", err)
		}
		f.checkInvariants("evt")
	})
	t.Run("capacity never exceeds unsold seats", func(t *testing.T) {
		f := newFixture(t)
		f.event(EventConfig{Seats: []string{"S1", "S2", "S3"}, Capacity: 10})
		for i := range 6 {
			f.join("evt", "u"+strconv.Itoa(i))
		}
		if c := f.counts("evt"); c.Active != 3 || c.Waiting != 3 {
			t.Fatalf("counts %+v", c)
		}
		f.buy("evt", "u0", "S1")
		f.s.Cancel(f.ctx, "evt", "u1")
		p, _ := f.s.Promote(f.ctx, "evt", 0)
		if len(p.Promoted) != 1 || p.Promoted[0].UserID != "u3" {
			t.Fatalf("promoted %+v", p)
		}
		f.buy("evt", "u2", "S2")
		f.buy("evt", "u3", "S3")
		p, _ = f.s.Promote(f.ctx, "evt", 0)
		if p.Reason != "sold_out" || len(p.Promoted) != 0 {
			t.Fatalf("sold out: %+v", p)
		}
		if st, _ := f.s.Position(f.ctx, "evt", "u5"); !st.SoldOut || st.State != StateWaiting {
			t.Fatalf("waiting user after sell-out: %+v", st)
		}
		f.checkInvariants("evt")
	})
	t.Run("absent users are dropped, present ones admitted", func(t *testing.T) {
		f := newFixture(t)
		f.event(EventConfig{Capacity: 1, Abandon: time.Minute})
		f.join("evt", "a")
		f.join("evt", "gone")
		f.join("evt", "polling")
		f.join("evt", "connected")
		f.clock.Advance(50 * time.Second)
		f.s.Position(f.ctx, "evt", "polling")
		if err := f.s.Touch(f.ctx, "evt", "connected", "a", "stranger"); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(20 * time.Second)
		f.s.Cancel(f.ctx, "evt", "a")
		p, _ := f.s.Promote(f.ctx, "evt", 0)
		if !cmp.Equal(p.Abandoned, []string{"gone"}) || len(p.Promoted) != 1 || p.Promoted[0].UserID != "polling" {
			t.Fatalf("promote: %+v", p)
		}
		if f.state("evt", "gone") != StateAbandoned {
			t.Fatal("absent user not abandoned")
		}
		var gone []OutboxEntry
		for _, e := range p.Outbox {
			if e.Kind == "cancelled" {
				gone = append(gone, e)
			}
		}
		want := []OutboxEntry{{Kind: "cancelled", UserID: "gone", Sequence: 2, From: FromAbandoned, At: f.clock.Now()}}
		if diff := cmp.Diff(want, gone); diff != "" {
			t.Fatalf("abandonment outbox entry (-want +got):\n%s", diff)
		}
		stored, _ := f.s.Outbox(f.ctx, "evt", 0)
		if err := f.s.AckOutbox(f.ctx, "evt", stored...); err != nil {
			t.Fatal(err)
		}
		if left, _ := f.s.Outbox(f.ctx, "evt", 0); len(left) != 0 {
			t.Fatalf("outbox entries do not round-trip: %+v", left)
		}
		// Touch must not add users who are not waiting
		if n, _ := f.rdb.ZScore(f.ctx, keysFor(f.s.prefix, "evt")[kSeen], "stranger").Result(); n != 0 {
			t.Fatal("touch added a stranger")
		}
		f.checkInvariants("evt")
	})
	t.Run("unknown event", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.s.Promote(f.ctx, "nope", 0); !errors.Is(err, ErrEventNotFound) {
			t.Fatal(err)
		}
	})
}

func TestLockSeat(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 3, Hold: time.Minute})
	f.join("evt", "a")
	f.join("evt", "b")
	f.join("evt", "c")
	f.join("evt", "waiter")
	f.buy("evt", "c", "B5")
	tests := []struct {
		name, user, seat string
		want             error
	}{
		{"locks a free seat", "a", "A1", nil},
		{"same seat again is a no-op", "a", "A1", nil},
		{"taken seat", "b", "A1", ErrSeatUnavailable},
		{"sold seat", "b", "B5", ErrSeatUnavailable},
		{"unknown seat", "b", "Z9", ErrSeatUnknown},
		{"malformed seat", "b", "", ErrSeatUnknown},
		{"swap releases the previous seat", "a", "A2", nil},
		{"the released seat is free again", "b", "A1", nil},
		{"waiting user", "waiter", "A3", ErrInvalidState},
		{"completed user", "c", "A3", ErrInvalidState},
		{"unknown user", "nobody", "A3", ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.s.LockSeat(f.ctx, "evt", tc.user, tc.seat); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	want := map[string]SeatStatus{"A1": SeatHeld, "A2": SeatHeld, "B5": SeatSold}
	for id, st := range f.seats("evt") {
		if w := want[id]; (w == "" && st != SeatAvailable) || (w != "" && st != w) {
			t.Errorf("seat %s is %s", id, st)
		}
	}
	if c := f.counts("evt"); c.Held != 2 || c.Sold != 1 || c.Available != 7 {
		t.Errorf("counts %+v", c)
	}
	var se *StateError
	if _, err := f.s.LockSeat(f.ctx, "evt", "waiter", "A3"); !errors.As(err, &se) || se.State != StateWaiting {
		t.Errorf("state error %v", err)
	}
	t.Run("payment pending cannot change seat", func(t *testing.T) {
		f.s.InitiatePayment(f.ctx, "evt", "b", "pb")
		if _, err := f.s.LockSeat(f.ctx, "evt", "b", "A4"); !errors.Is(err, ErrInvalidState) {
			t.Fatal(err)
		}
	})
	t.Run("expired hold", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		if _, err := f.s.LockSeat(f.ctx, "evt", "a", "A5"); !errors.Is(err, ErrHoldExpired) {
			t.Fatal(err)
		}
	})
	if _, err := f.s.LockSeat(f.ctx, "nope", "a", "A1"); !errors.Is(err, ErrEventNotFound) {
		t.Fatal(err)
	}
	f.checkInvariants("evt")
}

func TestInitiatePayment(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2, Hold: time.Minute})
	f.join("evt", "a")
	f.join("evt", "b")
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "a", "p1"); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("without a seat: %v", err)
	}
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	ph, err := f.s.InitiatePayment(f.ctx, "evt", "a", "p1")
	want := PaymentHold{PaymentID: "p1", SeatID: "A1", Sequence: 1, ExpireAt: f.clock.Now().Add(time.Minute), Created: true,
		At: f.clock.Now()}
	if err != nil || ph != want {
		t.Fatalf("initiate: %+v %v", ph, err)
	}
	f.clock.Advance(time.Second) // a repeat keeps the first time (payment_initiated is republished as is)
	again, err := f.s.InitiatePayment(f.ctx, "evt", "a", "p2")
	want.Created = false
	if err != nil || again != want {
		t.Fatalf("repeat returns the first payment: %+v %v", again, err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "nobody", "p3"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "a", "bad id"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatal(err)
	}
	f.s.LockSeat(f.ctx, "evt", "b", "A2")
	f.clock.Advance(time.Minute)
	if _, err := f.s.InitiatePayment(f.ctx, "evt", "b", "p4"); !errors.Is(err, ErrHoldExpired) {
		t.Fatalf("expired: %v", err)
	}
	f.checkInvariants("evt")
}

func TestPaymentSuccess(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 4, Hold: time.Minute, Grace: 10 * time.Second})
	for _, u := range []string{"a", "b", "c", "d"} {
		f.join("evt", u)
	}
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	f.s.InitiatePayment(f.ctx, "evt", "a", "pa")
	f.s.LockSeat(f.ctx, "evt", "b", "A2")
	f.s.LockSeat(f.ctx, "evt", "c", "A3")
	f.s.InitiatePayment(f.ctx, "evt", "c", "pc")
	f.s.PaymentFailure(f.ctx, "evt", "c", "pc")

	r, err := f.s.PaymentSuccess(f.ctx, "evt", "a", "pa")
	if err != nil || r != (PaymentResult{Outcome: OutcomeCompleted, SeatID: "A1", Sequence: 1, At: f.clock.Now()}) {
		t.Fatalf("success: %+v %v", r, err)
	}
	if f.seats("evt")["A1"] != SeatSold || f.state("evt", "a") != StateCompleted {
		t.Fatal("seat not sold")
	}
	before := f.counts("evt")
	for _, tc := range []struct {
		name, user, pay string
		want            error
		outcome         Outcome
	}{
		{"duplicate is a no-op", "a", "pa", nil, OutcomeDuplicate},
		{"other payment id on a completed booking", "a", "forged", ErrPaymentMismatch, ""},
		{"no payment initiated", "b", "pb", ErrPaymentMismatch, ""},
		{"payment after failure is late", "c", "pc", ErrLatePayment, ""},
		{"unknown user", "zed", "p", ErrNotFound, ""},
		{"unknown event", "a", "pa", nil, OutcomeDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := "evt"
			if tc.name == "unknown event" {
				event, tc.want = "nope", ErrEventNotFound
			}
			r, err := f.s.PaymentSuccess(f.ctx, event, tc.user, tc.pay)
			if !errors.Is(err, tc.want) || (tc.want == nil && r.Outcome != tc.outcome) {
				t.Fatalf("%+v %v", r, err)
			}
		})
	}
	if after := f.counts("evt"); after != before {
		t.Fatalf("counts changed by rejected webhooks: %+v → %+v", before, after)
	}
	t.Run("a payment landing after the deadline but before release completes", func(t *testing.T) {
		f.s.InitiatePayment(f.ctx, "evt", "b", "pb")
		f.clock.Advance(65 * time.Second)
		if r, err := f.s.PaymentSuccess(f.ctx, "evt", "b", "pb"); err != nil || r.Outcome != OutcomeCompleted {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("a sold seat stays sold after every later step", func(t *testing.T) {
		f.clock.Advance(time.Hour)
		f.s.Promote(f.ctx, "evt", 0)
		f.s.HandleTimeout(f.ctx, "evt", "a")
		f.s.Cancel(f.ctx, "evt", "a")
		f.s.PaymentFailure(f.ctx, "evt", "a", "pa")
		if f.seats("evt")["A1"] != SeatSold || f.seats("evt")["A2"] != SeatSold {
			t.Fatal("sold seat freed")
		}
	})
	f.checkInvariants("evt")
}

func TestPaymentFailure(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 4, Hold: time.Minute, Grace: time.Second})
	for i, u := range []string{"a", "b", "c", "d"} {
		f.join("evt", u)
		f.s.LockSeat(f.ctx, "evt", u, "A"+strconv.Itoa(i+1))
		f.s.InitiatePayment(f.ctx, "evt", u, "p"+u)
	}
	f.join("evt", "next")
	r, err := f.s.PaymentFailure(f.ctx, "evt", "a", "pa")
	failedAt := f.clock.Now()
	if err != nil || r != (PaymentResult{Outcome: OutcomeFailed, SeatID: "A1", Sequence: 1, At: failedAt}) {
		t.Fatalf("failure: %+v %v", r, err)
	}
	f.clock.Advance(time.Second) // a repeat keeps the first time (payment_failed is republished as is)
	if r, err := f.s.PaymentFailure(f.ctx, "evt", "a", "pa"); err != nil ||
		r != (PaymentResult{Outcome: OutcomeDuplicate, SeatID: "A1", Sequence: 1, At: failedAt}) {
		t.Fatalf("repeated failure: %+v %v", r, err)
	}
	if f.seats("evt")["A1"] != SeatAvailable || f.state("evt", "a") != StateFailed {
		t.Fatal("failed payment kept the seat")
	}
	if c := f.counts("evt"); c.Active != 3 || c.Held != 3 {
		t.Fatalf("counts %+v", c)
	}
	f.s.PaymentSuccess(f.ctx, "evt", "b", "pb")
	for _, tc := range []struct {
		name, user, pay string
		want            error
		outcome         Outcome
	}{
		{"duplicate", "a", "pa", nil, OutcomeDuplicate},
		{"wrong payment id", "c", "forged", ErrPaymentMismatch, ""},
		{"after success", "b", "pb", ErrAlreadyCompleted, ""},
		{"unknown user", "zed", "p", ErrNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.s.PaymentFailure(f.ctx, "evt", tc.user, tc.pay)
			if !errors.Is(err, tc.want) || (tc.want == nil && r.Outcome != tc.outcome) {
				t.Fatalf("%+v %v", r, err)
			}
		})
	}
	t.Run("after the hold expired", func(t *testing.T) {
		f.clock.Advance(time.Minute + time.Second)
		f.s.Promote(f.ctx, "evt", 0)
		r, err := f.s.PaymentFailure(f.ctx, "evt", "c", "pc")
		if err != nil || r.Outcome != OutcomeNoHold {
			t.Fatalf("%+v %v", r, err)
		}
	})
	f.checkInvariants("evt")
}

func TestHandleTimeout(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 4, Hold: time.Minute, Grace: 20 * time.Second})
	for _, u := range []string{"a", "b", "c", "d"} {
		f.join("evt", u)
	}
	deadline := f.clock.Now().Add(time.Minute)
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	f.s.LockSeat(f.ctx, "evt", "b", "A2")
	f.s.InitiatePayment(f.ctx, "evt", "b", "pb")
	f.buy("evt", "c", "A3")

	step := func(user string, want TimeoutResult) {
		t.Helper()
		got, err := f.s.HandleTimeout(f.ctx, "evt", user)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("timeout %s (-want +got):\n%s", user, diff)
		}
	}
	step("a", TimeoutResult{Outcome: OutcomeNotDue, Sequence: 1, SeatID: "A1", ExpireAt: deadline})
	f.clock.Advance(time.Minute)
	// a release writes the expiry's outbox entry (booking_expired at the
	// deadline), returned again while it is not announced
	xa := []OutboxEntry{{Kind: "expired", UserID: "a", Sequence: 1, SeatID: "A1", ExpireAt: deadline, At: f.clock.Now()}}
	step("a", TimeoutResult{Outcome: OutcomeReleased, Sequence: 1, SeatID: "A1", ExpireAt: deadline, Outbox: xa})
	step("a", TimeoutResult{Outcome: OutcomeNoHold, Sequence: 1, SeatID: "A1", AlreadyExpired: true, Outbox: xa})
	if err := f.s.AckOutbox(f.ctx, "evt", xa...); err != nil {
		t.Fatal(err)
	}
	step("a", TimeoutResult{Outcome: OutcomeNoHold, Sequence: 1, SeatID: "A1", AlreadyExpired: true})
	if f.seats("evt")["A1"] != SeatAvailable {
		t.Fatal("timeout kept the seat")
	}
	step("b", TimeoutResult{Outcome: OutcomeExtended, Sequence: 2, SeatID: "A2", PaymentID: "pb", ExpireAt: deadline.Add(20 * time.Second)})
	step("b", TimeoutResult{Outcome: OutcomeNotDue, Sequence: 2, SeatID: "A2", PaymentID: "pb", ExpireAt: deadline.Add(20 * time.Second)})
	step("c", TimeoutResult{Outcome: OutcomeNoHold, Sequence: 3, SeatID: "A3", PaymentID: "pay-c"})
	step("nobody", TimeoutResult{Outcome: OutcomeNoHold})
	f.clock.Advance(20 * time.Second)
	step("b", TimeoutResult{Outcome: OutcomeReleased, Sequence: 2, SeatID: "A2", PaymentID: "pb", ExpireAt: deadline.Add(20 * time.Second),
		Outbox: []OutboxEntry{{Kind: "expired", UserID: "b", Sequence: 2, SeatID: "A2", ExpireAt: deadline.Add(20 * time.Second), At: f.clock.Now()}}})
	if st := f.state("evt", "b"); st != StateExpired {
		t.Fatalf("b is %s", st)
	}
	// d was reclaimed by a promotion; its late timeout asks to republish
	f.s.Promote(f.ctx, "evt", 0)
	step("d", TimeoutResult{Outcome: OutcomeNoHold, Sequence: 4, AlreadyExpired: true,
		Outbox: []OutboxEntry{{Kind: "expired", UserID: "d", Sequence: 4, ExpireAt: deadline, At: f.clock.Now()}}})
	if _, err := f.s.HandleTimeout(f.ctx, "nope", "a"); !errors.Is(err, ErrEventNotFound) {
		t.Fatal(err)
	}
	f.checkInvariants("evt")
}

func TestCancel(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 3})
	for _, u := range []string{"a", "b", "c", "w"} {
		f.join("evt", u)
	}
	f.s.LockSeat(f.ctx, "evt", "a", "A1")
	f.s.LockSeat(f.ctx, "evt", "b", "A2")
	f.s.InitiatePayment(f.ctx, "evt", "b", "pb")
	now := f.clock.Now()
	entry := func(user, from, seat string, seq int64) []OutboxEntry {
		return []OutboxEntry{{Kind: "cancelled", UserID: user, Sequence: seq, SeatID: seat, From: from, At: now}}
	}
	for _, tc := range []struct {
		name, user string
		want       CancelResult
		err        error
	}{
		{"from the queue", "w", CancelResult{From: "queue", Sequence: 4, Outbox: entry("w", "queue", "", 4)}, nil},
		{"from the room, freeing the seat", "a", CancelResult{From: "active", SeatID: "A1", Sequence: 1, Outbox: entry("a", "active", "A1", 1)}, nil},
		{"from the room without a seat", "c", CancelResult{From: "active", Sequence: 3, Outbox: entry("c", "active", "", 3)}, nil},
		{"again, not yet announced: same entry", "a", CancelResult{From: "active", SeatID: "A1", Sequence: 1, Duplicate: true, Outbox: entry("a", "active", "A1", 1)}, nil},
		{"during payment", "b", CancelResult{}, ErrCannotCancel},
		{"unknown user", "zed", CancelResult{}, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.s.Cancel(f.ctx, "evt", tc.user)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	if f.seats("evt")["A1"] != SeatAvailable || f.state("evt", "a") != StateCancelled || f.state("evt", "w") != StateCancelled {
		t.Fatal("cancel left state behind")
	}
	if c := f.counts("evt"); c.Active != 1 || c.Waiting != 0 || c.Held != 1 {
		t.Fatalf("counts %+v", c)
	}
	t.Run("again after the announcement: nothing pending", func(t *testing.T) {
		r, _ := f.s.Cancel(f.ctx, "evt", "a")
		if err := f.s.AckOutbox(f.ctx, "evt", r.Outbox...); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.Cancel(f.ctx, "evt", "a")
		if err != nil || !got.Duplicate || len(got.Outbox) != 0 || got.Sequence != 1 {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("a finished booking cannot be cancelled", func(t *testing.T) {
		f.s.PaymentSuccess(f.ctx, "evt", "b", "pb")
		if _, err := f.s.Cancel(f.ctx, "evt", "b"); !errors.Is(err, ErrInvalidState) {
			t.Fatal(err)
		}
	})
	f.checkInvariants("evt")
}

func TestOutbox(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 2, Hold: time.Minute})
	a := f.join("evt", "a")
	f.clock.Advance(10 * time.Second)
	b := f.join("evt", "b")
	all, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(a.Outbox, b.Outbox...), all); diff != "" {
		t.Fatalf("outbox (-want +got):\n%s", diff)
	}
	old, _ := f.s.Outbox(f.ctx, "evt", 5*time.Second)
	if diff := cmp.Diff(a.Outbox, old); diff != "" {
		t.Fatalf("stale entries (-want +got):\n%s", diff)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", a.Outbox...); err != nil {
		t.Fatal(err)
	}
	// a changed entry (b cancelled, joined again and was re-admitted) is not
	// removed by an ack of the old one
	bc, _ := f.s.Cancel(f.ctx, "evt", "b")
	f.clock.Advance(time.Second)
	b2 := f.join("evt", "b")
	// each join of b has its own joined entry (booking_request per sequence)
	var joins []int64
	all, _ = f.s.Outbox(f.ctx, "evt", 0)
	for _, e := range all {
		if e.Kind == "joined" && e.UserID == "b" {
			joins = append(joins, e.Sequence)
		}
	}
	if !cmp.Equal(joins, []int64{2, 3}) {
		t.Fatalf("b's joined entries: %v in %+v", joins, all)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", append(b.Outbox, bc.Outbox...)...); err != nil {
		t.Fatal(err)
	}
	left, _ := f.s.Outbox(f.ctx, "evt", 0)
	if diff := cmp.Diff(b2.Outbox, left); diff != "" {
		t.Fatalf("after acks (-want +got):\n%s", diff)
	}
	// expiries reclaimed by a promotion are in the outbox too
	f.clock.Advance(time.Minute)
	p, _ := f.s.Promote(f.ctx, "evt", 0)
	left, _ = f.s.Outbox(f.ctx, "evt", 0)
	// a's and b's expiries, plus b's second join and admission never acked
	if len(p.Outbox) != 2 || p.Outbox[0].Kind != "expired" || len(left) != 4 {
		t.Fatalf("promote outbox %+v, outbox %+v", p.Outbox, left)
	}
	if err := f.s.AckOutbox(f.ctx, "evt", left...); err != nil {
		t.Fatal(err)
	}
	if left, _ = f.s.Outbox(f.ctx, "evt", 0); len(left) != 0 {
		t.Fatalf("outbox not empty: %+v", left)
	}
}

// TestOutboxReadBounded: a backlog larger than OutboxReadMax (a long Kafka
// outage during an on-sale) is read in bounded steps, oldest sequences
// first, and drains completely by repeated sweeps.
func TestOutboxReadBounded(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1})
	key := f.s.eventKeys("evt")[kOutbox]
	n := OutboxReadMax + 500
	at := f.clock.Now().UnixMilli()
	pipe := f.rdb.Pipeline()
	for seq := 1; seq <= n; seq++ {
		pipe.HSet(f.ctx, key, fmt.Sprintf("j:%d", seq), fmt.Sprintf("%d|u%d||%d", seq, seq, at))
	}
	if _, err := pipe.Exec(f.ctx); err != nil {
		t.Fatal(err)
	}
	first, err := f.s.Outbox(f.ctx, "evt", 0)
	if err != nil || len(first) != OutboxReadMax {
		t.Fatalf("first read: %d entries, %v", len(first), err)
	}
	for i := 1; i < len(first); i++ {
		if first[i].Sequence <= first[i-1].Sequence {
			t.Fatalf("not in sequence order at %d: %d after %d", i, first[i].Sequence, first[i-1].Sequence)
		}
	}
	if first[0].Kind != "joined" || first[0].UserID != fmt.Sprintf("u%d", first[0].Sequence) {
		t.Fatalf("parsed %+v", first[0])
	}
	total := 0
	for batch := first; len(batch) > 0; batch, err = f.s.Outbox(f.ctx, "evt", 0) {
		if err != nil {
			t.Fatal(err)
		}
		total += len(batch)
		if err := f.s.AckOutbox(f.ctx, "evt", batch...); err != nil {
			t.Fatal(err)
		}
	}
	if total != n {
		t.Fatalf("drained %d entries, want %d", total, n)
	}
}

func TestSeatsAndCounts(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Seats: []string{"S1", "S2", "S3", "S4"}, Capacity: 3})
	f.join("evt", "a")
	f.join("evt", "b")
	f.join("evt", "c")
	f.join("evt", "d")
	f.buy("evt", "a", "S2")
	f.s.LockSeat(f.ctx, "evt", "b", "S4")
	all, err := f.s.Seats(f.ctx, "evt")
	want := []Seat{{"S1", SeatAvailable}, {"S2", SeatSold}, {"S3", SeatAvailable}, {"S4", SeatHeld}}
	if err != nil || !cmp.Equal(want, all) {
		t.Fatalf("seats %v %v", all, err)
	}
	c := f.counts("evt")
	wantC := Counts{Total: 4, Available: 2, Held: 1, Sold: 1, Waiting: 1, Active: 2, Served: 3, AdmittedLastMinute: 3}
	if diff := cmp.Diff(wantC, c); diff != "" {
		t.Fatalf("counts (-want +got):\n%s", diff)
	}
	if _, err := f.s.Seats(f.ctx, "nope"); !errors.Is(err, ErrEventNotFound) {
		t.Fatal(err)
	}
	f.checkInvariants("evt")
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{"evt-1": true, "user@example.com": true, "": false, "a b": false,
		"a{b": false, "a|b": false, "é": false, string(make([]byte, 129)): false} {
		if ValidID(id) != want {
			t.Errorf("ValidID(%q) != %v", id, want)
		}
	}
}
