package booking

import (
	"errors"
	"time"
)

// Sentinel errors. Each one is a reply code of a script; callers map them to
// HTTP statuses or ack decisions with errors.Is at the edge.
var (
	ErrEventNotFound    = errors.New("event not found")
	ErrEventExists      = errors.New("event already exists")
	ErrInvalidEvent     = errors.New("invalid event configuration")
	ErrSalesNotStarted  = errors.New("sales have not started yet")
	ErrSalesEnded       = errors.New("sales have ended")
	ErrSoldOut          = errors.New("event is sold out")
	ErrNotFound         = errors.New("user has no booking for this event")
	ErrInvalidState     = errors.New("booking is not in the right state for this operation")
	ErrHoldExpired      = errors.New("the hold has expired")
	ErrSeatUnknown      = errors.New("seat does not exist in this event")
	ErrSeatUnavailable  = errors.New("seat is not available")
	ErrCannotCancel     = errors.New("cannot cancel during payment")
	ErrPaymentMismatch  = errors.New("payment id does not match the booking")
	ErrLatePayment      = errors.New("payment arrived after the hold was released; refund it")
	ErrInvalidArgument  = errors.New("invalid argument")
	ErrAlreadyCompleted = errors.New("booking already completed")
)

// State is where a user's booking for one event stands.
//
//	waiting ─promote─▶ active ─lock seat─▶ seat_selected ─initiate─▶ payment_pending ─success─▶ completed
//	   │                 │                     │                         │
//	   ├─cancel─▶ cancelled ◀──────cancel───────┘                         ├─failure─▶ failed
//	   └─absent─▶ abandoned   active/seat_selected ─hold ends─▶ expired ◀─┘ (after one grace period)
type State string

const (
	StateWaiting        State = "waiting"
	StateActive         State = "active"
	StateSeatSelected   State = "seat_selected"
	StatePaymentPending State = "payment_pending"
	StateCompleted      State = "completed"
	StateFailed         State = "failed"
	StateExpired        State = "expired"
	StateCancelled      State = "cancelled"
	StateAbandoned      State = "abandoned"
)

// Finished reports whether the state is final for this hold (the user may
// join again unless the state is completed).
func (s State) Finished() bool {
	switch s {
	case StateCompleted, StateFailed, StateExpired, StateCancelled, StateAbandoned:
		return true
	}
	return false
}

// InRoom reports whether the state occupies a slot of the booking room.
func (s State) InRoom() bool {
	switch s {
	case StateActive, StateSeatSelected, StatePaymentPending:
		return true
	}
	return false
}

// SeatStatus is the status of one seat of an event.
type SeatStatus string

const (
	SeatAvailable SeatStatus = "available"
	SeatHeld      SeatStatus = "held"
	SeatSold      SeatStatus = "sold"
)

// EventConfig is what an operator gives to create an event.
type EventConfig struct {
	ID   string
	Name string
	// Seats lists explicit seat ids. When empty, Rows × SeatsPerRow gives
	// A1…A<n>, B1… (rows lettered A–Z, then AA, AB…).
	Seats       []string
	Rows        int
	SeatsPerRow int
	// Capacity is the booking room's size: how many users may hold a slot at
	// once. Default 1000.
	Capacity int
	// Hold is how long an admitted user has to pick a seat and pay. Default 600 s.
	Hold time.Duration
	// Grace is given once to a hold that times out while its payment is
	// pending. Default 120 s.
	Grace time.Duration
	// SalesStart and SalesEnd bound when users may join. Zero start means
	// open now; zero end means no end.
	SalesStart time.Time
	SalesEnd   time.Time
	// BatchSize bounds how many users one promotion admits. Default 500.
	BatchSize int
	// Abandon drops a waiting user who has not been seen (joined, polled or
	// connected) for this long when their turn comes. Zero disables it.
	Abandon time.Duration
	// Sections, instead of Seats or Rows × SeatsPerRow, give the seat map
	// as priced sections (multiseat.go). The old forms are one section,
	// DefaultSectionName, at PriceCents.
	Sections   []Section
	PriceCents int64
	// Currency is the ISO 4217 code of the prices. Default DefaultCurrency.
	Currency string
	// MaxSeatsPerOrder bounds the seats of one hold: 1 to
	// MaxSeatsPerOrderLimit, default DefaultMaxSeatsPerOrder.
	MaxSeatsPerOrder int
	// AdmitPerMinute caps admissions (promotions and immediate admissions)
	// over any 60 s, on top of Capacity. Zero: no cap (door.go).
	AdmitPerMinute int
	// EarlyJoin opens the pre-queue this long before SalesStart (door.go);
	// zero: joins before the start are refused.
	EarlyJoin time.Duration
	// Challenge is ChallengePoW when a join must carry a solved
	// proof-of-work challenge (checked by the gateway), or ChallengeNone
	// (also the empty string).
	Challenge string
}

