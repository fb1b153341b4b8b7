package ledger

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// Allocations to channels (docs/ledger.md "Allocations"): seat_marks rows
// with mark 'allocate' and the channel as purpose, each channel's release
// time in allocation_releases, and the end of an allocation a change
// MarkReleaseAllocation of seat_mark_changes. The seats allocated to the
// channels wheelchair and companion are of that kind for good
// (accessible_seats): the end of their allocation keeps it.

// MarkReleaseAllocation is the change that ends a channel's allocation
// (seat_mark_changes.mark; its fact allocation_released).
const MarkReleaseAllocation booking.SeatMark = "release_allocation"

// SystemActor is the actor of an allocation ended at its release time.
const SystemActor = "system"

// AllocateSeats records that actor allocated seatIDs to channel (and,
// unless releaseAt is zero, the channel's release time) and calls apply
// (booking.Store.AllocateSeats) in the same transaction, as MarkSeats.
// An end of the channel's allocation that Redis took and keeps and the
// ledger lacks (booking.Store.EndedAllocations: a call whose transaction
// rolled back), which the new allocation makes Redis forget, is recorded
// first, as the reconciliation would (recordEnd).
func (l *Ledger) AllocateSeats(ctx context.Context, store *booking.Store, eventID, channel, actor string, releaseAt time.Time,
	seatIDs []string, apply func(context.Context) ([]string, error)) (MarkChange, error) {
	also := func(tx pgx.Tx) (int, error) {
		ended, err := store.EndedAllocations(ctx, eventID)
		if err != nil {
			return 0, err
		}
		lost := 0
		if seats, ok := ended[channel]; ok {
			c, err := recordEnd(ctx, tx, eventID, channel, seats)
			if err != nil {
				return 0, err
			}
			if c != nil {
				lost++
			}
		}
		return lost, recordAllocation(ctx, tx, eventID, channel, actor, releaseAt, seatIDs)
	}
	return l.markSeats(ctx, store, eventID, booking.MarkAllocate, channel, actor, seatIDs, also, apply)
}

// recordAllocation writes in tx what an allocation of seatIDs to channel
// records beside their seat_marks rows: the channel's release time
// (unless releaseAt is zero) and, for the channels wheelchair and
// companion, the seats' kind.
func recordAllocation(ctx context.Context, tx pgx.Tx, eventID, channel, actor string, releaseAt time.Time, seatIDs []string) error {
	if !releaseAt.IsZero() {
		if _, err := tx.Exec(ctx, `INSERT INTO allocation_releases (event_id, channel, release_at, actor)
			VALUES ($1, $2, $3, $4) ON CONFLICT (event_id, channel) DO UPDATE
			SET release_at = EXCLUDED.release_at, actor = EXCLUDED.actor, set_at = now()`,
			eventID, channel, releaseAt, actor); err != nil {
			return err
		}
	}
	if channel != booking.ChannelWheelchair && channel != booking.ChannelCompanion {
		return nil
	}
	// the seats' kind, kept when the allocation ends (AccessibleSeats)
	_, err := tx.Exec(ctx, `INSERT INTO accessible_seats (event_id, seat_id, kind, actor)
		SELECT $1, s, $3, $4 FROM unnest($2::text[]) AS s
		ON CONFLICT (event_id, seat_id) DO UPDATE SET kind = EXCLUDED.kind, actor = EXCLUDED.actor, set_at = now()
		WHERE accessible_seats.kind <> EXCLUDED.kind`, eventID, seatIDs, channel, actor)
	return err
}

