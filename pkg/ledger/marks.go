package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/retry"
)

// SeatMark is a seat operators hold for a purpose or killed (table
// seat_marks), with who marked it and when.
type SeatMark struct {
	SeatID   string           `json:"seat_id"`
	Mark     booking.SeatMark `json:"mark"`
	Purpose  string           `json:"purpose,omitempty"`
	Actor    string           `json:"actor"`
	MarkedAt time.Time        `json:"marked_at"`
}

// MarkChange is one MarkSeats call that changed seats (table
// seat_mark_changes): its number ID, what was done to which seats
// (Changed), by whom and when, and whether Kafka acknowledged its fact.
type MarkChange struct {
	ID        int64
	EventID   string
	Mark      booking.SeatMark
	Purpose   string
	Changed   []string
	Actor     string
	At        time.Time
	Published bool
}

// Fact is the change's seats_held, seats_killed, seats_released,
// seats_allocated or allocation_released fact.
func (m MarkChange) Fact() events.Event {
	csv := strings.Join(m.Changed, ",")
	switch m.Mark {
	case booking.MarkHold:
		return events.SeatsHeld(m.ID, m.EventID, m.Actor, csv, m.Purpose, m.At)
	case booking.MarkKill:
		return events.SeatsKilled(m.ID, m.EventID, m.Actor, csv, m.At)
	case booking.MarkAllocate:
		return events.SeatsAllocated(m.ID, m.EventID, m.Actor, csv, "channel="+m.Purpose, m.At)
	case MarkReleaseAllocation:
		return events.AllocationReleased(m.ID, m.EventID, m.Actor, csv, "channel="+m.Purpose, m.At)
	}
	return events.SeatsReleased(m.ID, m.EventID, m.Actor, csv, m.At)
}

// MarkSeats records that actor held seatIDs of the event for purpose
// (booking.MarkHold), killed them (MarkKill) or released them
// (MarkRelease: their rows go), and calls apply (the change in Redis,
// booking.Store.MarkSeats, which returns the seats it changed) inside the
// same transaction: the record is committed only when apply succeeds, so
// a refusal leaves nothing. When seats changed the change is numbered
// (MarkChange.ID, its facts' sequence); a repeat changes none (ID 0) and
// a seat marked as asked keeps its first who and when. ErrEventNotFound
// when the event is not in the ledger.
func (l *Ledger) MarkSeats(ctx context.Context, store *booking.Store, eventID string, mark booking.SeatMark, purpose, actor string,
	seatIDs []string, apply func(context.Context) ([]string, error)) (MarkChange, error) {
	return l.markSeats(ctx, store, eventID, mark, purpose, actor, seatIDs, nil, apply)
}

// markSeats is MarkSeats with also, when set, more of the change in the
// same transaction, before the marks are written and apply runs (it
// answers how many lost changes it recorded, counted with the others).
// First, the marks of seatIDs Redis has that the ledger lacks and that
// differ from the one asked (changes Redis took whose transaction rolled
// back, not repeated) are recorded as the reconciliation would, so each
// change follows the mark it changes in the record and on Kafka; a seat
// Redis has as asked is a repeat, the caller's (changedOrRecorded).
func (l *Ledger) markSeats(ctx context.Context, store *booking.Store, eventID string, mark booking.SeatMark, purpose, actor string,
	seatIDs []string, also func(pgx.Tx) (int, error), apply func(context.Context) ([]string, error)) (MarkChange, error) {
	res := MarkChange{EventID: eventID, Mark: mark, Purpose: purpose, Actor: actor}
	asked := make(map[string]bool, len(seatIDs))
	for _, id := range seatIDs {
		asked[id] = true
	}
	lost := func(seat string, r booking.MarkedSeat, ok bool) bool {
		if mark == booking.MarkRelease {
			return asked[seat] && ok
		}
		return asked[seat] && (!ok || r.Mark != mark || r.Purpose != purpose)
	}
	kept := 0
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := holdEvent(ctx, tx, eventID); err != nil {
			return err
		}
		if len(seatIDs) > 0 {
			k, err := recordLostMarks(ctx, tx, store, eventID, seatIDs, lost)
			if err != nil {
				return err
			}
			kept = len(k)
		}
		if also != nil {
			n, err := also(tx)
			if err != nil {
				return err
			}
			kept += n
		}
		recorded, err := writeMarks(ctx, tx, &res, seatIDs)
		if err != nil {
			return err
		}
		changed, err := apply(ctx)
		if err != nil {
			return err
		}
		// Redis's changes, and the seats Redis had as asked whose record
		// differed: a change Redis took whose transaction rolled back,
		// repeated (recorded, so its fact is published)
		if changed = changedOrRecorded(seatIDs, changed, recorded); len(changed) == 0 {
			return nil
		}
		res.Changed = changed
		return recordMarkChange(ctx, tx, &res)
	})
	if errors.Is(err, ErrEventNotFound) {
		return MarkChange{}, err
	}
	if err != nil {
		return MarkChange{}, wrap("mark seats", err) // apply's errors stay visible to errors.Is and As
	}
	l.countRecorded("seat_marks", kept)
	return res, nil
}

