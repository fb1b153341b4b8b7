package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
)

// EventDef is an event's definition as the ledger keeps it: everything
// needed to create it again in Redis. Config has its defaults applied and
// Seats always lists every seat in display order (Rows and SeatsPerRow are
// kept for the seat map's layout when the event was made from them).
type EventDef struct {
	Config    booking.EventConfig
	Paused    bool
	Restores  int
	CreatedAt time.Time
	UpdatedAt time.Time
	// Revision numbers the settings changes made by UpdateEvent (0: none);
	// LastChange says what the last one changed, with the new values
	// ("capacity=3 paused=true", keys sorted), at ChangedAt.
	Revision   int64
	LastChange string
	ChangedAt  time.Time
}

const eventColumns = `id, name, seats, rows_count, seats_per_row, capacity, hold_ms, grace_ms,
	sales_start, sales_end, batch_size, abandon_ms, paused, restores, created_at, updated_at,
	revision, last_change, changed_at, sections, price_cents, currency, max_seats, admit_per_minute, early_join_ms, challenge,
	no_orphan_rule, finish_after_end, refundable_until, offer_ms, waitlist_early, on_phase_change`

func scanEvent(row pgx.Row) (EventDef, error) {
	var d EventDef
	var holdMS, graceMS, abandonMS, earlyMS, offerMS int64
	var start, end, changed, refundable *time.Time
	var sections []byte
	var finish bool
	c := &d.Config
	err := row.Scan(&c.ID, &c.Name, &c.Seats, &c.Rows, &c.SeatsPerRow, &c.Capacity, &holdMS, &graceMS,
		&start, &end, &c.BatchSize, &abandonMS, &d.Paused, &d.Restores, &d.CreatedAt, &d.UpdatedAt,
		&d.Revision, &d.LastChange, &changed, &sections, &c.PriceCents, &c.Currency, &c.MaxSeatsPerOrder, &c.AdmitPerMinute, &earlyMS, &c.Challenge,
		&c.NoOrphanRule, &finish, &refundable, &offerMS, &c.WaitlistEarly, &c.OnPhaseChange)
	if err != nil {
		return EventDef{}, err
	}
	c.HoldsEndWithSale = !finish
	c.OfferTime = msDur(offerMS)
	if refundable != nil {
		c.RefundableUntil = refundable.UTC()
	}
	if changed != nil {
		d.ChangedAt = changed.UTC()
	}
	if err := json.Unmarshal(sections, &c.Sections); err != nil {
		return EventDef{}, err
	}
	if len(c.Sections) == 0 {
		c.Sections = nil
	}
	c.Hold, c.Grace, c.Abandon, c.EarlyJoin = msDur(holdMS), msDur(graceMS), msDur(abandonMS), msDur(earlyMS)
	if start != nil {
		c.SalesStart = start.UTC()
	}
	if end != nil {
		c.SalesEnd = end.UTC()
	}
	return d, nil
}

func msDur(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC().Truncate(time.Millisecond)
	return &t
}

// CreateEvent records a new event's definition (defaults applied, seats
// expanded by booking.NormalizeEvent). It is idempotent: the same
// definition again returns created false and no error, so an admin's
// retry after Redis failed goes on to create the Redis state; another
// definition under the same id is ErrEventExists. Errors from the
// definition wrap booking.ErrInvalidEvent.
func (l *Ledger) CreateEvent(ctx context.Context, cfg booking.EventConfig) (def EventDef, created bool, err error) {
	cfg, err = booking.NormalizeEvent(cfg)
	if err != nil {
		return EventDef{}, false, err
	}
	sections, err := json.Marshal(cfg.Sections)
	if err != nil || cfg.Sections == nil {
		sections = []byte("[]")
	}
	tag, err := l.pool.Exec(ctx, `INSERT INTO events (id, name, seats, rows_count, seats_per_row, capacity,
		hold_ms, grace_ms, sales_start, sales_end, batch_size, abandon_ms, sections, price_cents, currency, max_seats,
		admit_per_minute, early_join_ms, challenge, no_orphan_rule, finish_after_end, refundable_until, on_phase_change)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
		ON CONFLICT (id) DO NOTHING`,
		cfg.ID, cfg.Name, cfg.Seats, cfg.Rows, cfg.SeatsPerRow, cfg.Capacity, cfg.Hold.Milliseconds(),
		cfg.Grace.Milliseconds(), nullTime(cfg.SalesStart), nullTime(cfg.SalesEnd), cfg.BatchSize, cfg.Abandon.Milliseconds(),
		sections, cfg.PriceCents, cfg.Currency, cfg.MaxSeatsPerOrder, cfg.AdmitPerMinute, cfg.EarlyJoin.Milliseconds(), cfg.Challenge,
		cfg.NoOrphanRule, !cfg.HoldsEndWithSale, nullTime(cfg.RefundableUntil), cfg.OnPhaseChange)
	if err != nil {
		return EventDef{}, false, wrap("create event", err)
	}
	def, err = l.Event(ctx, cfg.ID)
	if err != nil {
		return EventDef{}, false, err
	}
	if tag.RowsAffected() == 1 {
		return def, true, nil
	}
	if !sameDefinition(def.Config, cfg) {
		return def, false, ErrEventExists
	}
	return def, false, nil
}

