package e2e

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/eventschema"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

const (
	users    = 300
	rows     = 6
	perRow   = 10
	seats    = rows * perRow
	room     = 20
	holdSecs = 3
)

// services started as processes, in order.
var services = []string{"slot-released-consumer", "timeout-consumer", "payment-webhook", "payment-sandbox", "gateway"}

type position struct {
	Status   string `json:"status"`
	State    string `json:"state"`
	Sequence int64  `json:"sequence"`
	SeatID   string `json:"seat_id"`
	Code     string `json:"code"`
}

type plan int

const (
	planPay plan = iota
	planDecline
	planCancelInRoom
	planLetExpire
	planCancelInQueue
)

func planOf(i int) plan {
	h := fnv.New32a()
	fmt.Fprintf(h, "user-%d", i)
	switch n := h.Sum32() % 100; {
	case n < 62:
		return planPay
	case n < 74:
		return planDecline
	case n < 84:
		return planCancelInRoom
	case n < 95:
		return planLetExpire
	default:
		return planCancelInQueue
	}
}

type outcome struct {
	user     string
	plan     plan
	sequence int64
	final    position
	admitted bool
	err      error
}

var finalStatuses = map[string]bool{"completed": true, "failed": true, "cancelled": true, "expired": true, "sold_out": true}