// Event is an event's configuration and live counts.
type Event struct {
	ID         string        `json:"id"`
	Name       string        `json:"name"`
	Capacity   int           `json:"capacity"`
	Hold       time.Duration `json:"-"`
	Grace      time.Duration `json:"-"`
	SalesStart time.Time     `json:"sales_start,omitzero"`
	SalesEnd   time.Time     `json:"sales_end,omitzero"`
	BatchSize  int           `json:"batch_size"`
	Abandon    time.Duration `json:"-"`
	Paused     bool          `json:"paused"`
	Rows       int           `json:"rows,omitempty"`
	PerRow     int           `json:"seats_per_row,omitempty"`
	// Orders of several seats in priced sections (multiseat.go).
	Currency         string         `json:"currency,omitempty"`
	MaxSeatsPerOrder int            `json:"max_seats_per_order"`
	Sections         []EventSection `json:"sections,omitempty"`
	PriceMinCents    int64          `json:"price_min_cents"`
	PriceMaxCents    int64          `json:"price_max_cents"`
	// AdmitPerMinute is the rate cap (0 = none).
	AdmitPerMinute int           `json:"admit_per_minute"`
	EarlyJoin      time.Duration `json:"-"`
	// DrawCommit is hex SHA-256 of the pre-queue's draw seed, published
	// from creation; DrawSeed (hex) is revealed once the sale started.
	DrawCommit string `json:"draw_commit,omitempty"`
	DrawSeed   string `json:"draw_seed,omitempty"`
	// Prequeued counts the joins into the pre-queue.
	Prequeued int64 `json:"prequeued,omitempty"`
	// Challenge: "pow" when joining needs a solved proof-of-work
	// challenge, else "none".
	Challenge string `json:"challenge"`
	Counts    Counts `json:"counts"`
}

// EventUpdate changes a live event; nil fields are left alone.
type EventUpdate struct {
	Paused   *bool
	Capacity *int
	Hold     *time.Duration
	Abandon  *time.Duration
	// Every other setting can be repaired too (limits.go has the bounds).
	Name       *string
	Grace      *time.Duration
	BatchSize  *int
	SalesStart *time.Time // the zero time: open now
	SalesEnd   *time.Time // the zero time: no end
	// MaxSeatsPerOrder applies to selections made after the change.
	MaxSeatsPerOrder *int
	// AdmitPerMinute changes the rate cap (0 = off), at once.
	AdmitPerMinute *int
	// EarlyJoin changes the pre-queue's opening for joins from now on
	// (door.go: who is pre-queued stays, the committed seed never changes).
	EarlyJoin *time.Duration
	// Challenge switches the proof-of-work challenge ("pow" or "none").
	Challenge *string
}

