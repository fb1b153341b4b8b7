package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// The memory report measures every key an event has, each named as the
// scripts name it (the key's own name), whichever operations wrote them:
// the queue's and a sale's, the channel allocations', a box-office sale's
// and a waitlist's. The cleanup then leaves no key behind.
func TestEventMemoryCountsEveryKeyAndCleanupDeletesThem(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	prefix := strings.TrimSuffix(redistest.Prefix(t), ":")
	s := booking.New(rdb, booking.WithPrefix(prefix), booking.WithAutoPipeline(0))
	t.Cleanup(s.Close)
	if _, err := s.CreateEvent(ctx, booking.EventConfig{ID: "mem", Rows: 2, SeatsPerRow: 5, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"u1", "u2"} {
		if _, err := s.Enqueue(ctx, "mem", u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AllocateSeats(ctx, "mem", "partner", time.Now().Add(time.Hour), []string{"B5"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SellAtBoxOffice(ctx, booking.BoxOfficeSale{EventID: "mem", SaleID: "s1", SeatIDs: []string{"A1"}}); err != nil {
		t.Fatal(err)
	}

	var written []string // every key of the event in Redis
	it := rdb.Scan(ctx, 0, prefix+":{mem}:*", 1000).Iterator()
	for it.Next(ctx) {
		written = append(written, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	report := eventMemory(ctx, rdb, prefix, "mem")
	var named []string
	for _, k := range report {
		if k.Bytes <= 0 || k.Entries <= 0 || k.Type == "" {
			t.Errorf("key %+v: not measured", k)
		}
		named = append(named, prefix+":{mem}:"+k.Name)
	}
	slices.Sort(written)
	slices.Sort(named)
	if !slices.Equal(named, written) {
		t.Fatalf("report names %v, the event's keys are %v", named, written)
	}
	for _, want := range []string{"waiting", "alloc", "boxsales"} {
		if !slices.ContainsFunc(report, func(k keyMemory) bool { return k.Name == want }) {
			t.Fatalf("no %s in the report %+v", want, report)
		}
	}

	cleanup(ctx, rdb, prefix)
	if left, err := rdb.Keys(ctx, prefix+":*").Result(); err != nil || len(left) != 0 {
		t.Fatalf("left after cleanup: %v %v", left, err)
	}
}
