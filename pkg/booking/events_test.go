package booking

import (
	"errors"
	"strings"
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
					Counts: Counts{Total: 50, Available: 50}, Currency: DefaultCurrency,
					MaxSeatsPerOrder: DefaultMaxSeatsPerOrder, Sections: []EventSection{{Name: DefaultSectionName, Len: 50}},
					Challenge: ChallengeNone, Audience: AudiencePublic, FinishAfterEnd: true, OnPhaseChange: PhaseChangeKeep, At: f.clock.Now()}
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

// A change tagged with the ledger's revision is kept for undoing until
// SettleSettings hears the ledger's revision: a later one than the
// ledger's is undone, field by field where the field still has its value,
// and an abandonment switched on loses its start with it; one the ledger
// has stays. Either way the record is gone after.
func TestSettleSettings(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 1})
	five, seven, bad := 5, 7, 8
	abandon := time.Minute
	if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Capacity: &five, Revision: 3}); err != nil {
		t.Fatal(err)
	}
	if undone, err := f.s.SettleSettings(f.ctx, "evt", 3); err != nil || len(undone) != 0 {
		t.Fatalf("committed change: undone %v %v", undone, err)
	}
	if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Capacity: &seven, Abandon: &abandon, Revision: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Capacity: &bad, Revision: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative revision: %v", err)
	}
	undone, err := f.s.SettleSettings(f.ctx, "evt", 3)
	if err != nil || strings.Join(undone, ",") != "capacity,abandon_ms,abandon_since_ms" {
		t.Fatalf("rolled back change: undone %v %v", undone, err)
	}
	e, err := f.s.GetEvent(f.ctx, "evt")
	if err != nil || e.Capacity != 5 || e.Abandon != 0 {
		t.Fatalf("after the undo: capacity %d abandon %v %v", e.Capacity, e.Abandon, err)
	}
	if since, _ := f.rdb.HExists(f.ctx, f.s.eventKeys("evt")[kConfig], "abandon_since_ms").Result(); since {
		t.Fatal("abandon_since_ms kept after its change was undone")
	}
	if undone, err := f.s.SettleSettings(f.ctx, "evt", 3); err != nil || len(undone) != 0 {
		t.Fatalf("settled twice: undone %v %v", undone, err)
	}
	if _, err := f.s.SettleSettings(f.ctx, "nope", 3); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
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
