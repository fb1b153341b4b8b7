package booking_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/redistest"
)

// The examples run against the Redis on 127.0.0.1:6379 (make infra), each
// under a key prefix of its own that it deletes at the end, with a fixed
// clock so their output does not depend on the time of day.

// exampleClock is the examples' time: 2026-06-01 18:00 UTC until advanced.
var exampleClock = struct {
	sync.Mutex
	now time.Time
}{now: time.Date(2026, 6, 1, 18, 0, 0, 0, time.UTC)}

func exampleNow() time.Time {
	exampleClock.Lock()
	defer exampleClock.Unlock()
	return exampleClock.now
}

// exampleStore returns a Store under a fresh prefix whose clock starts at
// 18:00 each time, and a function that deletes its keys and closes it.
func exampleStore() (*booking.Store, func()) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	prefix := "example-" + rand.Text()[:10]
	exampleClock.Lock()
	exampleClock.now = time.Date(2026, 6, 1, 18, 0, 0, 0, time.UTC)
	exampleClock.Unlock()
	s := booking.New(rdb, booking.WithPrefix(prefix), booking.WithClock(exampleNow))
	return s, func() {
		s.Close()
		_ = redistest.DeletePrefix(context.Background(), rdb, prefix)
		_ = rdb.Close()
	}
}

// exampleEvent is exampleStore with an event id of 10 seats A1…A10 and a
// room of one.
func exampleEvent(id string) (*booking.Store, func()) {
	s, done := exampleStore()
	if _, err := s.CreateEvent(context.Background(), booking.EventConfig{ID: id, Rows: 1, SeatsPerRow: 10, Capacity: 1}); err != nil {
		panic(err)
	}
	return s, done
}

// A user joins an event, is admitted at once because the room has room,
// holds a seat, pays, and the payment completes the booking.
func Example() {
	s, done := exampleStore()
	defer done()
	ctx := context.Background()

	if _, err := s.CreateEvent(ctx, booking.EventConfig{ID: "concert", Rows: 2, SeatsPerRow: 5, Capacity: 1}); err != nil {
		fmt.Println(err)
		return
	}
	join, _ := s.Enqueue(ctx, "concert", "alice")
	fmt.Println("join:", join.State, "sequence", join.Sequence)

	deadline, _ := s.LockSeat(ctx, "concert", "alice", "A3")
	fmt.Println("hold until:", deadline.UTC().Format(time.Kitchen))

	hold, _ := s.InitiatePayment(ctx, "concert", "alice", "pay-1")
	fmt.Println("paying for:", hold.SeatIDs)

	paid, err := s.PaymentSuccess(ctx, "concert", "alice", "pay-1")
	fmt.Println("payment:", paid.Outcome, paid.SeatIDs, err)

	e, _ := s.GetEvent(ctx, "concert")
	fmt.Println("sold:", e.Counts.Sold, "available:", e.Counts.Available)
	// Output:
	// join: active sequence 1
	// hold until: 6:10PM
	// paying for: [A3]
	// payment: completed [A3] <nil>
	// sold: 1 available: 9
}

// Joining twice changes nothing: the second call answers the same entry
// with Created false. A full room puts the next user in the queue.
func ExampleStore_Enqueue() {
	s, done := exampleEvent("gig")
	defer done()
	ctx := context.Background()
	for _, user := range []string{"alice", "alice", "bob"} {
		r, err := s.Enqueue(ctx, "gig", user)
		fmt.Println(user, r.State, "position", r.Position, "created", r.Created, err)
	}
	// Output:
	// alice active position 0 created true <nil>
	// alice active position 0 created false <nil>
	// bob waiting position 1 created true <nil>
}

// Promote admits waiting users into the room's free slots in join order,
// and returns the outbox entries the caller announces and acknowledges.
func ExampleStore_Promote() {
	s, done := exampleEvent("show")
	defer done()
	ctx := context.Background()
	s.Enqueue(ctx, "show", "alice") // admitted at once
	s.Enqueue(ctx, "show", "bob")   // waits
	if _, err := s.Cancel(ctx, "show", "alice"); err != nil {
		fmt.Println(err)
		return
	}
	p, err := s.Promote(ctx, "show", 0)
	fmt.Println(len(p.Promoted), p.Promoted[0].UserID, p.Reason, err)
	for _, e := range p.Outbox {
		fmt.Println("announce:", e.Kind, e.UserID)
	}
	fmt.Println(s.AckOutbox(ctx, "show", p.Outbox...))
	// Output:
	// 1 bob no_waiting <nil>
	// announce: promoted bob
	// <nil>
}

// Position tells a waiting user where they stand; for someone who never
// joined it returns a *NotFoundError that still carries the event's
// numbers.
func ExampleStore_Position() {
	s, done := exampleEvent("tour")
	defer done()
	ctx := context.Background()
	for _, u := range []string{"alice", "bob", "carol"} {
		s.Enqueue(ctx, "tour", u)
	}
	st, _ := s.Position(ctx, "tour", "carol")
	fmt.Println("carol:", st.State, "position", st.Position)

	_, err := s.Position(ctx, "tour", "dave")
	var nf *booking.NotFoundError
	if errors.As(err, &nf) {
		fmt.Println("dave:", err, "- waiting:", nf.Status.Counts.Waiting)
	}
	// Output:
	// carol: waiting position 2
	// dave: user has no booking for this event - waiting: 2
}