// sameDefinition compares what a create sets (times to the millisecond,
// as stored).
func sameDefinition(a, b booking.EventConfig) bool {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	return a.ID == b.ID && a.Name == b.Name && slices.Equal(a.Seats, b.Seats) && a.Rows == b.Rows &&
		a.SeatsPerRow == b.SeatsPerRow && a.Capacity == b.Capacity && a.Hold.Milliseconds() == b.Hold.Milliseconds() &&
		a.Grace.Milliseconds() == b.Grace.Milliseconds() && ms(a.SalesStart) == ms(b.SalesStart) &&
		ms(a.SalesEnd) == ms(b.SalesEnd) && a.BatchSize == b.BatchSize && a.Abandon.Milliseconds() == b.Abandon.Milliseconds() &&
		a.PriceCents == b.PriceCents && a.Currency == b.Currency && a.MaxSeatsPerOrder == b.MaxSeatsPerOrder &&
		len(a.Sections) == len(b.Sections) &&
		a.AdmitPerMinute == b.AdmitPerMinute && a.EarlyJoin.Milliseconds() == b.EarlyJoin.Milliseconds() &&
		a.Challenge == b.Challenge && a.NoOrphanRule == b.NoOrphanRule &&
		a.HoldsEndWithSale == b.HoldsEndWithSale && ms(a.RefundableUntil) == ms(b.RefundableUntil) &&
		a.OnPhaseChange == b.OnPhaseChange
}

