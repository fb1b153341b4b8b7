package obs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/obs"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// TestEventCollectorRedis drives two events on the real Redis into known
// states and checks every gauge against them.
func TestEventCollectorRedis(t *testing.T) {
	ctx := context.Background()
	store := booking.New(redistest.Client(t), booking.WithPrefix(redistest.Prefix(t)))
	if err := store.Load(ctx); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// evt1: a room of 2, 3 joins (2 admitted at once, 1 waiting); u1 buys
	// A1, u2 holds A2.
	_, err := store.CreateEvent(ctx, booking.EventConfig{ID: "evt1", Name: "one", Rows: 1, SeatsPerRow: 5,
		Capacity: 2, Hold: time.Minute})
	must(err)
	for _, u := range []string{"u1", "u2", "u3"} {
		_, err := store.Enqueue(ctx, "evt1", u)
		must(err)
	}
	_, err = store.LockSeat(ctx, "evt1", "u1", "A1")
	must(err)
	_, err = store.InitiatePayment(ctx, "evt1", "u1", "pay-1")
	must(err)
	_, err = store.PaymentSuccess(ctx, "evt1", "u1", "pay-1")
	must(err)
	_, err = store.LockSeat(ctx, "evt1", "u2", "A2")
	must(err)
	// evt2: untouched and paused.
	_, err = store.CreateEvent(ctx, booking.EventConfig{ID: "evt2", Name: "two", Rows: 2, SeatsPerRow: 2, Capacity: 10})
	must(err)
	paused := true
	_, err = store.UpdateEvent(ctx, "evt2", booking.EventUpdate{Paused: &paused})
	must(err)

	e1, err := store.GetEvent(ctx, "evt1")
	must(err)
	// u1 bought and left the room, u2 holds a seat, u3 waits.
	if got, want := e1.Counts, (booking.Counts{Total: 5, Available: 3, Held: 1, Sold: 1, Waiting: 1,
		Active: 1, Served: 2, AdmittedLastMinute: 2}); got != want {
		t.Fatalf("evt1 counts = %+v, want %+v", got, want)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(obs.NewEventCollector(store))
	want := `
# HELP boxoffice_event_active Users in the event's booking room (active, seat selected or paying).
# TYPE boxoffice_event_active gauge
boxoffice_event_active{event_id="evt1"} 1
boxoffice_event_active{event_id="evt2"} 0
# HELP boxoffice_event_admitted_last_minute Users admitted to the booking room in the last 60 seconds.
# TYPE boxoffice_event_admitted_last_minute gauge
boxoffice_event_admitted_last_minute{event_id="evt1"} 2
boxoffice_event_admitted_last_minute{event_id="evt2"} 0
# HELP boxoffice_event_available Seats neither held nor sold.
# TYPE boxoffice_event_available gauge
boxoffice_event_available{event_id="evt1"} 3
boxoffice_event_available{event_id="evt2"} 4
# HELP boxoffice_event_capacity Booking room capacity: users who may hold a slot at once.
# TYPE boxoffice_event_capacity gauge
boxoffice_event_capacity{event_id="evt1"} 2
boxoffice_event_capacity{event_id="evt2"} 10
# HELP boxoffice_event_collector_up 1 when the last read of the events from Redis succeeded, 0 otherwise.
# TYPE boxoffice_event_collector_up gauge
boxoffice_event_collector_up 1
# HELP boxoffice_event_held Seats held by a user in the booking room, not yet sold.
# TYPE boxoffice_event_held gauge
boxoffice_event_held{event_id="evt1"} 1
boxoffice_event_held{event_id="evt2"} 0
# HELP boxoffice_event_paused 1 while the event's on-sale is paused by an operator.
# TYPE boxoffice_event_paused gauge
boxoffice_event_paused{event_id="evt1"} 0
boxoffice_event_paused{event_id="evt2"} 1
# HELP boxoffice_event_seats Seats in the event's seat map.
# TYPE boxoffice_event_seats gauge
boxoffice_event_seats{event_id="evt1"} 5
boxoffice_event_seats{event_id="evt2"} 4
# HELP boxoffice_event_sold Seats sold.
# TYPE boxoffice_event_sold gauge
boxoffice_event_sold{event_id="evt1"} 1
boxoffice_event_sold{event_id="evt2"} 0
# HELP boxoffice_event_waiting Users waiting in the event's queue.
# TYPE boxoffice_event_waiting gauge
boxoffice_event_waiting{event_id="evt1"} 1
boxoffice_event_waiting{event_id="evt2"} 0
`
	names := []string{"boxoffice_event_active", "boxoffice_event_admitted_last_minute", "boxoffice_event_available",
		"boxoffice_event_capacity", "boxoffice_event_collector_up", "boxoffice_event_held", "boxoffice_event_paused",
		"boxoffice_event_seats", "boxoffice_event_sold", "boxoffice_event_waiting"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "boxoffice_event_collector_duration_seconds"); err != nil || n != 1 {
		t.Fatalf("collector_duration_seconds: %d series, err %v; want 1", n, err)
	}
}

type failingLister struct{}

func (failingLister) ListEvents(context.Context) ([]booking.Event, error) {
	return nil, errors.New("redis down")
}

// TestEventCollectorError: a failed read reports up 0 and no event
// gauges, and the scrape itself still succeeds.
func TestEventCollectorError(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(obs.NewEventCollector(failingLister{}, obs.WithTimeout(time.Second)))
	want := `
# HELP boxoffice_event_collector_up 1 when the last read of the events from Redis succeeded, 0 otherwise.
# TYPE boxoffice_event_collector_up gauge
boxoffice_event_collector_up 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "boxoffice_event_collector_up"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "boxoffice_event_waiting", "boxoffice_event_sold"); err != nil || n != 0 {
		t.Fatalf("event gauges on error: %d series, err %v; want 0", n, err)
	}
}
