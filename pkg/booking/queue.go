package booking

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Enqueue joins a user to an event's queue, or admits them at once when the
// room has a free slot and nobody waits. Joining again returns the current
// entry unchanged (Created false). limits are checked first (Limit): a
// refused join changes nothing. Errors: ErrEventNotFound,
// ErrSalesNotStarted, ErrSalesEnded, ErrSoldOut, ErrInvalidArgument,
// ErrRateLimited (a *RateLimitedError).
func (s *Store) Enqueue(ctx context.Context, eventID, userID string, limits ...Limit) (JoinResult, error) {
	lkeys, args, err := s.enqueueArgs(eventID, userID, "", limits)
	if err != nil {
		return JoinResult{}, err
	}
	return s.runJoin(ctx, eventID, userID, lkeys, args)
}

// runJoin runs enqueue.lua with args for userID and decodes its answer,
// unless the pipeliner did (answerJoins).
func (s *Store) runJoin(ctx context.Context, eventID, userID string, lkeys []string, args []any) (JoinResult, error) {
	v, err := s.runRaw(ctx, scriptEnqueue, eventID, lkeys, args)
	if a, ok := v.(*joinAnswer); ok && err == nil {
		return a.res, a.err
	}
	r, err := decodeReply(v, err)
	return joinResult(r, err, userID)
}

// enqueueArgs are a join's limit keys and enqueue.lua's ARGV (user, own,
// the access code's digest ("": none), then per limit its interval and
// burst). Concurrent joins of one event with the same limits go to Redis
// together as one enqueue_batch (pipeline.go groupCalls).
func (s *Store) enqueueArgs(eventID, userID, digest string, limits []Limit) (lkeys []string, args []any, err error) {
	if err := checkIDs(eventID, userID); err != nil {
		return nil, nil, err
	}
	// the number of the user's own limit among those on (0: none), which
	// the join that places them does not count
	own := ownLimit(limits, userID)
	return s.limitArgs(eventID, limits, userID, own, digest)
}

// joinResult decodes enqueue.lua's reply (or its error) for userID's join.
func joinResult(r reply, err error, userID string) (JoinResult, error) {
	if err != nil {
		return JoinResult{}, fmt.Errorf("enqueue: %w", err)
	}
	var res JoinResult
	r.scan(&res.State, &res.Sequence, &res.Position, &res.ExpireAt, &res.Created, &res.PrequeuedUntil, &res.At)
	if len(r) > 9 { // a redeemed access code (EnqueueCode)
		res.Code = &CodeUse{}
		r[8:].values(&res.Code.CodeID, &res.Code.Use, &res.Code.Phase)
	}
	if res.Created {
		res.Outbox = []OutboxEntry{{Kind: KindJoined, UserID: userID, Sequence: res.Sequence, At: res.At}}
		if res.Code != nil {
			res.Outbox[0].Code = *res.Code
		}
		if res.State == StateActive {
			res.Outbox = append(res.Outbox, outboxFor([]Admission{{UserID: userID, Sequence: res.Sequence, ExpireAt: res.ExpireAt}}, nil, res.At)...)
		}
	}
	return res, nil
}

// Position reports where a user stands. A waiting user's call also counts
// as presence for abandonment; limits are checked first (Limit). Errors:
// ErrEventNotFound, ErrNotFound (a *NotFoundError whose Status still
// carries SoldOut and Counts), ErrRateLimited (a *RateLimitedError).
func (s *Store) Position(ctx context.Context, eventID, userID string, limits ...Limit) (Status, error) {
	lkeys, args, err := s.positionArgs(eventID, userID, limits)
	if err != nil {
		return Status{}, err
	}
	r, err := s.runLimited(ctx, scriptGetPosition, eventID, lkeys, args...)
	return positionStatus(r, err)
}

// positionArgs are a read's limit keys and get_position.lua's ARGV (user,
// then per limit its interval and burst). Concurrent reads of one
// event go to Redis together as one get_position_batch (pipeline.go
// groupCalls).
func (s *Store) positionArgs(eventID, userID string, limits []Limit) ([]string, []any, error) {
	if err := checkIDs(eventID, userID); err != nil {
		return nil, nil, err
	}
	return s.limitArgs(eventID, limits, userID)
}