// writeMarks writes the mark of c (its event, mark, purpose and actor)
// of seatIDs into seat_marks in tx (a release deletes their rows), and
// returns the seats whose rows it changed.
func writeMarks(ctx context.Context, tx pgx.Tx, c *MarkChange, seatIDs []string) ([]string, error) {
	var rows pgx.Rows
	var err error
	if c.Mark == booking.MarkRelease {
		rows, err = tx.Query(ctx, `DELETE FROM seat_marks WHERE event_id = $1 AND seat_id = ANY($2) RETURNING seat_id`,
			c.EventID, seatIDs)
	} else {
		rows, err = tx.Query(ctx, `INSERT INTO seat_marks (event_id, seat_id, mark, purpose, actor)
			SELECT $1, s, $3, $4, $5 FROM unnest($2::text[]) AS s
			ON CONFLICT (event_id, seat_id) DO UPDATE
			SET mark = EXCLUDED.mark, purpose = EXCLUDED.purpose, actor = EXCLUDED.actor, marked_at = now()
			WHERE seat_marks.mark <> EXCLUDED.mark OR seat_marks.purpose <> EXCLUDED.purpose
			RETURNING seat_id`,
			c.EventID, seatIDs, string(c.Mark), c.Purpose, c.Actor)
	}
	return rowsOf(rows, err, pgx.RowTo[string])
}

// recordMarkChange numbers the change c of c.Changed in tx (c.ID, c.At):
// its fact's row in seat_mark_changes (an allocation's end may have put
// no seats on sale: an empty list).
func recordMarkChange(ctx context.Context, tx pgx.Tx, c *MarkChange) error {
	if c.Changed == nil {
		c.Changed = []string{}
	}
	return tx.QueryRow(ctx, `INSERT INTO seat_mark_changes (event_id, mark, purpose, seat_ids, actor)
		VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at`, c.EventID, string(c.Mark), c.Purpose, c.Changed, c.Actor).
		Scan(&c.ID, &c.At)
}

// KeepMarks records the holds, kills and allocations Redis has that the
// ledger's seat_marks lack or have otherwise, and the releases of seats
// the ledger holds or killed that Redis has not (changes Redis took whose
// ledger transaction rolled back and that nobody repeated: fans could not
// buy those seats, or could, and a rebuild writes the ledger's marks). An
// allocation is recorded with the channel's release time in Redis and,
// for wheelchair and companion, the seats' kind (recordAllocation). The
// end of an allocation Redis took and keeps (booking.Store.EndedAllocations)
// is recorded first, with the seats it put on sale. Any other seat the
// ledger allocates that Redis has not is left alone: its channel's fans
// hold or bought it. Each mark and purpose, and each end, is one
// numbered change by ReconcileActor, whose fact the sweep publishes. It
// holds the event's row, so no change is under way; when another
// transaction holds it, it does nothing this time.
func (l *Ledger) KeepMarks(ctx context.Context, store *booking.Store, eventID string) ([]MarkChange, error) {
	var out []MarkChange
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		out = nil
		if free, err := lockEventIfFree(ctx, tx, eventID); !free || err != nil {
			return err
		}
		// the ends of allocations Redis took that the ledger lacks first:
		// the seats they put on sale are then compared as any other
		ended, err := store.EndedAllocations(ctx, eventID)
		if err != nil {
			return err
		}
		for _, ch := range slices.Sorted(maps.Keys(ended)) {
			c, err := recordEnd(ctx, tx, eventID, ch, ended[ch])
			if err != nil {
				return err
			}
			if c != nil {
				out = append(out, *c)
			}
		}
		kept, err := recordLostMarks(ctx, tx, store, eventID, nil, nil)
		out = append(out, kept...)
		return err
	})
	if err != nil {
		return nil, wrap("keep marks", err)
	}
	return out, nil
}