// A payment that arrives after its hold was released is never a sale:
// PaymentSuccess returns a *LatePaymentError naming what to refund.
func ExampleStore_PaymentSuccess_late() {
	s, done := exampleEvent("late")
	defer done()
	ctx := context.Background()
	s.Enqueue(ctx, "late", "alice")
	s.LockSeat(ctx, "late", "alice", "A1")
	s.InitiatePayment(ctx, "late", "alice", "pay-1")
	s.PaymentFailure(ctx, "late", "alice", "pay-1") // the hold ends

	_, err := s.PaymentSuccess(ctx, "late", "alice", "pay-1")
	var late *booking.LatePaymentError
	if errors.As(err, &late) {
		fmt.Println(errors.Is(err, booking.ErrLatePayment), "refund seats", late.Payment.SeatIDs)
	}
	// Output:
	// true refund seats [A1]
}

// A hold whose deadline passed while its payment is pending gets one grace
// period; the next timeout releases it, and the expiry comes back as an
// outbox entry to announce.
func ExampleStore_HandleTimeout() {
	s, done := exampleEvent("timeouts")
	defer done()
	ctx := context.Background()
	s.Enqueue(ctx, "timeouts", "alice")
	s.LockSeat(ctx, "timeouts", "alice", "A1")
	s.InitiatePayment(ctx, "timeouts", "alice", "pay-1")
	for _, wait := range []time.Duration{booking.DefaultHold, booking.DefaultGrace} {
		exampleClock.Lock()
		exampleClock.now = exampleClock.now.Add(wait)
		exampleClock.Unlock()
		r, err := s.HandleTimeout(ctx, "timeouts", "alice")
		fmt.Println(r.Outcome, len(r.Outbox), err)
	}
	st, _ := s.Position(ctx, "timeouts", "alice")
	fmt.Println(st.State)
	// Output:
	// extended 0 <nil>
	// released 1 <nil>
	// expired
}

// A malformed id gets the same error from every method.
func ExampleIDError() {
	s, done := exampleStore()
	defer done()
	ctx := context.Background()
	_, err1 := s.Enqueue(ctx, "concert", "a b")
	_, err2 := s.GetEvent(ctx, "{x}")
	var idErr *booking.IDError
	fmt.Println(errors.As(err1, &idErr), idErr.ID, errors.Is(err2, booking.ErrInvalidArgument))
	fmt.Println(err2)
	// Output:
	// true a b true
	// invalid argument: bad id "{x}"
}

// LockSeats holds a selection of several seats all or none: when another
// user holds one of them, nothing is locked and the error names the seats
// taken.
func ExampleStore_LockSeats() {
	s, done := exampleStore()
	defer done()
	ctx := context.Background()
	if _, err := s.CreateEvent(ctx, booking.EventConfig{ID: "club", Rows: 1, SeatsPerRow: 6, Capacity: 2}); err != nil {
		fmt.Println(err)
		return
	}
	for _, u := range []string{"alice", "bob"} {
		_, _ = s.Enqueue(ctx, "club", u)
	}
	_, err := s.LockSeats(ctx, "club", "alice", []string{"A2", "A3"})
	fmt.Println("alice:", err)

	_, err = s.LockSeats(ctx, "club", "bob", []string{"A1", "A2"})
	var taken *booking.SeatsTakenError
	if errors.As(err, &taken) {
		fmt.Println("bob:", taken.Seats, errors.Is(err, booking.ErrSeatUnavailable))
	}
	st, _ := s.Position(ctx, "club", "bob")
	fmt.Printf("bob holds: %q\n", st.SeatID)
	// Output:
	// alice: <nil>
	// bob: [A2] true
	// bob holds: ""
}

// Cancel takes a user out of the room (freeing the seat) or the queue, and
// returns the cancellation's outbox entry, which the caller announces and
// then acknowledges. Cancelling again is not an error: Duplicate, with the
// entry again only while it is unannounced.
func ExampleStore_Cancel() {
	s, done := exampleEvent("talk")
	defer done()
	ctx := context.Background()
	_, _ = s.Enqueue(ctx, "talk", "alice") // admitted: the room holds one
	_, _ = s.Enqueue(ctx, "talk", "bob")   // waiting
	_, _ = s.LockSeat(ctx, "talk", "alice", "A1")

	for _, u := range []string{"alice", "bob", "bob"} {
		r, err := s.Cancel(ctx, "talk", u)
		if r.Duplicate {
			fmt.Println(u, "again: duplicate, outbox", len(r.Outbox), err)
			continue
		}
		fmt.Printf("%s from %s, seat %q, outbox %d %v\n", u, r.From, r.SeatID, len(r.Outbox), err)
		_ = s.AckOutbox(ctx, "talk", r.Outbox...) // announced (admission.Announcer does both)
	}
	// Output:
	// alice from active, seat "A1", outbox 1 <nil>
	// bob from queue, seat "", outbox 1 <nil>
	// bob again: duplicate, outbox 0 <nil>
}