// TestJourney is the end-to-end journey of every kind of user through the whole stack.
func TestJourney(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	s := stacktest.Start(t, stacktest.Options{Services: services})
	brokers := s.Brokers
	s.CreateEvent(t, stacktest.Event{ID: "e2e", Name: "E2E", Rows: rows, SeatsPerRow: perRow, Capacity: room, HoldSeconds: holdSecs, GraceSeconds: 1})
	ac := s.Client(t, "e2e-admin", auth.RoleAdmin)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	results := make([]outcome, users)
	var wg sync.WaitGroup
	for i := range users {
		c := s.Client(t, fmt.Sprintf("user-%03d", i), "")
		wg.Go(func() {
			results[i] = runUser(ctx, c, fmt.Sprintf("user-%03d", i), planOf(i))
		})
	}
	wg.Wait()
	t.Logf("%d users done in %v", users, time.Since(start).Round(time.Millisecond))

	// Every user in a final state.
	byStatus := map[string]int{}
	completedSeats := map[string]string{}
	for _, r := range results {
		if r.err != nil {
			t.Errorf("%s (plan %d): %v", r.user, r.plan, r.err)
			continue
		}
		byStatus[r.final.Status]++
		if !finalStatuses[r.final.Status] {
			t.Errorf("%s ended in %+v", r.user, r.final)
		}
		if r.final.Status == "completed" {
			if other, dup := completedSeats[r.final.SeatID]; dup {
				t.Errorf("seat %s sold to %s and %s", r.final.SeatID, other, r.user)
			}
			completedSeats[r.final.SeatID] = r.user
		}
	}
	t.Logf("final statuses: %v", byStatus)
	if t.Failed() {
		return
	}

	// Every seat sold exactly once; nothing left in the room.
	var ev struct {
		Counts struct {
			Total, Available, Held, Sold, Waiting, Active int64
		} `json:"counts"`
	}
	waitUntil(t, 15*time.Second, func() bool {
		_, _ = ac.Do("GET", "/api/events/e2e", nil, &ev)
		return ev.Counts.Active == 0 && ev.Counts.Held == 0
	}, func() string { return fmt.Sprintf("room not empty: %+v", ev.Counts) })
	if ev.Counts.Sold != seats || len(completedSeats) != seats || ev.Counts.Available != 0 {
		t.Fatalf("sold %d, completed users %d, want %d: %+v", ev.Counts.Sold, len(completedSeats), seats, ev.Counts)
	}
	// the map is a snapshot up to a second old (docs/http-api.md)
	var seatMap stacktest.SeatMap
	waitUntil(t, 15*time.Second, func() bool {
		seatMap = stacktest.SeatMap{}
		_, _ = ac.Do("GET", "/api/seats/available?event_id=e2e", nil, &seatMap)
		return seatMap.Sold == seats
	}, func() string { return fmt.Sprintf("seat map shows %d of %d sold", seatMap.Sold, seats) })
	for _, s := range seatMap.Seats() {
		if s.Status != "sold" || completedSeats[s.SeatID] == "" {
			t.Errorf("seat %s: %s, bought by %q", s.SeatID, s.Status, completedSeats[s.SeatID])
		}
	}

	// One booking_completed per sold seat in Kafka (copies of one fact share
	// the envelope id), naming the buyer. A buyer sees "completed" as soon
	// as the webhook's Lua step ran; the webhook then writes the order to
	// PostgreSQL and publishes the fact before its 2xx (a failed step is
	// the provider's retry), so the facts may trail the seats: wait for
	// them (the checks below say what is missing if they never come).
	var completed []events.Event
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		completed = readTopic(t, brokers[0], events.TopicBookingCompleted)
		n := map[string]bool{}
		for _, e := range completed {
			if e.EventID == "e2e" {
				n[e.SeatID] = true
			}
		}
		if len(n) >= seats || time.Now().After(deadline) {
			break
		}
	}
	idsBySeat := map[string]map[string]bool{}
	for _, e := range completed {
		if e.EventID != "e2e" {
			continue
		}
		if completedSeats[e.SeatID] != e.UserID {
			t.Errorf("booking_completed for seat %s names %s, the seat went to %s", e.SeatID, e.UserID, completedSeats[e.SeatID])
		}
		if idsBySeat[e.SeatID] == nil {
			idsBySeat[e.SeatID] = map[string]bool{}
		}
		idsBySeat[e.SeatID][e.ID] = true
	}
	if len(idsBySeat) != seats {
		t.Errorf("booking_completed for %d seats, want %d", len(idsBySeat), seats)
	}
	for seat, ids := range idsBySeat {
		if len(ids) != 1 {
			t.Errorf("seat %s has %d distinct booking_completed events", seat, len(ids))
		}
	}

	// PostgreSQL orders = Redis sold seats = Kafka booking_completed: one
	// completed order per sold seat, naming the same buyer, in the ledger.
	var orders struct {
		Orders []struct {
			SeatID string `json:"seat_id"`
			UserID string `json:"user_id"`
			Status string `json:"status"`
		} `json:"orders"`
	}
	if code, err := ac.Do("GET", "/api/admin/events/e2e/orders", nil, &orders); err != nil || code != 200 {
		t.Fatalf("ledger orders: %d %v", code, err)
	}
	ledgerSold := map[string]string{}
	for _, o := range orders.Orders {
		if o.Status != "completed" {
			continue
		}
		if _, dup := ledgerSold[o.SeatID]; dup {
			t.Errorf("seat %s has two completed orders in PostgreSQL", o.SeatID)
		}
		ledgerSold[o.SeatID] = o.UserID
	}
	if len(ledgerSold) != seats {
		t.Errorf("PostgreSQL has %d completed orders, want %d", len(ledgerSold), seats)
	}
	for seat, user := range completedSeats {
		if ledgerSold[seat] != user {
			t.Errorf("seat %s: Redis sold it to %s, PostgreSQL's order names %q", seat, user, ledgerSold[seat])
		}
	}

	// One booking_request per join, published by the gateway's relay after
	// the join was answered (or by the safety net's sweep), carrying the
	// join's sequence.
	var missing []string
	waitUntil(t, 15*time.Second, func() bool {
		requested := map[string]bool{}
		for _, e := range readTopic(t, brokers[0], events.TopicBookingRequest) {
			if e.EventID == "e2e" {
				requested[fmt.Sprintf("%s/%d", e.UserID, e.Sequence)] = true
			}
		}
		missing = missing[:0]
		for _, r := range results {
			if k := fmt.Sprintf("%s/%d", r.user, r.sequence); r.sequence > 0 && !requested[k] {
				missing = append(missing, k)
			}
		}
		return len(missing) == 0
	}, func() string { return fmt.Sprintf("joins without booking_request: %v", missing) })

	// Admission in join order: no user who never got in (sold out) joined
	// before the last user who got in, unless they left the queue.
	promoted := map[string]bool{}
	for _, e := range readTopic(t, brokers[0], events.TopicUserPromoted) {
		promoted[e.UserID] = true
	}
	var maxAdmitted int64
	for _, r := range results {
		if promoted[r.user] != r.admitted && r.final.Status != "cancelled" {
			t.Errorf("%s: user_promoted %v, but saw the room: %v (%+v)", r.user, promoted[r.user], r.admitted, r.final)
		}
		if promoted[r.user] && r.sequence > maxAdmitted {
			maxAdmitted = r.sequence
		}
	}
	var skipped []string
	for _, r := range results {
		if !promoted[r.user] && r.final.Status == "sold_out" && r.sequence < maxAdmitted {
			skipped = append(skipped, fmt.Sprintf("%s(seq %d)", r.user, r.sequence))
		}
	}
	sort.Strings(skipped)
	if len(skipped) > 0 {
		t.Errorf("admitted up to sequence %d but skipped %v", maxAdmitted, skipped)
	}
	if late := readTopic(t, brokers[0], events.TopicPaymentLate); len(late) > 0 {
		t.Logf("%d late payments published for refund", len(late))
	}
	// every message of every topic validates against its published schema
	var all int
	for _, topic := range events.AllTopics {
		all += len(readTopic(t, brokers[0], topic))
	}
	t.Logf("%d messages validated against docs/schemas", all)
	t.Logf("admitted %d users (up to sequence %d); %d booking_completed", len(promoted), maxAdmitted, len(completed))
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal(msg())
}