// UpdateEvent applies an admin's change (nil fields left alone) in one
// statement and returns the new definition. ErrEventNotFound when the
// ledger has no such event; a value out of bounds
// (booking.EventUpdate.Validate, the rules of booking.Store.UpdateEvent)
// is refused with booking.ErrInvalidArgument before PostgreSQL sees it,
// never an int4 overflow or a NUL byte that would fail there, and so is
// a sales end the change would leave before the start
// (booking.EventUpdate.CheckSalesWindow): the ledger takes no change Redis
// refuses, nor a sales window the event's saved schedule would not fit
// (*booking.ScheduleError: change the schedule first). apply (nil: none)
// makes the change in Redis (booking.Store.UpdateEvent) in the same
// transaction, the event's row locked: a change Redis did not take,
// refused or lost with the connection, is not kept either. apply gets the
// change's settings revision for booking.EventUpdate.Revision, so that a
// change Redis took and the ledger then did not commit is undone in Redis
// (SettleSettings, or the next change).
func (l *Ledger) UpdateEvent(ctx context.Context, id string, u booking.EventUpdate,
	apply func(ctx context.Context, revision int64) error) (EventDef, error) {
	if err := u.Validate(); err != nil {
		return EventDef{}, err
	}
	var d EventDef
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		old, err := scanEvent(tx.QueryRow(ctx, `SELECT `+eventColumns+` FROM events WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if err := u.CheckSalesWindow(old.Config.SalesStart, old.Config.SalesEnd); err != nil {
			return err
		}
		if u.SalesStart != nil || u.SalesEnd != nil {
			if err := scheduleFits(ctx, tx, old.Config, u); err != nil {
				return err
			}
		}
		msp := func(d *time.Duration) *int64 {
			if d == nil {
				return nil
			}
			v := d.Milliseconds()
			return &v
		}
		// a sales time: set (given), cleared (given as the zero time) or kept
		tsp := func(t *time.Time) (bool, *time.Time) {
			if t == nil {
				return false, nil
			}
			return true, nullTime(*t)
		}
		setStart, start := tsp(u.SalesStart)
		setEnd, end := tsp(u.SalesEnd)
		setRefundable, refundable := tsp(u.RefundableUntil)
		change := settingsChange(old, u)
		d, err = scanEvent(tx.QueryRow(ctx, `UPDATE events SET paused = COALESCE($2, paused),
			capacity = COALESCE($3, capacity), hold_ms = COALESCE($4, hold_ms), abandon_ms = COALESCE($5, abandon_ms),
			name = COALESCE($7, name), grace_ms = COALESCE($8, grace_ms), batch_size = COALESCE($9, batch_size), max_seats = COALESCE($14, max_seats),
			sales_start = CASE WHEN $10 THEN $11 ELSE sales_start END,
			sales_end = CASE WHEN $12 THEN $13 ELSE sales_end END,
			admit_per_minute = COALESCE($15, admit_per_minute),
			early_join_ms = COALESCE($16, early_join_ms), challenge = COALESCE($17, challenge),
			no_orphan_rule = COALESCE($18, no_orphan_rule),
			finish_after_end = COALESCE($19, finish_after_end),
			refundable_until = CASE WHEN $20 THEN $21 ELSE refundable_until END,
			offer_ms = COALESCE($22, offer_ms), waitlist_early = COALESCE($23, waitlist_early),
			on_phase_change = COALESCE($24, on_phase_change),
			updated_at = now(),
			revision = CASE WHEN $6 <> '' THEN revision + 1 ELSE revision END,
			last_change = CASE WHEN $6 <> '' THEN $6 ELSE last_change END,
			changed_at = CASE WHEN $6 <> '' THEN now() ELSE changed_at END
			WHERE id = $1 RETURNING `+eventColumns, id, u.Paused, u.Capacity, msp(u.Hold), msp(u.Abandon), change,
			u.Name, msp(u.Grace), u.BatchSize, setStart, start, setEnd, end, u.MaxSeatsPerOrder, u.AdmitPerMinute,
			msp(u.EarlyJoin), challengeOf(u.Challenge), u.NoOrphanRule, u.FinishAfterEnd, setRefundable, refundable,
			msp(u.OfferTime), u.WaitlistEarly, u.OnPhaseChange))
		if err == nil && change != "" {
			err = recordChange(ctx, tx, id)
		}
		if err != nil || apply == nil {
			return err
		}
		rev, err := nextSettingsRev(ctx, tx, id)
		if err != nil {
			return err
		}
		return apply(ctx, rev)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return EventDef{}, ErrEventNotFound
	}
	if errors.Is(err, booking.ErrInvalidArgument) {
		return EventDef{}, err // the client's message, as Validate's
	}
	return d, wrap("update event", err)
}

// nextSettingsRev numbers a settings change made together with Redis in
// tx (events.settings_rev): the revision it has once committed.
func nextSettingsRev(ctx context.Context, tx pgx.Tx, id string) (int64, error) {
	var rev int64
	err := tx.QueryRow(ctx, `UPDATE events SET settings_rev = settings_rev + 1 WHERE id = $1
		RETURNING settings_rev`, id).Scan(&rev)
	return rev, err
}

// recordChange keeps the settings change the events row of id just took
// (its revision, last_change, changed_at) in event_changes, in the
// change's transaction: the event-fact sweep publishes every revision.
func recordChange(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `INSERT INTO event_changes (event_id, revision, change, changed_at)
		SELECT id, revision, last_change, changed_at FROM events WHERE id = $1 AND revision > 0
		ON CONFLICT (event_id, revision) DO NOTHING`, id)
	return err
}

// settingsChange is what u changes in old, with the new values, keys
// sorted ("capacity=3 hold_seconds=90 paused=true"); "" when nothing.
func settingsChange(old EventDef, u booking.EventUpdate) string {
	var parts []string
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
	if u.Abandon != nil && u.Abandon.Milliseconds() != old.Config.Abandon.Milliseconds() {
		parts = append(parts, "abandon_seconds="+secs(*u.Abandon))
	}
	if u.Capacity != nil && *u.Capacity != old.Config.Capacity {
		parts = append(parts, "capacity="+strconv.Itoa(*u.Capacity))
	}
	if u.Hold != nil && u.Hold.Milliseconds() != old.Config.Hold.Milliseconds() {
		parts = append(parts, "hold_seconds="+secs(*u.Hold))
	}
	if u.Paused != nil && *u.Paused != old.Paused {
		parts = append(parts, "paused="+strconv.FormatBool(*u.Paused))
	}
	if u.BatchSize != nil && *u.BatchSize != old.Config.BatchSize {
		parts = append(parts, "batch_size="+strconv.Itoa(*u.BatchSize))
	}
	if u.Grace != nil && u.Grace.Milliseconds() != old.Config.Grace.Milliseconds() {
		parts = append(parts, "grace_seconds="+secs(*u.Grace))
	}
	if u.MaxSeatsPerOrder != nil && *u.MaxSeatsPerOrder != old.Config.MaxSeatsPerOrder {
		parts = append(parts, "max_seats_per_order="+strconv.Itoa(*u.MaxSeatsPerOrder))
	}
	if u.Name != nil && *u.Name != old.Config.Name {
		parts = append(parts, "name="+strconv.Quote(*u.Name))
	}
	rfc := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	}
	if u.SalesEnd != nil && rfc(*u.SalesEnd) != rfc(old.Config.SalesEnd) {
		parts = append(parts, "sales_end="+rfc(*u.SalesEnd))
	}
	if u.AdmitPerMinute != nil && *u.AdmitPerMinute != old.Config.AdmitPerMinute {
		parts = append(parts, "admit_per_minute="+strconv.Itoa(*u.AdmitPerMinute))
	}
	if u.EarlyJoin != nil && u.EarlyJoin.Milliseconds() != old.Config.EarlyJoin.Milliseconds() {
		parts = append(parts, "early_join_seconds="+secs(*u.EarlyJoin))
	}
	if v := challengeOf(u.Challenge); v != nil && *v != old.Config.Challenge {
		parts = append(parts, "challenge="+*v)
	}
	if u.NoOrphanRule != nil && *u.NoOrphanRule != old.Config.NoOrphanRule {
		parts = append(parts, "no_orphan_rule="+strconv.FormatBool(*u.NoOrphanRule))
	}
	if u.SalesStart != nil && rfc(*u.SalesStart) != rfc(old.Config.SalesStart) {
		parts = append(parts, "sales_start="+rfc(*u.SalesStart))
	}
	if u.FinishAfterEnd != nil && *u.FinishAfterEnd == old.Config.HoldsEndWithSale {
		parts = append(parts, "finish_after_end="+strconv.FormatBool(*u.FinishAfterEnd))
	}
	if u.RefundableUntil != nil && rfc(*u.RefundableUntil) != rfc(old.Config.RefundableUntil) {
		parts = append(parts, "refundable_until="+rfc(*u.RefundableUntil))
	}
	if u.OfferTime != nil && u.OfferTime.Milliseconds() != old.Config.OfferTime.Milliseconds() {
		parts = append(parts, "offer_seconds="+secs(*u.OfferTime))
	}
	if u.OnPhaseChange != nil && *u.OnPhaseChange != old.Config.OnPhaseChange {
		parts = append(parts, "on_phase_change="+*u.OnPhaseChange)
	}
	if u.WaitlistEarly != nil && *u.WaitlistEarly != old.Config.WaitlistEarly {
		parts = append(parts, "waitlist_early="+strconv.FormatBool(*u.WaitlistEarly))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// challengeOf is an update's challenge as stored ("" is "none"; the value
// was checked by booking's rules), nil when not changed.
func challengeOf(v *string) *string {
	if v == nil {
		return nil
	}
	c := *v
	if c == "" {
		c = booking.ChallengeNone
	}
	return &c
}

// Event returns an event's definition, or ErrEventNotFound.
func (l *Ledger) Event(ctx context.Context, id string) (EventDef, error) {
	d, err := scanEvent(l.pool.QueryRow(ctx, `SELECT `+eventColumns+` FROM events WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return EventDef{}, ErrEventNotFound
	}
	return d, wrap("event", err)
}

// SettleSettings undoes in Redis the last settings change Redis took
// whose ledger transaction then rolled back (UpdateEvent; the gateway
// died or lost PostgreSQL between the two), and returns the fields put
// back. It holds the event's row, so no change is under way; when another
// transaction holds it, it does nothing this time. Its lock (NO KEY
// UPDATE) leaves alone the key-share locks of rows that reference the
// event, so it neither waits for a sale being recorded nor holds one up.
func (l *Ledger) SettleSettings(ctx context.Context, store *booking.Store, id string) ([]string, error) {
	var undone []string
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var rev int64
		err := tx.QueryRow(ctx, `SELECT settings_rev FROM events WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED`, id).Scan(&rev)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		undone, err = store.SettleSettings(ctx, id, rev)
		return err
	})
	return undone, wrap("settle settings", err)
}