// recordLostMarks records in tx the marks Redis has that the ledger's
// seat_marks lack or have otherwise, and the releases of seats the ledger
// holds or killed that Redis has not, of seatIDs (none: every seat) that
// only keeps (nil: all; r is Redis's mark, ok whether it has one): one
// numbered change per mark and purpose (recordRedisMarks). A seat the
// ledger allocates and Redis has not is left alone: its channel's fans
// hold or bought it.
func recordLostMarks(ctx context.Context, tx pgx.Tx, store *booking.Store, eventID string, seatIDs []string,
	only func(seat string, r booking.MarkedSeat, ok bool) bool) ([]MarkChange, error) {
	inRedis, err := store.MarkedSeats(ctx, eventID, seatIDs...)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT seat_id, mark, purpose FROM seat_marks
		WHERE event_id = $1 AND ($2::text[] IS NULL OR seat_id = ANY($2)) ORDER BY seat_id`, eventID, seatIDs)
	recorded, err := rowsOf(rows, err, pgx.RowToStructByPos[booking.MarkedSeat])
	if err != nil {
		return nil, err
	}
	// the seats to record, by mark and purpose
	type kind struct {
		mark    booking.SeatMark
		purpose string
	}
	todo := map[kind][]string{}
	add := func(k kind, seat string) {
		if r, ok := inRedis[seat]; only == nil || only(seat, r, ok) {
			todo[k] = append(todo[k], seat)
		}
	}
	inLedger := make(map[string]bool, len(recorded))
	for _, m := range recorded {
		inLedger[m.SeatID] = true
		r, ok := inRedis[m.SeatID]
		switch {
		case ok && (r.Mark != m.Mark || r.Purpose != m.Purpose):
			add(kind{r.Mark, r.Purpose}, m.SeatID)
		case !ok && (m.Mark == booking.MarkHold || m.Mark == booking.MarkKill):
			add(kind{booking.MarkRelease, ""}, m.SeatID)
		}
	}
	for seat, r := range inRedis {
		if !inLedger[seat] {
			add(kind{r.Mark, r.Purpose}, seat)
		}
	}
	kinds := slices.SortedFunc(maps.Keys(todo), func(a, b kind) int {
		return cmp.Or(cmp.Compare(a.mark, b.mark), cmp.Compare(a.purpose, b.purpose))
	})
	var out []MarkChange
	var releases map[string]time.Time
	for _, k := range kinds {
		seats := todo[k]
		slices.Sort(seats)
		c, err := recordRedisMarks(ctx, tx, store, eventID, k.mark, k.purpose, seats, &releases)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// recordRedisMarks records in tx that seats are marked mark for purpose,
// as Redis has them: one numbered change by ReconcileActor, whose fact
// the sweep publishes. An allocation comes with the channel's release
// time in Redis (*releases, read once when nil) and, for wheelchair and
// companion, the seats' kind (recordAllocation).
func recordRedisMarks(ctx context.Context, tx pgx.Tx, store *booking.Store, eventID string, mark booking.SeatMark, purpose string,
	seats []string, releases *map[string]time.Time) (MarkChange, error) {
	c := MarkChange{EventID: eventID, Mark: mark, Purpose: purpose, Actor: ReconcileActor}
	var err error
	if c.Changed, err = writeMarks(ctx, tx, &c, seats); err != nil {
		return MarkChange{}, err
	}
	if mark == booking.MarkAllocate {
		if *releases == nil {
			if *releases, err = store.AllocationReleases(ctx, eventID); err != nil {
				return MarkChange{}, err
			}
		}
		if err := recordAllocation(ctx, tx, eventID, purpose, ReconcileActor, (*releases)[purpose], seats); err != nil {
			return MarkChange{}, err
		}
	}
	if err := recordMarkChange(ctx, tx, &c); err != nil {
		return MarkChange{}, err
	}
	return c, nil
}

// changedOrRecorded is the seats of asked (in its order, once each) that
// are in changed or recorded.
func changedOrRecorded(asked, changed, recorded []string) []string {
	if len(recorded) == 0 {
		return changed
	}
	in := make(map[string]bool, len(changed)+len(recorded))
	for _, id := range changed {
		in[id] = true
	}
	for _, id := range recorded {
		in[id] = true
	}
	out := make([]string, 0, len(in))
	for _, id := range asked {
		if in[id] {
			out = append(out, id)
			delete(in, id)
		}
	}
	return out
}

// UnpublishedMarkChanges returns the changes whose fact Kafka has not
// acknowledged, oldest first, at most limit, older than age (a change
// younger is left to the request that made it).
func (l *Ledger) UnpublishedMarkChanges(ctx context.Context, age time.Duration, limit int) ([]MarkChange, error) {
	rows, err := l.pool.Query(ctx, `SELECT id, event_id, mark, purpose, seat_ids, actor, created_at FROM seat_mark_changes
		WHERE NOT published AND created_at < now() - make_interval(secs => $1) ORDER BY id LIMIT $2`, age.Seconds(), limit)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (MarkChange, error) {
		var m MarkChange
		err := r.Scan(&m.ID, &m.EventID, &m.Mark, &m.Purpose, &m.Changed, &m.Actor, &m.At)
		return m, err
	})
	return out, wrap("unpublished mark changes", err)
}

// MarkChangePublished records that Kafka acknowledged change id's fact.
func (l *Ledger) MarkChangePublished(ctx context.Context, id int64) error {
	_, err := l.pool.Exec(ctx, `UPDATE seat_mark_changes SET published = true WHERE id = $1`, id)
	return wrap("mark change published", err)
}

// MarkPublisher publishes the facts of seat mark changes: at once
// (Publish, by the request that made the change) and, on a tick (Run),
// every fact a crash or a Kafka outage left (Sweep). A fact published
// twice has the same id (built from the change's number).
type MarkPublisher struct {
	Ledger *Ledger
	Kafka  publisher
	Log    *zap.Logger
	// Age is how long a change is left to its request before a sweep
	// takes it (default 5 s).
	Age time.Duration
}

// Publish publishes m's fact and records Kafka's acknowledgement.
func (p *MarkPublisher) Publish(ctx context.Context, m MarkChange) error {
	if err := p.Kafka.Publish(ctx, m.Fact()); err != nil {
		return fmt.Errorf("ledger: publish %s: %w", m.Fact().Type, err)
	}
	return p.Ledger.MarkChangePublished(ctx, m.ID)
}

// Sweep publishes every fact not acknowledged yet; it returns how many.
func (p *MarkPublisher) Sweep(ctx context.Context) (int, error) {
	age := sweepGrace(p.Age)
	return publishAll(ctx, func() ([]MarkChange, error) { return p.Ledger.UnpublishedMarkChanges(ctx, age, 100) }, p.Publish)
}

// Run sweeps every interval until ctx ends.
func (p *MarkPublisher) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, p.Log, "seat mark facts", p.Sweep)
}

// SeatMarks returns the event's held and killed seats, by seat id.
func (l *Ledger) SeatMarks(ctx context.Context, eventID string) ([]SeatMark, error) {
	rows, err := l.pool.Query(ctx, `SELECT seat_id, mark, purpose, actor, marked_at FROM seat_marks
		WHERE event_id = $1 ORDER BY seat_id`, eventID)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (SeatMark, error) {
		var m SeatMark
		err := r.Scan(&m.SeatID, &m.Mark, &m.Purpose, &m.Actor, &m.MarkedAt)
		return m, err
	})
	return out, wrap("seat marks", err)
}

// markedSeats are an event's seat marks as a rebuild applies them.
func markedSeats(marks []SeatMark) []booking.MarkedSeat {
	out := make([]booking.MarkedSeat, len(marks))
	for i, m := range marks {
		out[i] = booking.MarkedSeat{SeatID: m.SeatID, Mark: m.Mark, Purpose: m.Purpose}
	}
	return out
}