// runUser plays one user's journey by its plan and returns the final state.
func runUser(ctx context.Context, c *stacktest.Client, user string, p plan) (out outcome) {
	out.user, out.plan = user, p
	rng := rand.New(rand.NewPCG(uint64(len(user)), uint64(user[len(user)-1])*7919+uint64(user[len(user)-2])))
	var join struct {
		Status   string `json:"status"`
		Sequence int64  `json:"sequence"`
	}
	if _, err := retry(ctx, func() (int, error) {
		return c.Do("POST", "/api/booking/request", map[string]string{"event_id": "e2e"}, &join)
	}); err != nil {
		out.err = err
		return out
	}
	out.sequence = join.Sequence
	if p == planCancelInQueue && join.Status == "queued" {
		if code, err := c.Do("POST", "/api/booking/cancel", map[string]string{"event_id": "e2e"}, nil); err != nil || code != 200 {
			out.err = fmt.Errorf("cancel in queue: %d %v", code, err)
			return out
		}
	}
	acted := false
	for {
		if ctx.Err() != nil {
			out.err = fmt.Errorf("timed out; last position %+v", out.final)
			return out
		}
		var pos position
		if _, err := c.Do("GET", "/api/booking/position?event_id=e2e", nil, &pos); err != nil {
			out.err = err
			return out
		}
		out.final = pos
		if pos.Status == "active" {
			out.admitted = true
		}
		if finalStatuses[pos.Status] {
			if pos.Status == "completed" || pos.Status == "failed" || pos.Status == "expired" {
				out.admitted = true
			}
			return out
		}
		if pos.Status == "active" && !acted {
			acted = true
			if err := act(ctx, c, p, rng); err != nil {
				out.err = err
				return out
			}
			continue
		}
		time.Sleep(time.Duration(100+rng.IntN(100)) * time.Millisecond)
	}
}

