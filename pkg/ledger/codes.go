package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/retry"
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
// and users, for a rebuild (Restorer).
func (l *Ledger) Codes(ctx context.Context, eventID string) ([]booking.CodeRecord, error) {
	rows, err := l.pool.Query(ctx, `SELECT c.id, c.digest, b.phase, b.uses, c.used, b.seats, b.expires_at, c.user_id
		FROM access_codes c JOIN access_code_batches b ON b.id = c.batch_id WHERE c.event_id = $1 ORDER BY c.id`, eventID)
	out, err := rowsOf(rows, err, func(r pgx.CollectableRow) (booking.CodeRecord, error) {
		var c booking.CodeRecord
		var exp *time.Time
		err := r.Scan(&c.ID, &c.Digest, &c.Phase, &c.Uses, &c.Used, &c.Seats, &exp, &c.User)
		if exp != nil {
			c.Expires = *exp
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

// Redemption is one join that used an access code (table
// code_redemptions).
type Redemption struct {
	CodeID   int64
	Use      int64
	EventID  string
	UserID   string
	Sequence int64
	Phase    string
	At       time.Time
}

// Fact is the redemption's code_redeemed fact.
func (r Redemption) Fact() events.Event {
	return events.CodeRedeemed(r.EventID, r.UserID, r.Sequence, r.CodeID, r.Use, r.Phase, r.At)
}

// RecordRedemption records r and the code's uses and user (a repeat of
// one redemption changes nothing).
func (l *Ledger) RecordRedemption(ctx context.Context, r Redemption) error {
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO code_redemptions (code_id, use_no, event_id, user_id, sequence, phase, redeemed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
			r.CodeID, r.Use, r.EventID, r.UserID, r.Sequence, r.Phase, r.At)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE access_codes SET used = GREATEST(used, $2), user_id = $3 WHERE id = $1`,
			r.CodeID, r.Use, r.UserID)
		return err
	})
	return wrap("record redemption", err)
}

// CodePublisher publishes code_redeemed facts: at once (Publish, by the
// join that redeemed) and, on a tick (Run), every fact a crash or a Kafka
// outage left (Sweep). A fact published twice has the same id.
type CodePublisher struct {
	Ledger *Ledger
	Kafka  publisher
	Log    *zap.Logger
	// Age is how long a redemption is left to its join before a sweep
	// takes it (default 5 s).
	Age time.Duration
}

// Publish publishes r's fact and records Kafka's acknowledgement.
func (p *CodePublisher) Publish(ctx context.Context, r Redemption) error {
	if err := p.Kafka.Publish(ctx, r.Fact()); err != nil {
		return fmt.Errorf("ledger: publish code_redeemed: %w", err)
	}
	_, err := p.Ledger.pool.Exec(ctx, `UPDATE code_redemptions SET published = true WHERE code_id = $1 AND use_no = $2`, r.CodeID, r.Use)
	return wrap("redemption published", err)
}

// Sweep publishes every fact not acknowledged yet; it returns how many.
func (p *CodePublisher) Sweep(ctx context.Context) (int, error) {
	age := sweepGrace(p.Age)
	return publishAll(ctx, func() ([]Redemption, error) {
		rows, err := p.Ledger.pool.Query(ctx, `SELECT code_id, use_no, event_id, user_id, sequence, phase, redeemed_at
			FROM code_redemptions WHERE NOT published AND redeemed_at < now() - make_interval(secs => $1)
			ORDER BY redeemed_at LIMIT 100`, age.Seconds())
		todo, err := rowsOf(rows, err, func(r pgx.CollectableRow) (Redemption, error) {
			var x Redemption
			err := r.Scan(&x.CodeID, &x.Use, &x.EventID, &x.UserID, &x.Sequence, &x.Phase, &x.At)
			return x, err
		})
		return todo, wrap("unpublished redemptions", err)
	}, p.Publish)
}

// Run sweeps every interval until ctx ends.
func (p *CodePublisher) Run(ctx context.Context, interval time.Duration) error {
	return retry.Every(ctx, interval, p.Log, "code_redeemed facts", p.Sweep)
}
