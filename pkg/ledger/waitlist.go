package ledger

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// The waitlist's places (migration 00051, docs/ledger.md "The waitlist"):
// the gateway records a fan's place after Redis gave it (join sequence,
// seats wanted) and closes it when the fan declines an offer. A rebuild
// of Redis puts the open places back (Restorer.Restore,
// booking.Store.LoadWaitlist); buyers and fans in the room are skipped
// there.

// WaitlistEntry is a fan's place on an event's waitlist.
type WaitlistEntry struct {
	EventID  string
	UserID   string
	Sequence int64
	Seats    int
}

// RecordWaitlistJoin records a fan's place. Idempotent: a repeat of the
// same place changes nothing; a later place of the same fan (they joined
// again after declining an offer) replaces the old one and opens it.
func (l *Ledger) RecordWaitlistJoin(ctx context.Context, e WaitlistEntry) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO waitlist_places (event_id, user_id, sequence, seats)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (event_id, user_id) DO UPDATE SET sequence = EXCLUDED.sequence, seats = EXCLUDED.seats,
			joined_at = now(), declined_at = NULL
		WHERE waitlist_places.sequence < EXCLUDED.sequence`, e.EventID, e.UserID, e.Sequence, max(e.Seats, 1))
	return wrap("record waitlist join", err)
}

// RecordOfferDeclined closes the fan's place of join sequence seq: the
// fan declined the offer it got, and a rebuild does not put them back.
// Idempotent; a place of another sequence is left alone.
func (l *Ledger) RecordOfferDeclined(ctx context.Context, eventID, userID string, seq int64) error {
	_, err := l.pool.Exec(ctx, `UPDATE waitlist_places SET declined_at = now()
		WHERE event_id = $1 AND user_id = $2 AND sequence = $3 AND declined_at IS NULL`, eventID, userID, seq)
	return wrap("record offer declined", err)
}

// WaitlistPlaces returns the event's open places in join order.
func (l *Ledger) WaitlistPlaces(ctx context.Context, eventID string) ([]booking.WaitlistPlace, error) {
	rows, err := l.pool.Query(ctx, `SELECT user_id, sequence, seats FROM waitlist_places
		WHERE event_id = $1 AND declined_at IS NULL ORDER BY sequence`, eventID)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (booking.WaitlistPlace, error) {
		var p booking.WaitlistPlace
		err := r.Scan(&p.UserID, &p.Sequence, &p.Seats)
		return p, err
	})
	return out, wrap("waitlist places", err)
}