// retry repeats a call that failed with a 5xx (the client's side of the
// "503, retry" contract).
func retry(ctx context.Context, f func() (int, error)) (int, error) {
	for {
		code, err := f()
		if err == nil || code < 500 || ctx.Err() != nil {
			return code, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// act is what an admitted user does.
func act(ctx context.Context, c *stacktest.Client, p plan, rng *rand.Rand) error {
	if p == planCancelInQueue {
		p = planPay // admitted at once: buy
	}
	seat, err := pickSeat(ctx, c, rng)
	if err != nil || seat == "" {
		return err // no seat to be had: the hold will expire
	}
	switch p {
	case planLetExpire:
		return nil
	case planCancelInRoom:
		code, err := c.Do("POST", "/api/booking/cancel", map[string]string{"event_id": "e2e"}, nil)
		if err != nil || (code != 200 && code != 403) { // 403: the hold ended first
			return fmt.Errorf("cancel in room: %d %v", code, err)
		}
		return nil
	}
	var ini struct {
		PaymentID  string `json:"payment_id"`
		PaymentURL string `json:"payment_url"`
		Code       string `json:"code"`
	}
	code, err := retry(ctx, func() (int, error) {
		return c.Do("POST", "/api/booking/payment/initiate", map[string]string{"event_id": "e2e"}, &ini)
	})
	if err != nil {
		return err
	}
	if code == 403 {
		return nil // the hold expired meanwhile
	}
	if code != 200 || ini.PaymentURL == "" {
		return fmt.Errorf("initiate: %d %+v", code, ini)
	}
	if code, err := c.Do("GET", ini.PaymentURL, nil, nil); err != nil || code != 200 {
		return fmt.Errorf("checkout page: %d %v", code, err)
	}
	action, form := "/pay", url.Values{}
	if p == planDecline {
		action, form = "/decline", url.Values{"reason": {"insufficient_funds"}}
	}
	code, err = c.Do("POST", ini.PaymentURL+action, form, nil)
	if err != nil || code != http.StatusSeeOther {
		return fmt.Errorf("sandbox %s: %d %v", action, code, err)
	}
	return nil
}

// pickSeat holds a random available seat, retrying on conflicts; "" when
// the hold ended or every seat is taken for good.
func pickSeat(ctx context.Context, c *stacktest.Client, rng *rand.Rand) (string, error) {
	for ctx.Err() == nil {
		var m stacktest.SeatMap
		if _, err := c.Do("GET", "/api/seats/available?event_id=e2e", nil, &m); err != nil {
			return "", err
		}
		var free []string
		sold := 0
		all := m.Seats()
		for _, s := range all {
			switch s.Status {
			case "available":
				free = append(free, s.SeatID)
			case "sold":
				sold++
			}
		}
		if sold == len(all) {
			return "", nil
		}
		if len(free) == 0 {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		seat := free[rng.IntN(len(free))]
		var e struct {
			Code string `json:"code"`
		}
		code, err := c.Do("POST", "/api/booking/select-seat", map[string]string{"event_id": "e2e", "seat_id": seat}, &e)
		if err != nil {
			return "", err
		}
		switch {
		case code == 200:
			return seat, nil
		case code == 409:
			// Taken meanwhile. The seat map is a snapshot refreshed about
			// once a second, so the same seat may still look free: pause
			// as a page would before the next try.
			time.Sleep(time.Duration(50+rng.IntN(100)) * time.Millisecond)
		case code == 429:
			time.Sleep(time.Second) // over the per-user limit: Retry-After is at most a second
		case code == 403:
			return "", nil // the hold ended
		default:
			return "", fmt.Errorf("select seat: %d %s", code, e.Code)
		}
	}
	return "", ctx.Err()
}

var (
	schemaOnce sync.Once
	schemas    *eventschema.Validator
	schemaErr  error
)

// validator is the published schemas (docs/schemas), loaded once.
func validator(t *testing.T) *eventschema.Validator {
	t.Helper()
	schemaOnce.Do(func() { schemas, schemaErr = eventschema.Load(filepath.Join("..", "..", "..", eventschema.Dir)) })
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	return schemas
}

// readTopic reads every message of topic (all partitions) from the start;
// each must validate against its type's published JSON Schema.
func readTopic(t *testing.T, broker, topic string) []events.Event {
	t.Helper()
	var out []events.Event
	for _, m := range stacktest.ReadTopicMessages(t, broker, topic) {
		if err := validator(t).Validate(topic, m.Value); err != nil {
			t.Errorf("%s offset %d: schema: %v", topic, m.Offset, err)
		}
		e, err := events.Decode(m.Value)
		if err != nil {
			t.Errorf("%s offset %d: %v", topic, m.Offset, err)
			continue
		}
		out = append(out, e)
	}
	return out
}

func TestMain(m *testing.M) { stacktest.Main(m) }
