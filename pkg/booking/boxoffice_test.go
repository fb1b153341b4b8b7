package booking

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/redis/go-redis/v9"
)

func (f *fixture) sell(sale BoxOfficeSale) (BoxOfficeResult, error) {
	f.t.Helper()
	if sale.EventID == "" {
		sale.EventID = "evt"
	}
	return f.s.SellAtBoxOffice(f.ctx, sale)
}

func TestBoxOfficeSale(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{Capacity: 10, MaxSeatsPerOrder: 4}) // A1…B5
	release := f.clock.Now().Add(time.Hour)
	if _, err := f.s.AllocateSeats(f.ctx, "evt", ChannelBoxOffice, release, []string{"A1", "A2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.AllocateSeats(f.ctx, "evt", "partner", release, []string{"A3"}); err != nil {
		t.Fatal(err)
	}
	f.mark("evt", MarkHold, "sponsor", "B1")
	f.mark("evt", MarkKill, "", "B2")
	f.join("evt", "fan")
	if _, err := f.s.LockSeats(f.ctx, "evt", "fan", []string{"A5"}); err != nil {
		t.Fatal(err)
	}

	// the channel's own seat and a general one, sold at once
	res, err := f.sell(BoxOfficeSale{SaleID: "s1", SeatIDs: []string{"A1", "A4"}})
	if err != nil || res.Outcome != OutcomeCompleted || !slices.Equal(res.SeatIDs, []string{"A1", "A4"}) || res.At.IsZero() {
		t.Fatalf("sell: %+v %v", res, err)
	}
	if st := f.seats("evt"); st["A1"] != SeatSold || st["A4"] != SeatSold {
		t.Fatalf("seats after the sale: %v", st)
	}
	if c := f.counts("evt"); c.Sold != 2 || c.Allocated != 2 {
		t.Fatalf("counts %+v", c)
	}
	f.checkInvariants("evt")
	// a repeat sells nothing more, whatever it asks
	again, err := f.sell(BoxOfficeSale{SaleID: "s1", SeatIDs: []string{"B3"}})
	if err != nil || again.Outcome != OutcomeDuplicate || !slices.Equal(again.SeatIDs, []string{"A1", "A4"}) || !again.At.Equal(res.At) {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if c := f.counts("evt"); c.Sold != 2 {
		t.Fatalf("a repeat sold more: %+v", c)
	}

	// refusals change nothing
	before := f.seats("evt")
	for _, tc := range []struct {
		seats []string
		want  error
		named []string
	}{
		{[]string{"A2", "A3"}, ErrSeatNotForSale, []string{"A3"}},  // another channel's
		{[]string{"B1"}, ErrSeatNotForSale, []string{"B1"}},        // held by operators
		{[]string{"B2"}, ErrSeatNotForSale, []string{"B2"}},        // killed
		{[]string{"B3", "A5"}, ErrSeatUnavailable, []string{"A5"}}, // a fan's hold
		{[]string{"A1"}, ErrSeatUnavailable, []string{"A1"}},       // sold
		{[]string{"B3", "B4", "B5", "A2", "B1"}, ErrTooManySeats, nil},
		{[]string{"Z9"}, ErrSeatUnknown, nil},
		{[]string{"B3", "B3"}, ErrInvalidArgument, nil},
	} {
		_, err := f.sell(BoxOfficeSale{SaleID: "s2", SeatIDs: tc.seats})
		if !errors.Is(err, tc.want) {
			t.Fatalf("%v: %v, want %v", tc.seats, err, tc.want)
		}
		var kept *SeatsNotForSaleError
		var taken *SeatsTakenError
		switch {
		case errors.As(err, &kept) && !slices.Equal(kept.Seats, tc.named),
			errors.As(err, &taken) && !slices.Equal(taken.Seats, tc.named):
			t.Fatalf("%v: %v names the wrong seats", tc.seats, err)
		}
	}
	if _, err := f.sell(BoxOfficeSale{SaleID: "s2", Count: 5}); !errors.Is(err, ErrTooManySeats) {
		t.Fatalf("count over the limit: %v", err)
	}
	if _, err := f.sell(BoxOfficeSale{SaleID: "s2", Count: 1, Section: "nope"}); !errors.Is(err, ErrSectionUnknown) {
		t.Fatalf("unknown section: %v", err)
	}
	if _, err := f.sell(BoxOfficeSale{EventID: "nope", SaleID: "s2", Count: 1}); !errors.Is(err, ErrEventNotFound) {
		t.Fatalf("unknown event: %v", err)
	}
	if got := f.seats("evt"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("a refusal changed the seats: %v, was %v", got, before)
	}
	f.checkInvariants("evt")

	// through another channel: its seat, never the box office's
	if _, err := f.sell(BoxOfficeSale{SaleID: "s3", Channel: "partner", SeatIDs: []string{"A2"}}); !errors.Is(err, ErrSeatNotForSale) {
		t.Fatalf("another channel's sale of a box-office seat: %v", err)
	}
	if _, err := f.sell(BoxOfficeSale{SaleID: "s3", Channel: "partner", SeatIDs: []string{"A3"}}); err != nil {
		t.Fatalf("the partner's own seat: %v", err)
	}
	// best available: the channel's own seat first
	best, err := f.sell(BoxOfficeSale{SaleID: "s4", Count: 1})
	if err != nil || !slices.Equal(best.SeatIDs, []string{"A2"}) {
		t.Fatalf("best available: %+v %v", best, err)
	}
	f.checkInvariants("evt")

	// the order cancelled: its seats go back where they came from
	rel, err := f.s.ReleaseSold(f.ctx, "evt", BoxOfficeBuyer("s1"), BoxOfficePaymentID("evt", "s1"), []string{"A1", "A4"})
	if err != nil || rel.Released != 2 {
		t.Fatalf("release: %+v %v", rel, err)
	}
	if st := f.seats("evt"); st["A1"] != SeatAllocated || st["A4"] != SeatAvailable {
		t.Fatalf("seats after the cancellation: %v", st)
	}
	f.checkInvariants("evt")

	// the sale's end closes the box office too
	end := f.clock.Now().Add(time.Minute)
	if _, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{SalesEnd: &end}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute)
	if _, err := f.sell(BoxOfficeSale{SaleID: "s5", SeatIDs: []string{"B3"}}); !errors.Is(err, ErrSalesEnded) {
		t.Fatalf("after the sale's end: %v", err)
	}
}