// EventIDs returns the id of every event, sorted.
func (l *Ledger) EventIDs(ctx context.Context) ([]string, error) {
	rows, err := l.pool.Query(ctx, `SELECT id FROM events ORDER BY id`)
	ids, err := rowsOf(rows, err, pgx.RowTo[string])
	return ids, wrap("event ids", err)
}

// reserveSeqBase records the join sequence base of a rebuild before Redis
// gets it: candidate, or SeqBaseGap above the previous rebuild's base when
// that is larger (a clock behind the previous rebuilder's). Returns the
// base to use.
func (l *Ledger) reserveSeqBase(ctx context.Context, id string, candidate int64) (int64, error) {
	var base int64
	err := l.pool.QueryRow(ctx, `UPDATE events SET seq_base = GREATEST($2::bigint, seq_base + $3::bigint)
		WHERE id = $1 RETURNING seq_base`, id, candidate, SeqBaseGap).Scan(&base)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrEventNotFound
	}
	return base, wrap("reserve seq base", err)
}

// countRestore notes that the event's Redis state was rebuilt.
func (l *Ledger) countRestore(ctx context.Context, id string) error {
	_, err := l.pool.Exec(ctx, `UPDATE events SET restores = restores + 1, updated_at = now() WHERE id = $1`, id)
	return wrap("count restore", err)
}

