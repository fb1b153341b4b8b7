package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// The admission log's record (docs/fairness.md "Rebuilds"): the gateways
// hand every chained entry here before Kafka (fairness.Log.HandOn), a
// rebuild of Redis continues the chain after the last one
// (AdmissionLogStart), and the gateway serves the pages Redis no longer
// holds from it (Admissions).

// ErrLogForked is returned by RecordAdmissions when an entry's index is
// recorded with another hash: the log in Redis is not the one recorded.
var ErrLogForked = errors.New("ledger: the admission log forked")

// ErrLogGap is returned by RecordAdmissions when the entries do not
// continue the recorded log (the entry before the first is not recorded
// with the first's prev): the entries before them must be recorded
// first.
var ErrLogGap = errors.New("ledger: the admission log has a gap")

// RecordAdmissions records chained entries of eventID's admission log and
// the salt of their user hashes (a fairness.Sink). Entries already
// recorded are skipped; one recorded with another hash is ErrLogForked
// (checked on the last of them recorded: its hash covers every entry
// before it).
func (l *Ledger) RecordAdmissions(ctx context.Context, eventID, salt string, es []fairness.Entry) error {
	if len(es) == 0 {
		return nil
	}
	n := len(es)
	idx, seq, at := make([]int64, n), make([]int64, n), make([]int64, n)
	user, reason, prev, hash := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range es {
		idx[i], seq[i], at[i], user[i], reason[i], prev[i], hash[i] = e.Index, e.Seq, e.AtMs, e.UserHash, e.Reason, e.Prev, e.Hash
	}
	first, last := es[0], es[n-1]
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if first.Index > 1 {
			var before string
			err := tx.QueryRow(ctx, `SELECT hash FROM admission_log WHERE event_id = $1 AND idx = $2`, eventID, first.Index-1).Scan(&before)
			if errors.Is(err, pgx.ErrNoRows) || (err == nil && before != first.Prev) {
				return fmt.Errorf("%w: entry %d of %s does not follow the recorded entry %d", ErrLogGap, first.Index, eventID, first.Index-1)
			}
			if err != nil {
				return err
			}
		}
		// the last of these entries recorded already: the same hash,
		// or the log forked (its hash covers every entry before it)
		var got int64
		var gotHash string
		err := tx.QueryRow(ctx, `SELECT idx, hash FROM admission_log WHERE event_id = $1 AND idx BETWEEN $2 AND $3
			ORDER BY idx DESC LIMIT 1`, eventID, first.Index, last.Index).Scan(&got, &gotHash)
		if err == nil && gotHash != es[got-first.Index].Hash {
			return fmt.Errorf("%w: entry %d of %s is recorded with hash %s, the log has %s", ErrLogForked, got, eventID, gotHash, es[got-first.Index].Hash)
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO admission_salts (event_id, fair_salt) VALUES ($1, $2)
			ON CONFLICT (event_id) DO NOTHING`, eventID, salt); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO admission_log (event_id, idx, seq, user_hash, at_ms, reason, prev, hash)
			SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[])
			ON CONFLICT (event_id, idx) DO NOTHING`, eventID, idx, seq, user, at, reason, prev, hash)
		return err
	})
	if errors.Is(err, ErrLogGap) || errors.Is(err, ErrLogForked) {
		return err
	}
	return wrap("record admissions", err)
}

// Admissions returns eventID's recorded entries after index after, at
// most count, in order (a fairness.Archive).
func (l *Ledger) Admissions(ctx context.Context, eventID string, after, count int64) ([]fairness.Entry, error) {
	rows, err := l.pool.Query(ctx, `SELECT idx, seq, user_hash, at_ms, reason, prev, hash FROM admission_log
		WHERE event_id = $1 AND idx > $2 ORDER BY idx LIMIT $3`, eventID, after, count)
	es, err := rowsOf(rows, err, func(r pgx.CollectableRow) (fairness.Entry, error) {
		var e fairness.Entry
		err := r.Scan(&e.Index, &e.Seq, &e.UserHash, &e.AtMs, &e.Reason, &e.Prev, &e.Hash)
		return e, err
	})
	return es, wrap("admissions", err)
}

// AdmissionLogStart is where a rebuild of eventID continues its admission
// log: the recorded entries, the hash of the last and their salt (zero:
// nothing recorded, a new log).
func (l *Ledger) AdmissionLogStart(ctx context.Context, eventID string) (booking.LogStart, error) {
	var s booking.LogStart
	err := l.pool.QueryRow(ctx, `SELECT COALESCE((SELECT fair_salt FROM admission_salts WHERE event_id = $1), ''),
		COALESCE(l.idx, 0), COALESCE(l.hash, '')
		FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT idx, hash FROM admission_log WHERE event_id = $1
			ORDER BY idx DESC LIMIT 1) AS l ON true`, eventID).Scan(&s.Salt, &s.Size, &s.Head)
	return s, wrap("admission log start", err)
}