// ReleaseAllocation records the end of channel's allocation by actor
// (SystemActor at its release time): its seat_marks rows and release time
// go, and apply (booking.Store.ReleaseAllocation) runs in the same
// transaction, so a refusal (not due yet) leaves the allocation recorded.
// A change is numbered when the allocation existed, with the seats Redis
// put on sale; when Redis had ended it already (a call whose transaction
// rolled back, repeated), with the seats that end put on sale. Ending one
// that exists in neither (a repeat) records nothing (ID 0). Seats Redis
// allocates to channel that the ledger lacks (an allocation whose
// transaction rolled back) are recorded first, as the reconciliation
// would (keepAllocation). It holds the event's row, as MarkSeats does.
func (l *Ledger) ReleaseAllocation(ctx context.Context, store *booking.Store, eventID, channel, actor string,
	apply func(context.Context) (booking.AllocationEnd, error)) (MarkChange, error) {
	res := MarkChange{EventID: eventID, Mark: MarkReleaseAllocation, Purpose: channel, Actor: actor}
	lost := 0
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := holdEvent(ctx, tx, eventID); err != nil {
			return err
		}
		var err error
		if lost, err = keepAllocation(ctx, tx, store, eventID, channel); err != nil {
			return err
		}
		recorded, err := endAllocation(ctx, tx, eventID, channel)
		if err != nil {
			return err
		}
		end, err := apply(ctx)
		if err != nil {
			return err
		}
		switch {
		case !end.Repeat:
			res.Changed = end.Released
		case recorded:
			res.Changed = end.Before
		default:
			return nil
		}
		return recordMarkChange(ctx, tx, &res)
	})
	if errors.Is(err, ErrEventNotFound) {
		return MarkChange{}, err
	}
	if err != nil {
		return MarkChange{}, wrap("release allocation", err)
	}
	l.countRecorded("seat_marks", lost)
	return res, nil
}

// keepAllocation records in tx the seats Redis allocates to channel that
// the ledger does not (recordLostMarks, over the channel's seats:
// booking.Store.ChannelSeats), so that their end follows a recorded
// allocation; it returns how many changes it recorded.
func keepAllocation(ctx context.Context, tx pgx.Tx, store *booking.Store, eventID, channel string) (int, error) {
	seats, err := store.ChannelSeats(ctx, eventID, channel)
	if err != nil || len(seats) == 0 {
		return 0, err
	}
	kept, err := recordLostMarks(ctx, tx, store, eventID, seats, func(_ string, r booking.MarkedSeat, ok bool) bool {
		return ok && r.Mark == booking.MarkAllocate && r.Purpose == channel
	})
	return len(kept), err
}

// recordEnd records in tx the end of channel's allocation that Redis took
// and the ledger lacks, with the seats it put on sale: a numbered change
// by ReconcileActor, whose fact the sweep publishes. Nil when the ledger
// had no allocation of channel to end.
func recordEnd(ctx context.Context, tx pgx.Tx, eventID, channel string, seats []string) (*MarkChange, error) {
	recorded, err := endAllocation(ctx, tx, eventID, channel)
	if err != nil || !recorded {
		return nil, err
	}
	c := MarkChange{EventID: eventID, Mark: MarkReleaseAllocation, Purpose: channel, Actor: ReconcileActor, Changed: seats}
	if err := recordMarkChange(ctx, tx, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// endAllocation deletes in tx channel's seat_marks rows and release time;
// true when there were any.
func endAllocation(ctx context.Context, tx pgx.Tx, eventID, channel string) (bool, error) {
	a, err := tx.Exec(ctx, `DELETE FROM seat_marks WHERE event_id = $1 AND mark = 'allocate' AND purpose = $2`,
		eventID, channel)
	if err != nil {
		return false, err
	}
	b, err := tx.Exec(ctx, `DELETE FROM allocation_releases WHERE event_id = $1 AND channel = $2`, eventID, channel)
	if err != nil {
		return false, err
	}
	return a.RowsAffected()+b.RowsAffected() > 0, nil
}

// SetSeatKind records that actor set seatIDs' accessibility kind
// (booking.ChannelWheelchair or booking.ChannelCompanion) or cleared it
// (kind ""): accessible_seats, which a rebuild reads, gets or loses the
// rows. apply (booking.Store.SetSeatKind, which returns the seats whose
// kind changed) runs in the same transaction, so a refusal there leaves
// the ledger as it was. It returns the seats whose kind changed in Redis
// or in the record (a change Redis took whose transaction rolled back,
// repeated), in seatIDs' order; it holds the event's row, as MarkSeats
// does. Errors: ErrEventNotFound, and apply's.
func (l *Ledger) SetSeatKind(ctx context.Context, eventID, kind, actor string, seatIDs []string,
	apply func(context.Context) ([]string, error)) ([]string, error) {
	var changed []string
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := holdEvent(ctx, tx, eventID); err != nil {
			return err
		}
		recorded, err := writeKinds(ctx, tx, eventID, kind, actor, seatIDs)
		if err != nil {
			return err
		}
		if changed, err = apply(ctx); err != nil {
			return err
		}
		changed = changedOrRecorded(seatIDs, changed, recorded)
		return nil
	})
	if errors.Is(err, ErrEventNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, wrap("set seat kind", err) // apply's errors stay visible to errors.Is and As
	}
	return changed, nil
}