// A box-office sale and a fan's selection of the same seat, racing: one
// of them gets it, never both.
func TestBoxOfficeSaleRacesFanSelection(t *testing.T) {
	f := newFixture(t)
	const n = 40
	f.event(EventConfig{Capacity: n, Rows: 4, SeatsPerRow: 10, MaxSeatsPerOrder: 4})
	for i := range n {
		f.join("evt", fmt.Sprintf("u%d", i))
	}
	fanWins, boxWins := 0, 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		seat := fmt.Sprintf("%c%d", 'A'+i/10, i%10+1)
		wg.Add(2)
		var fanErr, boxErr error
		go func() {
			defer wg.Done()
			_, fanErr = f.s.LockSeats(f.ctx, "evt", fmt.Sprintf("u%d", i), []string{seat})
		}()
		go func() {
			defer wg.Done()
			_, boxErr = f.s.SellAtBoxOffice(f.ctx, BoxOfficeSale{EventID: "evt", SaleID: fmt.Sprintf("s%d", i), SeatIDs: []string{seat}})
		}()
		wg.Wait()
		mu.Lock()
		switch {
		case fanErr == nil && errors.Is(boxErr, ErrSeatUnavailable):
			fanWins++
		case boxErr == nil && errors.Is(fanErr, ErrSeatUnavailable):
			boxWins++
		default:
			t.Fatalf("seat %s: fan %v, box office %v", seat, fanErr, boxErr)
		}
		mu.Unlock()
	}
	if c := f.counts("evt"); c.Sold != int64(boxWins) || c.Held != int64(fanWins) {
		t.Fatalf("counts %+v after %d box-office and %d fan wins", c, boxWins, fanWins)
	}
	f.checkInvariants("evt")
	t.Logf("box office won %d seats, fans %d", boxWins, fanWins)
}