// Counts are an event's live numbers.
type Counts struct {
	Total     int64 `json:"total"`
	Available int64 `json:"available"`
	Held      int64 `json:"held"`
	Sold      int64 `json:"sold"`
	Waiting   int64 `json:"waiting"`
	Active    int64 `json:"active"`
	// Served is the highest join sequence admitted so far: a waiting user
	// with sequence s has at most s-Served-1 users ahead.
	Served int64 `json:"served"`
	// AdmittedLastMinute is how many users were admitted in the last 60 s,
	// the basis of the ETA.
	AdmittedLastMinute int64 `json:"admitted_last_minute"`
}

// Seat is one seat and its status.
type Seat struct {
	ID     string     `json:"seat_id"`
	Status SeatStatus `json:"status"`
}

// JoinResult is the outcome of Enqueue.
type JoinResult struct {
	// State is waiting, or active when the room had free capacity, or the
	// user's existing state on a repeated join.
	State    State
	Sequence int64
	// Position is 1-based among waiting users; 0 when not waiting.
	Position int64
	// ExpireAt is the hold's deadline when State is in the room.
	ExpireAt time.Time
	// Created is false when the user had already joined (nothing changed).
	Created bool
	// PrequeuedUntil is the sales start when the user waits in the
	// pre-queue (door.go; Position is then 0).
	PrequeuedUntil time.Time
	// Outbox holds the entries a new join wrote (Created): the joined entry
	// (the booking_request fact) and, when the user was admitted at once,
	// the promoted entry after it. Announce them and then AckOutbox.
	Outbox []OutboxEntry
}

// Status is what GetPosition reports.
type Status struct {
	State     State
	Sequence  int64
	Position  int64 // 1-based, waiting users only
	SeatID    string
	PaymentID string
	ExpireAt  time.Time
	// SoldOut is true when every seat is sold (a waiting user will not get one).
	SoldOut bool
	// Counts carries Served, Waiting and AdmittedLastMinute for the ETA.
	Counts Counts
	// AdmitPerMinute is the event's rate cap (0 = none), for the ETA.
	AdmitPerMinute int64
	// SalesStart is the event's; a waiting user before it is pre-queued
	// (Position 0).
	SalesStart time.Time
}

// Admission is a user let into the booking room.
type Admission struct {
	UserID   string
	Sequence int64
	ExpireAt time.Time
}

// Expiry is a hold that ended because its deadline passed.
type Expiry struct {
	UserID    string
	Sequence  int64
	SeatID    string
	PaymentID string
	// At is when the hold expired: its deadline (booking_expired's time,
	// the same on every path that publishes the expiry).
	At time.Time
}

// PromoteResult is what one promotion did. Reason says why it stopped:
// "room_full", "no_waiting", "sold_out", "paused" or "batch" (the batch
// bound was reached and more may follow).
type PromoteResult struct {
	Promoted  []Admission
	Expired   []Expiry
	Abandoned []string
	Reason    string
	// Outbox holds the entries written for Promoted, Expired and Abandoned
	// (a cancelled entry, From FromAbandoned): announce them and then
	// AckOutbox.
	Outbox []OutboxEntry
}

// PaymentHold is the result of InitiatePayment.
type PaymentHold struct {
	PaymentID string
	SeatID    string // the seats' ids joined by ','
	SeatIDs   []string
	// AmountCents is the sum of the seats' section prices in Currency; 0
	// for an event created before sections (the caller prices it).
	AmountCents int64
	Currency    string
	Sequence    int64
	ExpireAt    time.Time
	// Created is false when the payment had already been initiated and the
	// existing id is returned.
	Created bool
	// At is when the payment was first initiated, the same on a repeat
	// (payment_initiated's time); zero for a payment without a registry
	// record.
	At time.Time
}

// Outcome of a payment webhook or a timeout.
type Outcome string

const (
	OutcomeCompleted Outcome = "completed" // payment success took effect
	OutcomeFailed    Outcome = "failed"    // payment failure released the hold
	OutcomeDuplicate Outcome = "duplicate" // already applied: nothing changed
	OutcomeReleased  Outcome = "released"  // timeout released the hold
	OutcomeExtended  Outcome = "extended"  // timeout during payment: grace given
	OutcomeNotDue    Outcome = "not_due"   // deadline is later than now
	OutcomeNoHold    Outcome = "no_hold"   // user is not in the room (finished, never promoted)
)

