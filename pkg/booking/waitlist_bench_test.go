package booking

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkWaitlistOffers: 10,000 fans on the waitlist of a sold-out event
// of 1,000 seats, all held; the 1,000 holders cancel, 50 at a time, and
// every seat returned is offered in the same step; each offered fan
// accepts or declines (every other one declines, which passes the seat
// on), until every seat is accepted. It fails unless 1,000 offers end
// accepted and none is outstanding. Reported: return_to_offer_p99_ms (a
// seat's return until its offer is made, measured around the call that
// returns it; the offer is made inside it) and offers/op.
func BenchmarkWaitlistOffers(b *testing.B) {
	const seats, fans = 1000, 10_000
	s, ctx := benchStore(b, EventConfig{ID: "wl-0", Rows: 10, SeatsPerRow: seats / 10, Capacity: seats, BatchSize: seats})
	var lat []time.Duration
	var offers int
	for i := range b.N {
		ev := "wl-" + strconv.Itoa(i)
		if i > 0 {
			if _, err := s.CreateEvent(ctx, EventConfig{ID: ev, Rows: 10, SeatsPerRow: seats / 10, Capacity: seats, BatchSize: seats}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		seatIDs := waitlistBenchSetup(b, s, ctx, ev, seats, fans)
		b.StartTimer()
		l, n := waitlistBenchRun(b, s, ctx, ev, seatIDs, fans)
		lat = append(lat, l...)
		offers += n
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "return_to_offer_p99_ms")
	b.ReportMetric(float64(offers)/float64(b.N), "offers/op")
}

// fanOut runs f(i) for i in [0, n) on benchClients goroutines.
func fanOut(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// waitlistBenchSetup sells out ev (every seat held by h<i>) and waitlists
// fans f<i> in order; it returns the seat ids.
func waitlistBenchSetup(b *testing.B, s *Store, ctx context.Context, ev string, seats, fans int) []string {
	b.Helper()
	if err := s.SetWaitlist(ctx, ev, WaitlistSettings{OfferTime: time.Hour}); err != nil {
		b.Fatal(err)
	}
	all, err := s.Seats(ctx, ev)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, len(all))
	for i, st := range all {
		ids[i] = st.ID
	}
	fanOut(seats, func(i int) {
		if _, err := s.Enqueue(ctx, ev, "h"+strconv.Itoa(i)); err != nil {
			b.Error(err)
		}
	})
	for {
		r, err := s.Promote(ctx, ev, 0)
		if err != nil {
			b.Fatal(err)
		}
		if r.Reason != "batch" {
			break
		}
	}
	fanOut(seats, func(i int) {
		if _, err := s.LockSeat(ctx, ev, "h"+strconv.Itoa(i), ids[i]); err != nil {
			b.Error(err)
		}
	})
	// in order: a fan's place is the order of their join
	for i := range fans {
		if _, err := s.JoinWaitlist(ctx, ev, "f"+strconv.Itoa(i), 1); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

// waitlistBenchRun returns every seat (the holders cancel), then answers
// offers until each seat is accepted: the latencies of the returns and
// the offers made.
func waitlistBenchRun(b *testing.B, s *Store, ctx context.Context, ev string, ids []string, fans int) ([]time.Duration, int) {
	b.Helper()
	lat := make([]time.Duration, len(ids))
	fanOut(len(ids), func(i int) {
		t0 := time.Now()
		if _, err := s.Cancel(ctx, ev, "h"+strconv.Itoa(i)); err != nil {
			b.Error(err)
		}
		lat[i] = time.Since(t0)
	})
	// each fan in order: an open offer is accepted by even fans, declined
	// by odd ones (passed on to the next fan)
	var mu sync.Mutex
	accepted, made := 0, 0
	fanOut(fans, func(i int) {
		u := "f" + strconv.Itoa(i)
		w, err := s.Waitlist(ctx, ev, u)
		if err != nil || w.State != Offered {
			return
		}
		a, err := s.AnswerOffer(ctx, ev, u, w.Sequence, i%2 == 0)
		if err != nil {
			b.Error(err)
			return
		}
		mu.Lock()
		made++
		if a.Outcome == OfferAccepted {
			accepted++
		}
		mu.Unlock()
	})
	// the fans are read in parallel: a fan read before the decline that
	// reached them is answered now, in order, until nothing is open
	for more := true; more; {
		more = false
		for i := range fans {
			u := "f" + strconv.Itoa(i)
			w, err := s.Waitlist(ctx, ev, u)
			if err != nil || w.State != Offered {
				continue
			}
			more = true
			a, err := s.AnswerOffer(ctx, ev, u, w.Sequence, i%2 == 0)
			if err != nil {
				b.Fatal(err)
			}
			made++
			if a.Outcome == OfferAccepted {
				accepted++
			}
		}
	}
	open, err := s.rdb.HLen(ctx, s.eventKeys(ev)[kOffers]).Result()
	if err != nil {
		b.Fatal(err)
	}
	left, _ := s.rdb.ZCard(ctx, s.eventKeys(ev)[kWaitlist]).Result()
	// what is left in offers is the waitlisted fans' wanted seats (w:)
	if accepted != len(ids) || open != left {
		b.Fatalf("%d offers accepted of %d seats, %d offers fields for %d waitlisted: want every seat accepted, none outstanding",
			accepted, len(ids), open, left)
	}
	return lat, made
}