// BenchmarkSellAtBoxOffice: box-office sales of 2 seats best available
// into an event of 100,000 seats, 50 concurrent callers (one op = one
// sale; run it with -benchtime Nx, N <= 50,000).
func BenchmarkSellAtBoxOffice(b *testing.B) {
	s, ctx := benchStore(b, EventConfig{Rows: 400, SeatsPerRow: 250, Capacity: 1, MaxSeatsPerOrder: 4})
	parallel(b, func(i int64) {
		if _, err := s.SellAtBoxOffice(ctx, BoxOfficeSale{EventID: "bench", SaleID: fmt.Sprintf("s%d", i), Count: 2}); err != nil {
			b.Error(err)
		}
	})
}

// The pending sales of many events are read in one pipelined round trip
// per chunk of events, each event answered on its own as
// PendingBoxOfficeSales answers it: its sales older than the age asked,
// oldest first; none for an event without (or gone); an error for a bad
// id, which costs no command.
func TestPendingBoxOfficeSalesOfManyEvents(t *testing.T) {
	f := newFixture(t)
	events := []string{"e0", "e1", "e2", "e3", "e4"}
	for i, id := range events {
		f.event(EventConfig{ID: id})
		for j := range i % 3 { // e0 none, e1 one, e2 two, e3 none, e4 one
			f.clock.Advance(time.Second)
			if _, err := f.sell(BoxOfficeSale{EventID: id, SaleID: fmt.Sprintf("s%d", j), Count: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.clock.Advance(10 * time.Second)
	if _, err := f.sell(BoxOfficeSale{EventID: "e4", SaleID: "young", Count: 1}); err != nil {
		t.Fatal(err)
	}

	log := &commandLog{}
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	t.Cleanup(func() { rdb.Close() })
	rdb.AddHook(log)
	s := New(rdb, WithPrefix(f.s.prefix), WithClock(f.clock.Now), WithAutoPipeline(0))
	t.Cleanup(s.Close)
	asked := append(slices.Clone(events), "gone", "bad id")
	got := s.pendingBoxOfficeSalesOf(f.ctx, asked, 5*time.Second, 3)
	cmds := log.take()
	if log.pipelines != 2 { // [e0 e1 e2] [e3 e4 gone]; the bad id alone sends nothing
		t.Fatalf("%d pipelines (%v), want 2", log.pipelines, cmds)
	}
	for _, c := range cmds {
		if c != "hgetall" && c != "hello" && c != "client" { // a new connection's handshake
			t.Fatalf("commands %v: want only hgetall", cmds)
		}
	}
	want := map[string][]string{"e1": {"box_e1_s0"}, "e2": {"box_e2_s0", "box_e2_s1"}, "e4": {"box_e4_s0"}}
	if len(got) != len(asked) {
		t.Fatalf("%d answers for %d events", len(got), len(asked))
	}
	for i, ev := range got {
		if ev.EventID != asked[i] {
			t.Fatalf("answer %d is %s's, want %s's", i, ev.EventID, asked[i])
		}
		if ev.EventID == "bad id" {
			var idErr *IDError
			if !errors.As(ev.Err, &idErr) || ev.Sales != nil {
				t.Fatalf("bad id: %+v, want an IDError", ev)
			}
			continue
		}
		var pids []string
		for _, r := range ev.Sales {
			if r.EventID != ev.EventID || len(r.SeatIDs) != 1 {
				t.Fatalf("%s: record %+v", ev.EventID, r)
			}
			pids = append(pids, r.PaymentID)
		}
		if ev.Err != nil || !slices.Equal(pids, want[ev.EventID]) {
			t.Fatalf("%s: %v %v, want %v", ev.EventID, pids, ev.Err, want[ev.EventID])
		}
		one, err := f.s.PendingBoxOfficeSales(f.ctx, ev.EventID, 5*time.Second)
		if err != nil || !slices.EqualFunc(one, ev.Sales, func(a, b BoxOfficeRecord) bool { return a.PaymentID == b.PaymentID && a.At.Equal(b.At) }) {
			t.Fatalf("%s: one event's read %+v %v, the many events' %+v", ev.EventID, one, err, ev.Sales)
		}
	}
}
