package stacktest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// SaleCheck is what [Stack.CheckSale] checks a finished [Sale] with.
type SaleCheck struct {
	// Tap saw every timeout and your_turn the services published.
	Tap *Tap
	// Queues lists the services' queues; nil: [Queues] of Stack.AMQPURL.
	Queues func(t testing.TB) map[string]QueueDepth
	// DeadLetters is how many messages each DLQ must hold (poison
	// messages); any other DLQ must be empty.
	DeadLetters map[string]int
	// ExactlyOnce: no process died and no connection broke mid-message,
	// so every admission must have one your_turn and one timeout, no copy.
	ExactlyOnce bool
	// FactsWait bounds the wait for every final fact on Kafka; default 30 s.
	FactsWait time.Duration
	// Fail reports a failed check ("users", "seats", "kafka", "facts",
	// "ledger", "rabbitmq", "dlq", "admissions", "dups"); nil: t.Errorf.
	Fail func(t testing.TB, check, format string, args ...any)
}

// SaleReport is what [Stack.CheckSale] measured.
type SaleReport struct {
	Users, Admitted, Sold int
	// TooLate: buyers whose join was refused sold_out (it reached Redis
	// after the last seat sold).
	TooLate int
	// LastFinal is when the last buyer stopped.
	LastFinal time.Time
	// Completed maps each seat sold to its buyer.
	Completed map[string]string
	// DupCompleted: booking_completed copies beyond one per fact.
	DupCompleted int
	// DupTurns, DupTimeouts: RabbitMQ copies beyond one per fact;
	// MaxCopies the most copies of one.
	DupTurns, DupTimeouts, MaxCopies int
	// LedgerLag: until PostgreSQL's orders matched; RabbitMQDrain: until
	// nothing was unacknowledged or waiting in a work queue.
	LedgerLag, RabbitMQDrain time.Duration
	// Queues is the last queue listing (after the DLQ check).
	Queues map[string]QueueDepth
}

