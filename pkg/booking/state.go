package booking

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
	// StatePhaseEnded: the user was waiting when the phase they joined in
	// ended, with the event's on_phase_change "leave" (phases.go).
	StatePhaseEnded State = "phase_ended"
)

// Finished reports whether the state is final for this hold (the user may
// join again unless the state is completed).
func (s State) Finished() bool {
	switch s {
	case StateCompleted, StateFailed, StateExpired, StateCancelled, StateAbandoned, StatePhaseEnded:
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
	// SeatReserved: operators hold the seat for a purpose (MarkSeats).
	SeatReserved SeatStatus = "reserved"
	// SeatKilled: operators took the seat off sale (MarkSeats).
	SeatKilled SeatStatus = "killed"
	// SeatAllocated: the seat is allocated to a channel (AllocateSeats).
	SeatAllocated SeatStatus = "allocated"
)