// positionStatus decodes get_position.lua's reply (or its error).
func positionStatus(r reply, err error) (Status, error) {
	var st Status
	if errors.Is(err, ErrNotFound) {
		r.scan(&st.SoldOut, &st.Counts.Served, &st.Counts.Waiting, &st.Counts.AdmittedLastMinute,
			&st.AdmitPerMinute, &st.SalesStart, &st.SalesEnded)
		return Status{}, &NotFoundError{Status: st}
	}
	if err != nil {
		return Status{}, fmt.Errorf("position: %w", err)
	}
	r.scan(&st.State, &st.Sequence, &st.Position, &st.SeatID, &st.PaymentID, &st.ExpireAt, &st.SoldOut,
		&st.Counts.Served, &st.Counts.Waiting, &st.Counts.AdmittedLastMinute, &st.AdmitPerMinute, &st.SalesStart, &st.At,
		&st.SalesEnded)
	return st, nil
}

// Promote reclaims expired holds and admits waiting users into every free
// slot of the room, in join order, at most max users (0: the event's batch
// size). Every admission and expiry is also written to the event's outbox;
// the caller announces them and then calls AckOutbox.
func (s *Store) Promote(ctx context.Context, eventID string, max int) (PromoteResult, error) {
	if err := checkIDs(eventID); err != nil {
		return PromoteResult{}, err
	}
	r, err := s.run(ctx, scriptPromote, eventID, max)
	if err != nil {
		return PromoteResult{}, fmt.Errorf("promote: %w", err)
	}
	var res PromoteResult
	var promoted, expired, abandonedUsers reply
	r.scan(&res.Reason, &promoted, &expired, &abandonedUsers, &res.At, &res.HoldsPausedSince)
	promoted.records(3, func(rec reply) {
		var a Admission
		rec.values(&a.UserID, &a.Sequence, &a.ExpireAt)
		res.Promoted = append(res.Promoted, a)
	})
	expired.records(5, func(rec reply) {
		var x Expiry
		rec.values(&x.UserID, &x.Sequence, &x.SeatID, &x.PaymentID, &x.At)
		res.Expired = append(res.Expired, x)
	})
	var abandoned []OutboxEntry
	abandonedUsers.records(2, func(rec reply) {
		e := OutboxEntry{Kind: KindCancelled, From: FromAbandoned, At: res.At}
		rec.values(&e.UserID, &e.Sequence)
		res.Abandoned = append(res.Abandoned, e.UserID)
		abandoned = append(abandoned, e)
	})
	res.Outbox = append(outboxFor(res.Promoted, res.Expired, res.At), abandoned...)
	return res, nil
}

// Touch records that waiting users are present (connected to the notifier),
// so abandonment does not drop them: one script call for many users. Users
// not waiting are left alone; while abandonment is off it does nothing.
// Errors: ErrEventNotFound.
func (s *Store) Touch(ctx context.Context, eventID string, userIDs ...string) error {
	if len(userIDs) == 0 {
		return nil
	}
	if err := checkIDs(eventID); err != nil {
		return err
	}
	args := make([]any, 0, len(userIDs))
	for _, u := range userIDs {
		args = append(args, u)
	}
	if _, err := s.run(ctx, scriptTouch, eventID, args...); err != nil {
		return fmt.Errorf("touch: %w", err)
	}
	return nil
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
	// pre-queue (prequeue.go; Position is then 0).
	PrequeuedUntil time.Time
	// At is the join's time, Redis's clock when the script ran.
	At time.Time
	// Code is the access code's redemption of a new join with a code
	// (EnqueueCode; nil otherwise).
	Code *CodeUse
	// Outbox holds the entries a new join wrote (Created): the joined entry
	// (the booking_request fact) and, when the user was admitted at once,
	// the promoted entry after it. Announce them and then AckOutbox.
	Outbox []OutboxEntry
	// Attached is what the Store's JoinsHook (OnJoins) attached to this
	// answer (the gateway: the join's receipt); nil without one.
	Attached any
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
	// At is the read's time, Redis's clock when the script ran: compare
	// SalesStart and ExpireAt with it, not with a process's clock.
	At time.Time
	// SalesEnded: the event's sales end has passed at At; a waiting user
	// will not be admitted (window.go).
	SalesEnded bool
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
	// At is the promotion's time, Redis's clock when the script ran.
	At time.Time
	// HoldsPausedSince is when the hold clocks stopped, for Reason
	// "provider_degraded" (provider.go).
	HoldsPausedSince time.Time
	// Outbox holds the entries written for Promoted, Expired and Abandoned
	// (a cancelled entry, From FromAbandoned): announce them and then
	// AckOutbox.
	Outbox []OutboxEntry
}
