package fault

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// offerFault is one fault of the offers' rounds, injected once the first
// offers are open.
type offerFault struct {
	name   string
	inject func(t *testing.T, s *stacktest.Stack)
}

// TestOfferFaults: a sold-out event whose holders never pay, and a
// waitlist of fans who decline, accept without paying, or let their
// offer run out; while offers are open and expiring, the timeout consumer
// is killed and restarted, RabbitMQ is cut off, or Redis's connections
// are reset. After each round: every fan was offered seats once, in
// waitlist order; every offer_made has exactly one end (offer_accepted,
// offer_declined or offer_expired); no seat was offered to two fans at
// once; no offer is left open, nobody is left on the waitlist or holding
// seats, and every seat is back on sale (nobody paid).
func TestOfferFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault suite")
	}
	s := stacktest.Start(t, stacktest.Options{Services: []string{stacktest.SlotReleasedConsumer, stacktest.TimeoutConsumer,
		stacktest.Notifier, stacktest.Gateway}, Faults: true, Env: map[string]string{
		"MAX_RETRIES": "2", "SAFETY_NET_INTERVAL": "1s", "OUTBOX_SWEEP_AGE": "2s",
	}})
	f := s.Faults()
	rounds := []offerFault{
		{name: "none (baseline)", inject: func(*testing.T, *stacktest.Stack) {}},
		{name: "kill -9 " + stacktest.TimeoutConsumer, inject: func(t *testing.T, s *stacktest.Stack) {
			s.Kill(t, stacktest.TimeoutConsumer)
			time.Sleep(3 * time.Second)
			s.Restart(t, stacktest.TimeoutConsumer)
		}},
		{name: "rabbitmq unreachable 5s", inject: func(t *testing.T, _ *stacktest.Stack) {
			f.Outage(t, stacktest.TargetRabbitMQ, 5*time.Second)
		}},
		{name: "redis connections reset", inject: func(t *testing.T, _ *stacktest.Stack) {
			f.Reset(t, stacktest.TargetRedis, 3*time.Second)
		}},
	}
	for i, r := range rounds {
		t.Run(r.name, func(t *testing.T) { offerRound(t, s, fmt.Sprintf("offers-%02d", i), r) })
	}
}

