package booking

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEventSettingBounds(t *testing.T) {
	f := newFixture(t)
	pre1970 := time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		cfg  EventConfig
	}{
		{"huge batch", EventConfig{BatchSize: 9_200_000_000_000_000_000}},
		{"batch above the max", EventConfig{BatchSize: MaxBatchSize + 1}},
		{"capacity above the max", EventConfig{Capacity: MaxCapacity + 1}},
		{"hold above a day", EventConfig{Hold: MaxWindow + time.Second}},
		{"grace above a day", EventConfig{Grace: MaxWindow + time.Second}},
		{"abandon above a day", EventConfig{Abandon: MaxWindow + time.Second}},
		{"sales end before 1970", EventConfig{SalesEnd: pre1970}},
		{"sales start before 1970", EventConfig{SalesStart: pre1970}},
		{"id with a slash", EventConfig{ID: "a/b"}},
		{"id with a colon", EventConfig{ID: "a:b"}},
		{"id of 65 characters", EventConfig{ID: strings.Repeat("a", 65)}},
		{"name too long", EventConfig{Name: strings.Repeat("n", MaxNameLen+1)}},
		{"name with a NUL", EventConfig{Name: "a\x00b"}},
		{"name with an escape", EventConfig{Name: "a\x1b[31mb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.ID == "" {
				cfg.ID = "e1"
			}
			cfg.Rows, cfg.SeatsPerRow = 1, 1
			if _, err := f.s.CreateEvent(f.ctx, cfg); !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("got %v, want ErrInvalidEvent", err)
			}
		})
	}
	if _, err := f.s.CreateEvent(f.ctx, EventConfig{ID: strings.Repeat("a", 64) + "", Rows: 1, SeatsPerRow: 1}); err != nil {
		t.Fatalf("64-character id: %v", err)
	}
	if _, err := f.s.CreateEvent(f.ctx, EventConfig{ID: "Tour_2026.v-1", Rows: 1, SeatsPerRow: 1, BatchSize: MaxBatchSize,
		Capacity: MaxCapacity, Hold: MaxWindow, Grace: MaxWindow, Abandon: MaxWindow}); err != nil {
		t.Fatalf("every setting at its bound: %v", err)
	}
}

// Every setting can be patched, within the same bounds, so an operator can
// always repair an event.
func TestEveryEventSettingIsPatchable(t *testing.T) {
	f := newFixture(t)
	f.event(EventConfig{})
	name, grace, batch := "Renamed", 30*time.Second, 7
	start := time.UnixMilli(1_900_000_000_000).UTC()
	end := start.Add(time.Hour)
	e, err := f.s.UpdateEvent(f.ctx, "evt", EventUpdate{Name: &name, Grace: &grace, BatchSize: &batch, SalesStart: &start, SalesEnd: &end})
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != name || e.Grace != grace || e.BatchSize != batch || !e.SalesStart.Equal(start) || !e.SalesEnd.Equal(end) {
		t.Fatalf("after the patch: %+v", e)
	}
	var zero time.Time
	if e, err = f.s.UpdateEvent(f.ctx, "evt", EventUpdate{SalesStart: &zero, SalesEnd: &zero}); err != nil || !e.SalesStart.IsZero() || !e.SalesEnd.IsZero() {
		t.Fatalf("clearing the sales window: %+v %v", e, err)
	}
	pre1970, huge, empty := time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), 9_200_000_000_000_000_000, ""
	before := start.Add(-time.Hour)
	for _, u := range []EventUpdate{
		{BatchSize: &huge}, {SalesEnd: &pre1970}, {Name: &empty},
		{SalesStart: &end, SalesEnd: &before},
	} {
		if _, err := f.s.UpdateEvent(f.ctx, "evt", u); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("update %+v: %v, want ErrInvalidArgument", u, err)
		}
	}
	if e, _ := f.s.GetEvent(f.ctx, "evt"); e.BatchSize != batch {
		t.Fatalf("a refused update changed the batch: %d", e.BatchSize)
	}
}