// writeKinds gives seatIDs kind in accessible_seats in tx (kind "":
// their rows go), by actor, and returns the seats whose rows it changed.
func writeKinds(ctx context.Context, tx pgx.Tx, eventID, kind, actor string, seatIDs []string) ([]string, error) {
	var rows pgx.Rows
	var err error
	if kind == "" {
		rows, err = tx.Query(ctx, `DELETE FROM accessible_seats WHERE event_id = $1 AND seat_id = ANY($2) RETURNING seat_id`,
			eventID, seatIDs)
	} else {
		rows, err = tx.Query(ctx, `INSERT INTO accessible_seats (event_id, seat_id, kind, actor)
			SELECT DISTINCT $1, s, $3, $4 FROM unnest($2::text[]) AS s
			ON CONFLICT (event_id, seat_id) DO UPDATE SET kind = EXCLUDED.kind, actor = EXCLUDED.actor, set_at = now()
			WHERE accessible_seats.kind <> EXCLUDED.kind
			RETURNING seat_id`, eventID, seatIDs, kind, actor)
	}
	return rowsOf(rows, err, pgx.RowTo[string])
}

// KeepKinds records the seats' accessibility kinds as Redis has them
// (booking.Store.SeatKinds) where the ledger's accessible_seats lack them
// or have them otherwise, and clears the kinds Redis has not: set_kind
// changes Redis took whose ledger transaction rolled back and that nobody
// repeated (fans were shown those seats so, and a rebuild writes the
// ledger's kinds). It runs after KeepMarks, whose allocations to the
// channels wheelchair and companion record their seats' kinds. It
// returns the seats whose kind it recorded, sorted. It holds the event's
// row, so no change is under way; when another transaction holds it, or
// a rebuild of the event has steps still to run (Redis lacks the
// ledger's kinds then), it does nothing this time.
func (l *Ledger) KeepKinds(ctx context.Context, store *booking.Store, eventID string) ([]string, error) {
	var out []string
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		out = nil
		if free, err := lockEventIfFree(ctx, tx, eventID); !free || err != nil {
			return err
		}
		inRedis, settled, err := store.SeatKinds(ctx, eventID)
		if err != nil || !settled {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT seat_id, kind FROM accessible_seats WHERE event_id = $1`, eventID)
		recorded, err := rowsOf(rows, err, pgx.RowToStructByPos[struct{ Seat, Kind string }])
		if err != nil {
			return err
		}
		todo := map[string][]string{} // kind ("": none) -> seats
		inLedger := make(map[string]bool, len(recorded))
		for _, r := range recorded {
			inLedger[r.Seat] = true
			if k := inRedis[r.Seat]; k != r.Kind {
				todo[k] = append(todo[k], r.Seat)
			}
		}
		for seat, k := range inRedis {
			if !inLedger[seat] {
				todo[k] = append(todo[k], seat)
			}
		}
		for k, seats := range todo {
			written, err := writeKinds(ctx, tx, eventID, k, ReconcileActor, seats)
			if err != nil {
				return err
			}
			out = append(out, written...)
		}
		slices.Sort(out)
		return nil
	})
	if err != nil {
		return nil, wrap("keep kinds", err)
	}
	return out, nil
}

// AccessibleSeats returns the event's wheelchair spaces and companion
// seats (table accessible_seats), seat id -> booking.ChannelWheelchair
// or booking.ChannelCompanion: the seats ever allocated to one of those
// channels, the last of them, also once the allocation ended.
func (l *Ledger) AccessibleSeats(ctx context.Context, eventID string) (map[string]string, error) {
	rows, err := l.pool.Query(ctx, `SELECT seat_id, kind FROM accessible_seats WHERE event_id = $1`, eventID)
	pairs, err := rowsOf(rows, err, func(r pgx.CollectableRow) ([2]string, error) {
		var p [2]string
		err := r.Scan(&p[0], &p[1])
		return p, err
	})
	if err != nil {
		return nil, wrap("accessible seats", err)
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		out[p[0]] = p[1]
	}
	return out, nil
}

// AllocationRelease is a channel's release time (allocation_releases).
type AllocationRelease struct {
	EventID   string    `json:"event_id"`
	Channel   string    `json:"channel"`
	ReleaseAt time.Time `json:"release_at"`
	Actor     string    `json:"actor"`
}

// AllocationReleases returns the event's release times, by channel.
func (l *Ledger) AllocationReleases(ctx context.Context, eventID string) ([]AllocationRelease, error) {
	rows, err := l.pool.Query(ctx, `SELECT event_id, channel, release_at, actor FROM allocation_releases
		WHERE event_id = $1 ORDER BY channel`, eventID)
	out, err := rowsOf(rows, err, scanRelease)
	return out, wrap("allocation releases", err)
}

// DueAllocations returns release times up to ahead from now (PostgreSQL's
// clock: only a candidate list; Redis's clock decides, in the script),
// soonest first, at most limit.
func (l *Ledger) DueAllocations(ctx context.Context, ahead time.Duration, limit int) ([]AllocationRelease, error) {
	rows, err := l.pool.Query(ctx, `SELECT event_id, channel, release_at, actor FROM allocation_releases
		WHERE release_at <= now() + make_interval(secs => $1) ORDER BY release_at LIMIT $2`, ahead.Seconds(), limit)
	out, err := rowsOf(rows, err, scanRelease)
	return out, wrap("due allocations", err)
}

func scanRelease(r pgx.CollectableRow) (AllocationRelease, error) {
	var a AllocationRelease
	err := r.Scan(&a.EventID, &a.Channel, &a.ReleaseAt, &a.Actor)
	return a, err
}

// AllocationSweeper ends the allocations whose release time has come, by
// Redis's clock: a candidate from DueAllocations is asked of the engine
// (Release, booking.Store.ReleaseAllocation with due), which refuses it
// while not due; each ended one is recorded as SystemActor's change and
// its fact published (Publisher). Announce, when set, announces the
// waitlist offers the release made. SetRelease, when set
// (booking.Store.SetAllocationRelease), puts the ledger's release time
// back where the engine has none (a rebuild's step that failed), so that
// such an allocation still ends; one the engine ended already (an end
// whose ledger write failed) is answered as a repeat and recorded with
// the seats that end put on sale.
type AllocationSweeper struct {
	Ledger     *Ledger
	Store      *booking.Store // read: seats allocated that the ledger lacks
	Release    func(ctx context.Context, eventID, channel string) (booking.AllocationEnd, error)
	SetRelease func(ctx context.Context, eventID, channel string, at time.Time) error
	Publisher  *MarkPublisher
	Announce   func(ctx context.Context, eventID string) error
	Log        *zap.Logger
}

// Sweep ends every due allocation; it returns how many ended.
func (s *AllocationSweeper) Sweep(ctx context.Context) (int, error) {
	due, err := s.Ledger.DueAllocations(ctx, 5*time.Second, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range due {
		res, err := s.Ledger.ReleaseAllocation(ctx, s.Store, a.EventID, a.Channel, SystemActor, func(ctx context.Context) (booking.AllocationEnd, error) {
			end, err := s.Release(ctx, a.EventID, a.Channel)
			var notDue *booking.AllocationNotDueError
			if errors.As(err, &notDue) && notDue.At.IsZero() && s.SetRelease != nil {
				if s.Log != nil {
					s.Log.Warn("allocation without its release time in Redis: the ledger's put back",
						zap.String("event_id", a.EventID), zap.String("channel", a.Channel), zap.Time("release_at", a.ReleaseAt))
				}
				if err := s.SetRelease(ctx, a.EventID, a.Channel, a.ReleaseAt); err != nil {
					return booking.AllocationEnd{}, err
				}
				end, err = s.Release(ctx, a.EventID, a.Channel)
			}
			return end, err
		})
		if errors.Is(err, booking.ErrAllocationNotDue) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
		if len(res.Changed) > 0 && s.Announce != nil {
			if err := s.Announce(ctx, a.EventID); err != nil && s.Log != nil {
				s.Log.Warn("waitlist offers left to the sweep", zap.String("event_id", a.EventID), zap.Error(err))
			}
		}
		if res.ID != 0 && s.Publisher != nil {
			if err := s.Publisher.Publish(ctx, res); err != nil && s.Log != nil {
				s.Log.Warn("allocation fact left to the sweep", zap.Int64("change_id", res.ID), zap.Error(err))
			}
		}
	}
	return n, nil
}

// Run sweeps every interval until ctx ends.
func (s *AllocationSweeper) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, s.Log, "allocation releases", s.Sweep)
}
