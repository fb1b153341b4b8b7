package booking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The waitlist of a sold-out event and its time-limited offers
// (lua/lib/waitlist.lua, docs/booking-engine.md "The waitlist"). A fan
// joins when no seat is available (or earlier, with WaitlistEarly); every
// seat that comes back (a hold that expires or is cancelled, a failed
// payment, a cancelled sale, an operator's release) is offered, in the
// same script that freed it, to the next waitlisted fan: held for them
// for the event's offer time as an ordinary hold, so accepting is the
// normal checkout, and declining or letting it run out offers the seats
// to the next fan. An offer's deadline is a hold's deadline: its timeout
// message and promotion's reclaim end it.

var (
	scriptJoinWaitlist   = newScript("join_waitlist")
	scriptWaitlistStatus = newScript("waitlist_status")
	scriptAnswerOffer    = newScript("answer_offer")
)

// Waitlist errors (reply codes of the waitlist's scripts).
var (
	ErrWaitlistDisabled = errors.New("the event has no waitlist")
	ErrNotSoldOut       = errors.New("the event is not sold out")
	ErrOfferNotFound    = errors.New("no such offer")
	ErrNotYourOffer     = errors.New("the offer is someone else's")
	ErrOfferExpired     = errors.New("the offer has expired")
	ErrOfferClosed      = errors.New("the offer was answered otherwise or has ended")
)

// Bounds of the waitlist's settings.
const (
	MinOfferTime = 10 * time.Second
	MaxOfferTime = 24 * time.Hour
)

// Offer outcomes (OutboxEntry.From of a KindOfferEnded entry, and
// AnswerOffer's result).
const (
	OfferAccepted = "accepted"
	OfferDeclined = "declined"
	OfferExpired  = "expired"
)

// Waitlist states (WaitlistStatus.State).
const (
	Waitlisted = "waitlisted" // on the waitlist
	Offered    = "offered"    // an offer is open
)

// WaitlistSettings are an event's waitlist settings.
type WaitlistSettings struct {
	// OfferTime is how long an offer holds its seats; zero turns the
	// waitlist off (no joins, no offers: returned seats go on sale).
	OfferTime time.Duration
	// Early lets fans join before the event sells out.
	Early bool
}

// SetWaitlist changes an event's waitlist settings, for offers made from
// now on: UpdateEvent with OfferTime and WaitlistEarly alone. Errors:
// ErrEventNotFound, ErrInvalidArgument (an offer time outside
// MinOfferTime..MaxOfferTime, other than zero).
func (s *Store) SetWaitlist(ctx context.Context, eventID string, w WaitlistSettings) error {
	_, err := s.UpdateEvent(ctx, eventID, EventUpdate{OfferTime: &w.OfferTime, WaitlistEarly: &w.Early})
	return err
}

// waitlistArgs are update_event.lua's field, value pairs of the waitlist
// settings in u.
func (u EventUpdate) waitlistArgs() ([]any, error) {
	var args []any
	if u.OfferTime != nil {
		if d := *u.OfferTime; d != 0 && (d < MinOfferTime || d > MaxOfferTime) {
			return nil, fmt.Errorf("%w: offer time must be 0 or from %v to %v", ErrInvalidArgument, MinOfferTime, MaxOfferTime)
		}
		args = append(args, "offer_ms", u.OfferTime.Milliseconds())
	}
	if u.WaitlistEarly != nil {
		args = append(args, "waitlist_early", boolArg(*u.WaitlistEarly))
	}
	return args, nil
}

// waitlistUpdate is the update that gives a restored event c's waitlist
// settings (nil when it has none).
func waitlistUpdate(c EventConfig) []any {
	var args []any
	if c.OfferTime > 0 {
		args = append(args, "offer_ms", c.OfferTime.Milliseconds())
	}
	if c.WaitlistEarly {
		args = append(args, "waitlist_early", 1)
	}
	return args
}

// WaitlistStatus is where a fan stands on an event's waitlist.
type WaitlistStatus struct {
	// State is Waitlisted or Offered.
	State    string `json:"state"`
	Sequence int64  `json:"sequence"`
	// Position is 1 for the next fan to get an offer (0 while offered).
	Position int64 `json:"position"`
	// Seats is how many seats the fan asked for; Waitlisted how many fans
	// wait in all.
	Seats      int64 `json:"seats"`
	Waitlisted int64 `json:"waitlisted"`
	// Created is set by the join that put the fan on the waitlist.
	Created bool `json:"-"`
	// An open offer: its seats and deadline.
	OfferSeats []string  `json:"offer_seats,omitempty"`
	ExpireAt   time.Time `json:"expire_at,omitzero"`
	// The wait of a waitlisted fan (waitlistETA): OffersPerMinute is
	// how many fans were offered seats per minute over the last
	// OfferPaceWindow; ETASeconds is Position at that pace, when ETAKnown
	// (enough offers over long enough, the sale not ended).
	OffersPerMinute float64 `json:"offers_per_minute"`
	ETASeconds      int64   `json:"eta_seconds"`
	ETAKnown        bool    `json:"eta_known"`
	// SalesEnded: the sale is over, so no more offers are made.
	SalesEnded bool      `json:"sales_ended"`
	Now        time.Time `json:"-"`
}

// The basis of a waitlisted fan's estimate: the pace of the last
// OfferPaceWindow (lua/lib/waitlist.lua offer_pace), known only from at
// least MinPaceOffers fans offered over at least MinPaceSpan, so a burst
// of seats coming back at once does not promise a short wait.
const (
	OfferPaceWindow = 10 * time.Minute
	MinPaceOffers   = 3
	MinPaceSpan     = time.Minute
)

