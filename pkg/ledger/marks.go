package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
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
// seat_mark_changes): its number ID, the seats Changed, and when.
type MarkChange struct {
	ID      int64
	Changed []string
	At      time.Time
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
func (l *Ledger) MarkSeats(ctx context.Context, eventID string, mark booking.SeatMark, purpose, actor string,
	seatIDs []string, apply func(context.Context) ([]string, error)) (MarkChange, error) {
	var res MarkChange
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM events WHERE id = $1`, eventID).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrEventNotFound
			}
			return err
		}
		var err error
		if mark == booking.MarkRelease {
			_, err = tx.Exec(ctx, `DELETE FROM seat_marks WHERE event_id = $1 AND seat_id = ANY($2)`, eventID, seatIDs)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO seat_marks (event_id, seat_id, mark, purpose, actor)
				SELECT $1, s, $3, $4, $5 FROM unnest($2::text[]) AS s
				ON CONFLICT (event_id, seat_id) DO UPDATE
				SET mark = EXCLUDED.mark, purpose = EXCLUDED.purpose, actor = EXCLUDED.actor, marked_at = now()
				WHERE seat_marks.mark <> EXCLUDED.mark OR seat_marks.purpose <> EXCLUDED.purpose`,
				eventID, seatIDs, string(mark), purpose, actor)
		}
		if err != nil {
			return err
		}
		changed, err := apply(ctx)
		if err != nil || len(changed) == 0 {
			return err
		}
		res.Changed = changed
		return tx.QueryRow(ctx, `INSERT INTO seat_mark_changes (event_id, mark, purpose, seat_ids, actor)
			VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at`, eventID, string(mark), purpose, changed, actor).
			Scan(&res.ID, &res.At)
	})
	if errors.Is(err, ErrEventNotFound) {
		return MarkChange{}, err
	}
	if err != nil {
		return MarkChange{}, wrap("mark seats", err) // apply's errors stay visible to errors.Is and As
	}
	return res, nil
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
