package booking

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
			want := JoinResult{State: StateActive, Sequence: int64(i + 1), ExpireAt: now.Add(DefaultHold), Created: true, At: now,
				Outbox: []OutboxEntry{{Kind: KindJoined, UserID: u, Sequence: int64(i + 1), At: now},
					{Kind: KindPromoted, UserID: u, Sequence: int64(i + 1), ExpireAt: now.Add(DefaultHold), At: now}}}
			if diff := cmp.Diff(want, r); diff != "" {
				t.Errorf("join %s (-want +got):\n%s", u, diff)
			}
		}
	})
	t.Run("queued when full, FIFO positions", func(t *testing.T) {
		for i, u := range []string{"c", "d", "e"} {
			r := f.join("evt", u)
			joined := []OutboxEntry{{Kind: KindJoined, UserID: u, Sequence: int64(i + 3), At: now}}
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
			ExpireAt: f.clock.Now().Add(DefaultHold), Counts: Counts{Served: 1, Waiting: 2, AdmittedLastMinute: 1}, At: f.clock.Now()}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, st); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("not found still reports the event", func(t *testing.T) {
		_, err := f.s.Position(f.ctx, "evt", "nobody")
		var nf *NotFoundError
		if !errors.Is(err, ErrNotFound) || !errors.As(err, &nf) || nf.Status.Counts.Waiting != 2 {
			t.Fatalf("%v", err)
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
			if e.Kind == KindCancelled {
				gone = append(gone, e)
			}
		}
		want := []OutboxEntry{{Kind: KindCancelled, UserID: "gone", Sequence: 2, From: FromAbandoned, At: f.clock.Now()}}
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