// CheckSale checks what must hold after a sale, whatever failed during it:
// every buyer reached a final status; no seat was sold twice; Redis's seat
// map, Kafka's booking_completed facts (one distinct id per seat, copies
// counted) and PostgreSQL's completed orders each name exactly the seats
// sold, to the same buyers; each final status's fact is on Kafka once per
// id; RabbitMQ holds nothing unacknowledged or waiting in a work queue and
// the DLQs only c.DeadLetters; every admission got a your_turn and a
// timeout (exactly one each when c.ExactlyOnce).
func (s *Stack) CheckSale(t testing.TB, sl *Sale, c SaleCheck) SaleReport {
	t.Helper()
	fail := c.Fail
	if fail == nil {
		fail = func(t testing.TB, _, format string, args ...any) { t.Helper(); t.Errorf(format, args...) }
	}
	listQueues := c.Queues
	if listQueues == nil {
		listQueues = func(t testing.TB) map[string]QueueDepth { return Queues(t, s.AMQPURL) }
	}
	ev, us := sl.Event, sl.Buyers
	r := SaleReport{Users: len(us), Completed: map[string]string{}}
	completed := r.Completed
	ok := true
	for _, u := range us {
		if u.Err != nil {
			fail(t, "users", "%s (plan %d): %v", u.ID, u.Plan, u.Err)
			ok = false
			continue
		}
		if u.DoneAt.After(r.LastFinal) {
			r.LastFinal = u.DoneAt
		}
		if u.Admitted || u.Final.Status == "completed" || u.Final.Status == "failed" || u.Final.Status == "expired" {
			r.Admitted++
		}
		if u.Final.Status == "sold_out" && u.Sequence == 0 {
			r.TooLate++
		}
		if u.Final.Status == "completed" {
			if other, dup := completed[u.Final.SeatID]; dup {
				fail(t, "seats", "seat %s sold to %s and %s", u.Final.SeatID, other, u.ID)
				ok = false
			}
			completed[u.Final.SeatID] = u.ID
		}
	}
	r.Sold = len(completed)
	if r.Sold == 0 {
		byStatus := map[string]int{}
		for _, u := range us {
			byStatus[u.Final.Status]++
		}
		fail(t, "users", "no seat sold: the sale did not happen (final statuses %v)", byStatus)
		ok = false
	}
	if !ok {
		return r
	}
	admin := s.Client(t, "stacktest-admin", auth.RoleAdmin)

	// the room empties (every hold ended) and Redis's seat map agrees with
	// the users: sold seats = completed bookings
	var e struct {
		Counts struct{ Total, Available, Held, Sold, Waiting, Active int64 } `json:"counts"`
	}
	if _, ok := Eventually(30*time.Second, func() bool {
		_, _ = admin.Do("GET", "/api/events/"+ev, nil, &e)
		return e.Counts.Active == 0 && e.Counts.Held == 0
	}); !ok {
		fail(t, "seats", "room not empty 30 s after the sale: %+v", e.Counts)
	}
	var seatMap SeatMap
	Eventually(15*time.Second, func() bool {
		seatMap = SeatMap{}
		_, _ = admin.Do("GET", "/api/seats/available?event_id="+ev, nil, &seatMap)
		return seatMap.Sold == len(completed)
	})
	sold := 0
	for _, st := range seatMap.Seats() {
		if st.Status == "sold" {
			sold++
			if completed[st.SeatID] == "" {
				fail(t, "seats", "seat %s sold, but no user's booking completed with it", st.SeatID)
			}
		} else if completed[st.SeatID] != "" {
			fail(t, "seats", "seat %s is %s, but %s's booking completed with it", st.SeatID, st.Status, completed[st.SeatID])
		}
	}
	if sold != len(completed) || int64(sold) != e.Counts.Sold {
		fail(t, "seats", "Redis: %d seats sold (counts %d), %d completed bookings", sold, e.Counts.Sold, len(completed))
	}
	if r.TooLate > 0 && e.Counts.Sold != e.Counts.Total {
		fail(t, "seats", "%d joins were refused sold_out, but only %d of %d seats are sold", r.TooLate, e.Counts.Sold, e.Counts.Total)
	}

	// Kafka: one booking_completed fact per sold seat, naming the buyer. A
	// sale whose webhook process died between its Lua step and its publish
	// is published by the provider's retry of that webhook (the sandbox
	// backs off up to WEBHOOK_RETRY_MAX) or, past ORDER_FACT_SWEEP_AGE
	// after its order, by payment-webhook's order sweep, so the facts may
	// trail the seats: wait for them before counting.
	idsBySeat := map[string]map[string]bool{}
	copies := 0
	var facts []events.Event
	Eventually(90*time.Second, func() bool {
		facts = ReadTopic(t, s.Brokers[0], events.TopicBookingCompleted)
		seats := map[string]bool{}
		for _, x := range facts {
			if x.EventID == ev {
				seats[x.SeatID] = true
			}
		}
		return len(seats) >= len(completed)
	})
	for _, x := range facts {
		if x.EventID != ev {
			continue
		}
		copies++
		if completed[x.SeatID] != x.UserID {
			fail(t, "kafka", "booking_completed for seat %s names %s, the seat went to %q", x.SeatID, x.UserID, completed[x.SeatID])
		}
		if idsBySeat[x.SeatID] == nil {
			idsBySeat[x.SeatID] = map[string]bool{}
		}
		idsBySeat[x.SeatID][x.ID] = true
	}
	for seat, ids := range idsBySeat {
		if len(ids) != 1 {
			fail(t, "kafka", "seat %s: %d distinct booking_completed facts", seat, len(ids))
		}
	}
	if len(idsBySeat) != len(completed) {
		fail(t, "kafka", "booking_completed for %d seats, %d sold", len(idsBySeat), len(completed))
	}
	r.DupCompleted = copies - len(idsBySeat)

	wait := c.FactsWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	if msg := s.finalFacts(t, sl, wait); msg != "" {
		fail(t, "facts", "Kafka: %s", msg)
	}

	// PostgreSQL: one completed order per sold seat, same buyer
	var orders struct {
		Orders []struct {
			SeatID string `json:"seat_id"`
			UserID string `json:"user_id"`
			Status string `json:"status"`
		} `json:"orders"`
	}
	ledger := map[string]string{}
	var ledgerErr string
	r.LedgerLag, _ = Eventually(30*time.Second, func() bool {
		orders.Orders = nil
		if code, err := admin.Do("GET", "/api/admin/events/"+ev+"/orders", nil, &orders); err != nil || code != 200 {
			ledgerErr = fmt.Sprintf("orders: %d %v", code, err)
			return false
		}
		clear(ledger)
		ledgerErr = ""
		for _, o := range orders.Orders {
			if o.Status != "completed" {
				continue
			}
			if _, dup := ledger[o.SeatID]; dup {
				ledgerErr = fmt.Sprintf("seat %s has two completed orders", o.SeatID)
			}
			ledger[o.SeatID] = o.UserID
		}
		if ledgerErr == "" && len(ledger) != len(completed) {
			ledgerErr = fmt.Sprintf("%d completed orders, %d seats sold", len(ledger), len(completed))
		}
		for seat, u := range completed {
			if ledgerErr == "" && ledger[seat] != u {
				ledgerErr = fmt.Sprintf("seat %s sold to %s, the order names %q", seat, u, ledger[seat])
			}
		}
		return ledgerErr == ""
	})
	if ledgerErr != "" {
		fail(t, "ledger", "PostgreSQL: %s", ledgerErr)
	}

	// RabbitMQ: nothing left unacknowledged or waiting in a work queue, and
	// the DLQs hold exactly the expected dead letters
	var qerr string
	r.RabbitMQDrain, _ = Eventually(30*time.Second, func() bool {
		r.Queues = listQueues(t)
		qerr = ""
		for name, d := range r.Queues {
			switch {
			case d.Unacked != 0:
				qerr += fmt.Sprintf("%s: %d unacked; ", name, d.Unacked)
			case (name == amqpx.SlotReleasedQueue || name == amqpx.TimeoutQueue) && d.Ready != 0:
				qerr += fmt.Sprintf("%s: %d ready; ", name, d.Ready)
			}
		}
		return qerr == ""
	})
	if qerr != "" {
		fail(t, "rabbitmq", "RabbitMQ: %s", qerr)
	}
	if _, ok := Eventually(10*time.Second, func() bool {
		r.Queues = listQueues(t)
		qerr = ""
		for name, d := range r.Queues {
			if strings.HasSuffix(name, ".dlq") && d.Ready != c.DeadLetters[name] {
				qerr += fmt.Sprintf("%s: %d dead letters, want %d; ", name, d.Ready, c.DeadLetters[name])
			}
		}
		return qerr == ""
	}); !ok {
		fail(t, "dlq", "RabbitMQ: %s", qerr)
	}

	// one your_turn and one timeout per admission (user/sequence); copies
	// are counted, and must be none when no fault can cut a publish short
	var turns, timeouts map[string]bool
	Eventually(15*time.Second, func() bool {
		turns, timeouts, r.DupTurns, r.DupTimeouts, r.MaxCopies = c.Tap.Counts(ev)
		for _, u := range us {
			if u.Admitted && (!turns[fmt.Sprintf("%s/%d", u.ID, u.Sequence)] || !timeouts[fmt.Sprintf("%s/%d", u.ID, u.Sequence)]) {
				return false
			}
		}
		return true
	})
	for _, u := range us {
		k := fmt.Sprintf("%s/%d", u.ID, u.Sequence)
		if u.Admitted && !turns[k] {
			fail(t, "admissions", "%s was admitted (sequence %d) but no your_turn was published", u.ID, u.Sequence)
		}
		if u.Admitted && !timeouts[k] {
			fail(t, "admissions", "%s was admitted (sequence %d) but no timeout was scheduled", u.ID, u.Sequence)
		}
	}
	if c.ExactlyOnce && (r.DupTurns > 0 || r.DupTimeouts > 0) {
		fail(t, "dups", "%d extra your_turn and %d extra timeout messages for %d admissions (at most %d copies of one); want one each (docs/booking-engine.md: the outbox publishes each side once)",
			r.DupTurns, r.DupTimeouts, len(turns), r.MaxCopies)
	}
	return r
}