// PaymentResult is the outcome of PaymentSuccess or PaymentFailure.
type PaymentResult struct {
	Outcome Outcome
	SeatID  string // the seats' ids joined by ','
	SeatIDs []string
	// AmountCents is the order's amount (completed, or late: the whole
	// amount to refund); 0 for an event created before sections.
	// SeatPrices are the seats' prices, in SeatIDs order (PaymentSuccess).
	AmountCents int64
	SeatPrices  []int64
	Sequence    int64
	// At is when PaymentSuccess first classified the payment (completed, or
	// late: refund), or PaymentFailure first recorded its failure, the same
	// on every repeat; zero for a payment started before the payment
	// registry existed.
	At time.Time
	// Duplicate is set with ErrLatePayment when the payment had been
	// classified as a refund before.
	Duplicate bool
	// SoldOutAt (PaymentSuccess: completed or duplicate) is when the
	// event's last seat was sold (event_sold_out's time); zero while seats
	// remain.
	SoldOutAt time.Time
}

// TimeoutResult is the outcome of HandleTimeout.
type TimeoutResult struct {
	Outcome   Outcome
	Sequence  int64
	SeatID    string
	PaymentID string
	// ExpireAt is the (new) deadline for OutcomeExtended and OutcomeNotDue,
	// and the deadline that passed for OutcomeReleased.
	ExpireAt time.Time
	// AlreadyExpired is set with OutcomeNoHold when the hold had been
	// expired earlier (by a promotion's reclaim): the caller republishes the
	// expiry's side effects, which are idempotent.
	AlreadyExpired bool
	// Outbox holds the expiry's outbox entry (kind "expired"): written by
	// OutcomeReleased, and returned with AlreadyExpired while some side of
	// it is still unannounced. Announce it and then AckOutbox.
	Outbox []OutboxEntry
}

// CancelResult is the outcome of Cancel.
type CancelResult struct {
	From     string // "queue" or "active"; "" on a repeat already announced
	SeatID   string
	Sequence int64
	// Duplicate is set when the user had cancelled already.
	Duplicate bool
	// Outbox holds the cancellation's entry while it is unannounced:
	// announce it (booking_cancelled, slot-released) and AckOutbox.
	Outbox []OutboxEntry
}

// FromAbandoned is the From of a cancellation made by the system: a waiting
// user absent when their turn came.
const FromAbandoned = "abandoned"

// OutboxEntry is a side effect of a state change that still has to be
// announced (timeout scheduled, user notified, event published, slot
// released). See Store.Outbox.
type OutboxEntry struct {
	Kind     OutboxKind
	UserID   string
	Sequence int64
	ExpireAt time.Time // promoted: the hold's deadline; expired: the deadline that passed (zero in older entries)
	SeatID   string    // expired and cancelled
	From     string    // cancelled only: "queue", "active" or FromAbandoned
	// Reason: restored only, what was rebuilt ("seats=<n> sold=<n>
	// completed_users=<n>"); Sequence is then the rebuild's sequence base.
	Reason string
	At     time.Time // when the entry was written
	// RequestID is the id of the HTTP request that wrote the entry, when the
	// writer passes it on (it is not stored in Redis): the Kafka event then
	// carries it in its request_id header.
	RequestID string
	// RabbitDone and KafkaDone say which side of the entry was announced
	// already (MarkOutbox): a retry does only the other one. At most one is
	// set on a stored entry; an entry with both sides done is removed.
	RabbitDone bool
	KafkaDone  bool
	// LegacyKey is set on an entry written before outbox fields carried the
	// join sequence ('p:<user>' instead of 'p:<seq>:<user>'), so that its
	// acknowledgement finds it.
	LegacyKey bool
	// Field and Value are a KindUnreadable entry as stored.
	Field, Value string
}
