package booking

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// commandLog records the names of the commands a client sends.
type commandLog struct {
	mu        sync.Mutex
	cmds      []string
	pipelines int // pipelines sent (each one round trip), but a new connection's handshake
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.add(cmd)
		return next(ctx, cmd)
	}
}
func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[0].Name() != "hello" && cmds[0].Name() != "client" {
			l.mu.Lock()
			l.pipelines++
			l.mu.Unlock()
		}
		for _, c := range cmds {
			l.add(c)
		}
		return next(ctx, cmds)
	}
}
func (l *commandLog) add(c redis.Cmder) {
	l.mu.Lock()
	l.cmds = append(l.cmds, c.Name())
	l.mu.Unlock()
}
func (l *commandLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.cmds
	l.cmds = nil
	return out
}

func TestSeatStatuses(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Rows: 2, SeatsPerRow: 3, Capacity: 3})
	if st, err := f.s.SeatStatuses(f.ctx, "evt"); err != nil || st != "aaaaaa" {
		t.Fatalf("new event: %q %v", st, err)
	}
	for _, u := range []string{"u1", "u2", "u3"} {
		f.join("evt", u)
	}
	f.buy("evt", "u1", "A2")
	if _, err := f.s.LockSeat(f.ctx, "evt", "u2", "B1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.LockSeat(f.ctx, "evt", "u3", "B3"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.LockSeat(f.ctx, "evt", "u3", "A3"); err != nil { // swap frees B3
		t.Fatal(err)
	}
	if st, _ := f.s.SeatStatuses(f.ctx, "evt"); st != "ashhaa" {
		t.Fatalf("after buy, hold and swap: %q", st)
	}
	if _, err := f.s.Cancel(f.ctx, "evt", "u2"); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.s.SeatStatuses(f.ctx, "evt"); st != "ashaaa" {
		t.Fatalf("after cancel: %q", st)
	}
	f.checkInvariants("evt")

	if _, err := f.s.SeatStatuses(f.ctx, "nope"); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
	if _, err := f.s.SeatMapIDs(f.ctx, "nope"); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("unknown event ids: %v", err)
	}
}

// The read is plain commands, never a script, whatever the map's size.
func TestSeatStatusesIsAPlainRead(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Rows: 100, SeatsPerRow: 100})
	log := &commandLog{}
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(log)
	s := New(rdb, WithPrefix(f.s.prefix), WithAutoPipeline(0))
	for range 3 {
		if st, err := s.SeatStatuses(f.ctx, "evt"); err != nil || len(st) != 10_000 {
			t.Fatalf("%d bytes, %v", len(st), err)
		}
	}
	got := log.take()
	for _, c := range got {
		if c == "hello" || c == "client" { // a new connection's handshake
			continue
		}
		if c != "get" && c != "hget" {
			t.Fatalf("commands %v: want only get and hget", got)
		}
	}
}

// An event created before the status string existed (no status, no seat
// index) is rebuilt from the seats hash on its first read, and is kept
// current from then on — a grid (index computed from the id) and an
// explicit map (index looked up) alike.
func TestSeatStatusesRebuildsALegacyEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  EventConfig
	}{
		{"grid", EventConfig{Rows: 1, SeatsPerRow: 4, Capacity: 2}},
		{"explicit", EventConfig{Seats: []string{"A1", "A2", "A3", "A4"}, Capacity: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.event(tc.cfg)
			f.join("evt", "u1")
			f.join("evt", "u2")
			f.buy("evt", "u1", "A1")
			k := keysFor(f.s.prefix, "evt")
			f.rdb.Del(f.ctx, k[kStatus], k[kSeatidx])
			// a change while the string is missing leaves at most a string
			// with holes, never a wrong byte
			if _, err := f.s.LockSeat(f.ctx, "evt", "u2", "A3"); err != nil {
				t.Fatal(err)
			}
			if st, err := f.s.SeatStatuses(f.ctx, "evt"); err != nil || st != "saha" {
				t.Fatalf("rebuilt: %q %v", st, err)
			}
			if _, err := f.s.Cancel(f.ctx, "evt", "u2"); err != nil {
				t.Fatal(err)
			}
			if st, _ := f.s.SeatStatuses(f.ctx, "evt"); st != "saaa" {
				t.Fatalf("after rebuild, kept current: %q", st)
			}
			// a damaged string (wrong length) is rebuilt too
			f.rdb.Set(f.ctx, k[kStatus], "s", 0)
			if st, _ := f.s.SeatStatuses(f.ctx, "evt"); st != "saaa" {
				t.Fatalf("damaged: %q", st)
			}
			f.checkInvariants("evt")
		})
	}
}

// A grid's seat index is computed from the id (A…Z, AA…): the status
// string stays right past row Z.
func TestSeatStatusOfAGridPastRowZ(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Rows: 30, SeatsPerRow: 3, Capacity: 3})
	for _, u := range []string{"u1", "u2", "u3"} {
		f.join("evt", u)
	}
	f.buy("evt", "u1", "AD3") // the last seat: row 30
	if _, err := f.s.LockSeat(f.ctx, "evt", "u2", "AA1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.LockSeat(f.ctx, "evt", "u3", "Z2"); err != nil {
		t.Fatal(err)
	}
	f.checkInvariants("evt")
	if n, _ := f.rdb.Exists(f.ctx, keysFor(f.s.prefix, "evt")[kSeatidx]).Result(); n != 0 {
		t.Fatal("a grid keeps a seat index")
	}
}

func TestSeatSections(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		want []SeatSection
	}{
		{"grid", SeatIDs(2, 3), []SeatSection{{Row: "A", First: 1, Start: 0, Len: 3}, {Row: "B", First: 1, Start: 3, Len: 3}}},
		{"gap starts a section", []string{"A1", "A2", "A4"}, []SeatSection{{Row: "A", First: 1, Len: 2}, {Row: "A", First: 4, Start: 2, Len: 1}}},
		{"other ids listed", []string{"VIP-1", "box", "A1", "A01", "x"},
			[]SeatSection{{IDs: []string{"VIP-1", "box"}, Len: 2}, {Row: "A", First: 1, Start: 2, Len: 1}, {IDs: []string{"A01", "x"}, Start: 3, Len: 2}}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, SeatSections(tc.ids)); d != "" {
				t.Fatal(d)
			}
		})
	}
}