// finalFacts checks that each buyer's final fact (booking_expired,
// payment_failed, booking_cancelled) is on Kafka once per id (copies share
// the id), waiting up to d; it returns what is wrong, "" when nothing.
func (s *Stack) finalFacts(t testing.TB, sl *Sale, d time.Duration) string {
	topicOf := map[string]string{"expired": events.TopicBookingExpired, "failed": events.TopicPaymentFailed, "cancelled": events.TopicBookingCancelled}
	var factErr string
	Eventually(d, func() bool {
		ids := map[string]map[string]bool{} // topic/user -> ids
		for _, topic := range []string{events.TopicBookingExpired, events.TopicPaymentFailed, events.TopicBookingCancelled} {
			for _, x := range ReadTopic(t, s.Brokers[0], topic) {
				if x.EventID != sl.Event {
					continue
				}
				k := topic + "/" + x.UserID
				if ids[k] == nil {
					ids[k] = map[string]bool{}
				}
				ids[k][x.ID] = true
			}
		}
		factErr = ""
		for _, u := range sl.Buyers {
			topic := topicOf[u.Final.Status]
			if topic == "" {
				continue
			}
			if n := len(ids[topic+"/"+u.ID]); n != 1 && (topic != events.TopicBookingCancelled || n == 0) {
				factErr += fmt.Sprintf("%s ended %s: %d distinct %s facts; ", u.ID, u.Final.Status, n, topic)
			}
		}
		return factErr == ""
	})
	return factErr
}
