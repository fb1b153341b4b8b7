package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// CodeBatch is one generation of access codes (table
// access_code_batches): for which event and phase, how many, with how
// many uses and seats per order each, until when, by whom.
type CodeBatch struct {
	ID        int64     `json:"batch_id"`
	EventID   string    `json:"event_id"`
	Phase     string    `json:"phase"`
	Count     int       `json:"count"`
	Uses      int       `json:"uses"`
	Seats     int       `json:"seats"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	Actor     string    `json:"actor"`
	At        time.Time `json:"created_at"`
}

// AddCodes records batch b (its ID and At are set) and a code per
// digest, then calls apply with the codes as Redis holds them (their ids
// set) inside the same transaction: the record is committed only when
// apply succeeds. ErrEventNotFound when the event is not in the ledger.
func (l *Ledger) AddCodes(ctx context.Context, b *CodeBatch, digests []string,
	apply func(context.Context, []booking.CodeRecord) error) error {
	b.Count = len(digests)
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := eventInTx(ctx, tx, b.EventID); err != nil {
			return err
		}
		var exp *time.Time
		if !b.ExpiresAt.IsZero() {
			exp = &b.ExpiresAt
		}
		if err := tx.QueryRow(ctx, `INSERT INTO access_code_batches (event_id, phase, count, uses, seats, expires_at, actor)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, created_at`,
			b.EventID, b.Phase, b.Count, b.Uses, b.Seats, exp, b.Actor).Scan(&b.ID, &b.At); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `INSERT INTO access_codes (batch_id, event_id, digest)
			SELECT $1, $2, d FROM unnest($3::text[]) WITH ORDINALITY AS t(d, n) ORDER BY n RETURNING id`,
			b.ID, b.EventID, digests)
		ids, err := rowsOf(rows, err, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		recs := make([]booking.CodeRecord, len(digests))
		for i, d := range digests {
			recs[i] = booking.CodeRecord{ID: ids[i], Digest: d, Phase: b.Phase, Uses: b.Uses, Seats: b.Seats, Expires: b.ExpiresAt}
		}
		return apply(ctx, recs)
	})
	if errors.Is(err, ErrEventNotFound) {
		return err
	}
	return wrap("add codes", err) // apply's errors stay visible to errors.Is
}

// Codes returns the event's codes as Redis holds them, with their uses
// and users, for a rebuild (Restorer). A code bound to a fan without a
// completed order of the event allows one join more than it made (at
// least its batch's uses): the rebuild lost that fan's place in the queue
// or their hold, and they must be able to join again with the code that
// let them in.
func (l *Ledger) Codes(ctx context.Context, eventID string) ([]booking.CodeRecord, error) {
	rows, err := l.pool.Query(ctx, `SELECT c.id, c.digest, b.phase, b.uses, c.used, b.seats, b.expires_at, c.user_id,
			c.user_id <> '' AND NOT EXISTS (SELECT 1 FROM orders o
				WHERE o.user_id = c.user_id AND o.event_id = c.event_id AND o.status = 'completed')
		FROM access_codes c JOIN access_code_batches b ON b.id = c.batch_id WHERE c.event_id = $1 ORDER BY c.id`, eventID)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (booking.CodeRecord, error) {
		var c booking.CodeRecord
		var exp *time.Time
		var again bool
		err := r.Scan(&c.ID, &c.Digest, &c.Phase, &c.Uses, &c.Used, &c.Seats, &exp, &c.User, &again)
		if exp != nil {
			c.Expires = *exp
		}
		// never fewer uses than made (a holder's join again after an
		// earlier rebuild made one more than the batch allows)
		c.Uses = max(c.Uses, c.Used)
		if again && c.Used+1 > c.Uses && c.Used < booking.MaxCodeUses {
			c.Uses = c.Used + 1
		}
		return c, err
	})
	return out, wrap("codes", err)
}

// CodeBatches returns the event's batches of codes, oldest first, with
// each batch's redemptions (Used) and the codes bound to a user (Bound).
func (l *Ledger) CodeBatches(ctx context.Context, eventID string) ([]CodeBatchUse, error) {
	rows, err := l.pool.Query(ctx, `SELECT b.id, b.event_id, b.phase, b.count, b.uses, b.seats, b.expires_at, b.actor, b.created_at,
			COALESCE(sum(c.used), 0), count(*) FILTER (WHERE c.user_id <> '')
		FROM access_code_batches b LEFT JOIN access_codes c ON c.batch_id = b.id
		WHERE b.event_id = $1 GROUP BY b.id ORDER BY b.id`, eventID)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (CodeBatchUse, error) {
		var u CodeBatchUse
		var exp *time.Time
		err := r.Scan(&u.ID, &u.EventID, &u.Phase, &u.Count, &u.Uses, &u.Seats, &exp, &u.Actor, &u.At, &u.Used, &u.Bound)
		if exp != nil {
			u.ExpiresAt = *exp
		}
		return u, err
	})
	return out, wrap("code batches", err)
}

// CodeBatchUse is a batch with its redemptions so far.
type CodeBatchUse struct {
	CodeBatch
	Used  int64 `json:"used"`
	Bound int64 `json:"bound"`
}

// CodeEvent returns the event a code's digest belongs to ("" and no
// error for a digest of no code).
func (l *Ledger) CodeEvent(ctx context.Context, digest string) (string, error) {
	var ev string
	err := l.pool.QueryRow(ctx, `SELECT event_id FROM access_codes WHERE digest = $1`, digest).Scan(&ev)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return ev, wrap("code event", err)
}

// RecordRedemptions records the access-code uses of joins (outbox
// entries whose Code is set; admission.WithRedemptions) and each code's
// uses and user, in one transaction; a repeat of one changes nothing.
func (l *Ledger) RecordRedemptions(ctx context.Context, eventID string, joins []booking.OutboxEntry) error {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, j := range joins {
			if j.Code.CodeID == 0 {
				continue
			}
			b.Queue(`WITH r AS (INSERT INTO code_redemptions (code_id, use_no, event_id, user_id, sequence, phase, redeemed_at)
					VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING code_id)
				UPDATE access_codes SET used = GREATEST(used, $2), user_id = $4 WHERE id IN (SELECT code_id FROM r)`,
				j.Code.CodeID, j.Code.Use, eventID, j.UserID, j.Sequence, j.Code.Phase, j.At)
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	return wrap("record redemptions", err)
}