// eventInTx answers ErrEventNotFound unless the event is in the ledger,
// for a change made in tx that needs it there.
func eventInTx(ctx context.Context, tx pgx.Tx, eventID string) error {
	return oneEvent(ctx, tx, `SELECT 1 FROM events WHERE id = $1`, eventID)
}

// lockEvent is eventInTx that also locks the event's row until tx ends,
// so changes of one event's schedule or windows are made one at a time.
func lockEvent(ctx context.Context, tx pgx.Tx, eventID string) error {
	return oneEvent(ctx, tx, `SELECT 1 FROM events WHERE id = $1 FOR UPDATE`, eventID)
}

// holdEvent is eventInTx that also locks the event's row until tx ends
// (NO KEY UPDATE: the sales that reference it do not wait): an admin
// change of the event's seats holds it, so the reconciliation
// (lockEventIfFree) never takes a change under way for a lost one.
func holdEvent(ctx context.Context, tx pgx.Tx, eventID string) error {
	return oneEvent(ctx, tx, `SELECT 1 FROM events WHERE id = $1 FOR NO KEY UPDATE`, eventID)
}

// lockEventIfFree locks the event's row until tx ends (NO KEY UPDATE:
// the sales that reference it do not wait) unless another transaction
// holds it: false then, and when there is no such event. The
// reconciliation's passes take it, so they leave alone a change under
// way, which holds the row.
func lockEventIfFree(ctx context.Context, tx pgx.Tx, eventID string) (bool, error) {
	err := oneEvent(ctx, tx, `SELECT 1 FROM events WHERE id = $1 FOR NO KEY UPDATE SKIP LOCKED`, eventID)
	if errors.Is(err, ErrEventNotFound) {
		return false, nil
	}
	return err == nil, err
}

func oneEvent(ctx context.Context, tx pgx.Tx, query, eventID string) error {
	var one int
	if err := tx.QueryRow(ctx, query, eventID).Scan(&one); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrEventNotFound
		}
		return err
	}
	return nil
}