// waitlistETA sets w's pace and estimate from fans offered seats over
// window.
func waitlistETA(w *WaitlistStatus, fans int64, window time.Duration) {
	if window > 0 {
		w.OffersPerMinute = float64(fans) / window.Minutes()
	}
	if w.State != Waitlisted || w.SalesEnded || fans < MinPaceOffers || window < MinPaceSpan {
		return
	}
	w.ETAKnown = true
	w.ETASeconds = int64((time.Duration(w.Position) * window / time.Duration(fans)).Round(time.Second).Seconds())
}

// JoinWaitlist puts userID on the event's waitlist, wanting seats seats
// (1 to the event's seats per order), in one atomic step. A repeat
// answers the fan's place (Created false), or their open offer. Errors:
// ErrWaitlistDisabled, ErrNotSoldOut (seats are on sale and the event
// does not let fans join early), ErrSalesEnded, ErrAlreadyCompleted (the
// fan bought), *StateError (in the queue or the room), ErrInvalidArgument,
// ErrEventNotFound.
func (s *Store) JoinWaitlist(ctx context.Context, eventID, userID string, seats int) (WaitlistStatus, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return WaitlistStatus{}, err
	}
	r, err := s.run(ctx, scriptJoinWaitlist, eventID, userID, seats)
	if err != nil {
		return WaitlistStatus{}, fmt.Errorf("join waitlist: %w", err)
	}
	var w WaitlistStatus
	r.scan(&w.State, &w.Sequence, &w.Position, &w.Seats, &w.Created, &w.Now)
	return w, nil
}

// Waitlist reads userID's place on the event's waitlist or their open
// offer. Errors: ErrNotFound (neither), ErrEventNotFound.
func (s *Store) Waitlist(ctx context.Context, eventID, userID string) (WaitlistStatus, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return WaitlistStatus{}, err
	}
	r, err := s.run(ctx, scriptWaitlistStatus, eventID, userID)
	if err != nil {
		return WaitlistStatus{}, fmt.Errorf("waitlist: %w", err)
	}
	var w WaitlistStatus
	var seats string
	var fans, windowMS int64
	r.scan(&w.State, &w.Sequence, &w.Position, &w.Seats, &w.Waitlisted, &w.ExpireAt, &seats, &fans, &windowMS, &w.SalesEnded, &w.Now)
	if seats != "" {
		w.OfferSeats = SplitSeats(seats)
	}
	waitlistETA(&w, fans, time.Duration(windowMS)*time.Millisecond)
	return w, nil
}

// OfferAnswer is what AnswerOffer did.
type OfferAnswer struct {
	// Outcome is OfferAccepted or OfferDeclined.
	Outcome string
	Seats   []string
	// ExpireAt is an accepted offer's hold deadline (pay before it).
	ExpireAt time.Time
	// Duplicate: the offer had been answered so before.
	Duplicate bool
	// OffersMade counts the offers a decline passed the seats on in.
	OffersMade int64
	Now        time.Time
}

// AnswerOffer accepts (accept true) or declines the open offer sequence of
// userID. Accepting keeps the hold for the normal checkout
// (InitiatePayment); declining frees the seats, which go to the next
// waitlisted fans. A repeat of the same answer is a Duplicate. Errors
// (nothing changed): ErrOfferNotFound, ErrNotYourOffer, ErrOfferExpired,
// ErrOfferClosed (answered otherwise or ended), ErrEventNotFound.
func (s *Store) AnswerOffer(ctx context.Context, eventID, userID string, sequence int64, accept bool) (OfferAnswer, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return OfferAnswer{}, err
	}
	if sequence < 1 {
		return OfferAnswer{}, fmt.Errorf("%w: offer %d", ErrInvalidArgument, sequence)
	}
	action := "decline"
	if accept {
		action = "accept"
	}
	r, err := s.run(ctx, scriptAnswerOffer, eventID, userID, strconv.FormatInt(sequence, 10), action)
	if err != nil {
		return OfferAnswer{}, fmt.Errorf("answer offer: %w", err)
	}
	var a OfferAnswer
	var seats string
	r.scan(&a.Outcome, &seats, &a.ExpireAt, &a.Duplicate, &a.OffersMade, &a.Now)
	a.Seats = SplitSeats(seats)
	return a, nil
}

var scriptLoadWaitlist = newScript("load_waitlist")

// WaitlistPlace is a fan's place on a waitlist as the ledger keeps it.
type WaitlistPlace struct {
	UserID   string
	Sequence int64
	Seats    int
}

// LoadWaitlist puts a rebuilt event's waitlist back (lua/load_waitlist.lua):
// each fan at their join sequence, skipping one already there, offered,
// in the queue or the room, or a buyer; then the seats free after the
// rebuild are offered to the waitlist in order. Returns how many fans
// were put back and how many offers were made. Errors: ErrEventNotFound,
// ErrInvalidArgument.
func (s *Store) LoadWaitlist(ctx context.Context, eventID string, places []WaitlistPlace) (restored, offers int, err error) {
	if err := checkIDs(eventID); err != nil {
		return 0, 0, err
	}
	args := make([]any, 0, 3*len(places))
	for _, p := range places {
		if err := checkIDs(p.UserID); err != nil {
			return 0, 0, err
		}
		args = append(args, p.UserID, p.Sequence, max(p.Seats, 1))
	}
	r, err := s.run(ctx, scriptLoadWaitlist, eventID, args...)
	if err != nil {
		return 0, 0, fmt.Errorf("load waitlist: %w", err)
	}
	r.scan(&restored, &offers)
	return restored, offers, nil
}