// offerRound runs one round on event ev.
func offerRound(t *testing.T, s *stacktest.Stack, ev string, r offerFault) {
	const seats, fans = 3, 7
	const offerTime = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s.CreateEvent(t, stacktest.Event{ID: ev, Name: r.name, Rows: 1, SeatsPerRow: seats, Capacity: seats,
		HoldSeconds: 2, GraceSeconds: 1})
	admin := s.Client(t, "stacktest-admin", auth.RoleAdmin)
	if code, err := admin.Do("PUT", "/api/admin/events/"+ev+"/waitlist", map[string]any{"offer_seconds": offerTime.Seconds()}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("waitlist settings: %d %v", code, err)
	}
	// sold out: each holder holds a seat and never pays
	ids := booking.SeatIDs(1, seats)
	for i, seat := range ids {
		c := s.Client(t, fmt.Sprintf("%s-h%d", ev, i), "")
		mustDo(t, c, "POST", "/api/booking/request", map[string]any{"event_id": ev})
		waitFor(t, ctx, "holder admitted", func() bool {
			var pos struct {
				State string `json:"state"`
			}
			_, err := c.Do("GET", "/api/booking/position?event_id="+ev, nil, &pos)
			return err == nil && pos.State == string(booking.StateActive)
		})
		mustDo(t, c, "POST", "/api/booking/select-seat", map[string]any{"event_id": ev, "seat_id": seat})
	}
	// the fans join in order; each answers their offer one way
	var wg sync.WaitGroup
	offered := make(chan struct{}, fans)
	for i := range fans {
		c := s.Client(t, fmt.Sprintf("%s-w%d", ev, i), "")
		mustDo(t, c, "POST", "/api/events/"+ev+"/waitlist", nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fan(ctx, c, ev, i%3, offered)
		}()
	}
	// the fault, while the first offers run out
	select {
	case <-offered:
	case <-ctx.Done():
		t.Fatal("no offer made")
	}
	time.Sleep(offerTime - 1500*time.Millisecond)
	faultStart := time.Now()
	r.inject(t, s)
	faultEnd := time.Now()

	// every fan offered, every offer ended, nothing held
	keys := booking.EventKeys(s.Prefix, ev)
	store := booking.New(s.Redis, booking.WithPrefix(s.Prefix))
	defer store.Close()
	var last string
	waitFor(t, ctx, "every offer ended and every seat back", func() bool {
		c, err := store.GetEvent(ctx, ev)
		if err != nil {
			last = err.Error()
			return false
		}
		wl, _ := s.Redis.ZCard(ctx, keys[lua.Waitlist]).Result()
		open := 0
		all, _ := s.Redis.HKeys(ctx, keys[lua.Offers]).Result()
		for _, k := range all {
			if strings.HasPrefix(k, "o:") {
				open++
			}
		}
		last = fmt.Sprintf("waitlisted %d, offers open %d, held %d, sold %d, available %d", wl, open, c.Counts.Held, c.Counts.Sold, c.Counts.Available)
		return wl == 0 && open == 0 && c.Counts.Held == 0 && c.Counts.Sold == 0 && c.Counts.Available == seats
	}, func() string { return last })
	cancel()
	wg.Wait()

	// the facts: one offer per fan, in waitlist order, each ended once,
	// each seat offered to one fan at a time
	type offer struct {
		user        string
		seq         int64
		seats       []string
		made, ended time.Time
		ends        int
		endedAs     string
	}
	byKey := map[string]*offer{}
	var made []*offer
	var facts []string
	waitFor(t, context.Background(), "every offer's facts in Kafka", func() bool {
		byKey, made, facts = map[string]*offer{}, nil, nil
		seen := map[string]bool{}
		for _, e := range stacktest.ReadTopic(t, s.Brokers[0], events.TopicOfferMade) {
			if e.EventID != ev || seen[e.ID] {
				continue
			}
			seen[e.ID] = true
			o := &offer{user: e.UserID, seq: e.Sequence, seats: strings.Split(e.SeatID, ","), made: e.OccurredAt}
			byKey[e.UserID+"|"+strconv.FormatInt(e.Sequence, 10)] = o
			made = append(made, o)
		}
		for _, topic := range []string{events.TopicOfferAccepted, events.TopicOfferDeclined, events.TopicOfferExpired} {
			for _, e := range stacktest.ReadTopic(t, s.Brokers[0], topic) {
				if e.EventID != ev || seen[e.ID] {
					continue
				}
				seen[e.ID] = true
				o := byKey[e.UserID+"|"+strconv.FormatInt(e.Sequence, 10)]
				if o == nil {
					facts = append(facts, topic+" without offer_made for "+e.UserID)
					continue
				}
				o.ends++
				o.ended, o.endedAs = e.OccurredAt, topic
			}
		}
		if len(made) != fans {
			return false
		}
		for _, o := range made {
			if o.ends == 0 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("%d offers made of %d fans, %v", len(made), fans, facts) })
	if len(facts) > 0 {
		t.Errorf("facts: %v", facts)
	}
	slices.SortFunc(made, func(a, b *offer) int { return int(a.seq - b.seq) })
	users := map[string]bool{}
	for i, o := range made {
		if users[o.user] {
			t.Errorf("%s offered twice", o.user)
		}
		users[o.user] = true
		if o.ends != 1 {
			t.Errorf("offer to %s ended %d times", o.user, o.ends)
		}
		if i > 0 && o.made.Before(made[i-1].made) {
			t.Errorf("offer to %s (place %d) made before the one to %s (place %d)", o.user, o.seq, made[i-1].user, made[i-1].seq)
		}
		for _, p := range made[:i] {
			for _, seat := range o.seats {
				if slices.Contains(p.seats, seat) && o.made.Before(p.ended) {
					t.Errorf("%s offered to %s at %v while %s's offer of it was open until %v", seat, o.user, o.made, p.user, p.ended)
				}
			}
		}
	}
	counts := map[string]int{}
	during := 0 // offers (not declined) whose deadline passed during the fault
	for _, o := range made {
		counts[o.endedAs]++
		if d := o.made.Add(offerTime); o.endedAs != events.TopicOfferDeclined && !d.Before(faultStart) && !d.After(faultEnd) {
			during++
		}
	}
	t.Logf("%s: %d offers: %v; %d ran out during the fault (%v)", r.name, len(made), counts, during, faultEnd.Sub(faultStart).Round(100*time.Millisecond))
	if faultEnd.Sub(faultStart) > time.Second && during == 0 {
		t.Errorf("no offer's deadline passed during the fault: the round tests nothing")
	}
}

// fan polls their place until an offer is open, then answers it as kind
// says: 0 declines, 1 accepts (and never pays), 2 lets it run out. It
// signals offered on the first offer it sees.
func fan(ctx context.Context, c *stacktest.Client, ev string, kind int, offered chan<- struct{}) {
	for ctx.Err() == nil {
		var w struct {
			State    string `json:"state"`
			Sequence int64  `json:"sequence"`
		}
		code, err := c.Do("GET", "/api/events/"+ev+"/waitlist", nil, &w)
		if err == nil && code == http.StatusOK && w.State == booking.Offered {
			offered <- struct{}{}
			path := "/api/events/" + ev + "/waitlist/offers/" + strconv.FormatInt(w.Sequence, 10)
			switch kind {
			case 0:
				answer(ctx, c, path+"/decline")
			case 1:
				answer(ctx, c, path+"/accept")
			}
			return
		}
		if err == nil && code == http.StatusNotFound && w.State == "" {
			// not on the waitlist: offered and over before this poll saw it
			var pos struct {
				State string `json:"state"`
			}
			if _, err := c.Do("GET", "/api/booking/position?event_id="+ev, nil, &pos); err == nil && pos.State != "" {
				offered <- struct{}{}
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// answer sends an answer until it is not a 5xx or transport error (a
// fault may be on): 200, or a 409 when the offer ran out meanwhile.
func answer(ctx context.Context, c *stacktest.Client, path string) {
	for ctx.Err() == nil {
		if _, err := c.Do("POST", path, nil, nil); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mustDo(t *testing.T, c *stacktest.Client, method, path string, body any) {
	t.Helper()
	for range 50 {
		code, err := c.Do(method, path, body, nil)
		if err == nil && code < 300 {
			return
		}
		if err == nil {
			t.Fatalf("%s %s: %d", method, path, code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s %s: no answer", method, path)
}

// waitFor polls cond until it holds or ctx ends (then fails with what).
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if ctx.Err() != nil || time.Now().After(deadline) {
			msg := ""
			if len(detail) > 0 {
				msg = detail[0]()
			}
			t.Fatalf("%s: not within the time given: %s", what, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
