package ledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/events"
)

// Registration before a sale: fans register during a window; at its end
// an operator selects who may join the registered phase, by a draw whose
// seed was committed when the window was set (booking.DrawOrder, the
// pre-queue's rule: anyone can recompute it from the revealed seed and
// the registrants) or first come. Times are PostgreSQL's.
var (
	ErrNoRegistration     = errors.New("the event has no registration")
	ErrRegistrationClosed = errors.New("registration is not open")
	ErrRegistrationOpen   = errors.New("registration has not closed yet")
	ErrRegistrationDrawn  = errors.New("the selection was drawn already")
)

// Selection methods.
const (
	SelectDraw      = "draw"
	SelectFirstCome = "first_come"
)

// RegistrationWindow is an event's registration: the phase it selects
// fans for, when it is open, the draw's commitment (its seed only once
// drawn) and, once drawn, how and how many were selected.
type RegistrationWindow struct {
	EventID    string    `json:"event_id"`
	Phase      string    `json:"phase"`
	OpensAt    time.Time `json:"opens_at"`
	ClosesAt   time.Time `json:"closes_at"`
	Commit     string    `json:"commit"`
	Seed       string    `json:"seed,omitempty"`
	Method     string    `json:"method,omitempty"`
	Selected   int       `json:"selected"`
	Registered int       `json:"registered"`
	DrawnAt    time.Time `json:"drawn_at,omitzero"`
	Actor      string    `json:"actor"`
	// Fresh: this call made the draw (Draw; false for a repeat).
	Fresh bool `json:"-"`
	seed  string
}

// Drawn reports whether the selection was made.
func (w RegistrationWindow) Drawn() bool { return !w.DrawnAt.IsZero() }

// OpenedFact is the window's registration_opened fact.
func (w RegistrationWindow) OpenedFact() events.Event {
	return events.RegistrationOpened(w.EventID, w.Actor, w.Phase, w.Commit, w.OpensAt, w.ClosesAt)
}

// DrawnFact is the selection's selection_drawn fact.
func (w RegistrationWindow) DrawnFact() events.Event {
	return events.SelectionDrawn(w.EventID, w.Actor, w.Method, w.Seed, w.Selected, w.Registered, w.DrawnAt)
}

const windowColumns = `event_id, phase, opens_at, closes_at, seed, commit, actor, COALESCE(method, ''),
	COALESCE(selected, 0), drawn_at, COALESCE(drawn_by, ''),
	(SELECT count(*) FROM registrations r WHERE r.event_id = w.event_id)`

func scanWindow(row pgx.Row) (RegistrationWindow, error) {
	var w RegistrationWindow
	var drawn *time.Time
	var drawnBy string
	err := row.Scan(&w.EventID, &w.Phase, &w.OpensAt, &w.ClosesAt, &w.seed, &w.Commit, &w.Actor, &w.Method,
		&w.Selected, &drawn, &drawnBy, &w.Registered)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNoRegistration
	}
	if drawn != nil {
		w.DrawnAt, w.Seed, w.Actor = *drawn, w.seed, drawnBy
	}
	return w, err
}

// OpenRegistration sets the event's registration window (its phase, when
// it opens and closes), committing to a new draw seed the first time;
// before the draw it may be changed (the commitment stays). Errors:
// ErrEventNotFound, ErrRegistrationDrawn.
func (l *Ledger) OpenRegistration(ctx context.Context, eventID, phase string, opens, closes time.Time, actor string) (RegistrationWindow, error) {
	seed := make([]byte, 32)
	_, _ = rand.Read(seed) // never fails (crypto/rand)
	sum := sha256.Sum256(seed)
	var w RegistrationWindow
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if err := lockEvent(ctx, tx, eventID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO registration_windows (event_id, phase, opens_at, closes_at, seed, commit, actor)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (event_id) DO UPDATE SET phase = EXCLUDED.phase, opens_at = EXCLUDED.opens_at,
				closes_at = EXCLUDED.closes_at, actor = EXCLUDED.actor
			WHERE registration_windows.drawn_at IS NULL`,
			eventID, phase, opens, closes, hex.EncodeToString(seed), hex.EncodeToString(sum[:]), actor)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrRegistrationDrawn
		}
		w, err = scanWindow(tx.QueryRow(ctx, `SELECT `+windowColumns+` FROM registration_windows w WHERE event_id = $1`, eventID))
		return err
	})
	if errors.Is(err, ErrEventNotFound) || errors.Is(err, ErrRegistrationDrawn) {
		return RegistrationWindow{}, err
	}
	return w, wrap("open registration", err)
}

// Registration returns the event's registration window. ErrNoRegistration.
func (l *Ledger) Registration(ctx context.Context, eventID string) (RegistrationWindow, error) {
	w, err := scanWindow(l.pool.QueryRow(ctx, `SELECT `+windowColumns+` FROM registration_windows w WHERE event_id = $1`, eventID))
	if errors.Is(err, ErrNoRegistration) {
		return w, err
	}
	return w, wrap("registration", err)
}

// Registrant is a fan's registration: its number, when, and (after the
// draw) whether they were selected.
type Registrant struct {
	ID       int64     `json:"-"`
	EventID  string    `json:"event_id"`
	UserID   string    `json:"-"`
	At       time.Time `json:"registered_at"`
	Selected *bool     `json:"selected,omitempty"`
}

// Fact is the registration's registered fact.
func (r Registrant) Fact() events.Event { return events.Registered(r.ID, r.EventID, r.UserID, r.At) }

// Register registers userID for the event's registration while it is
// open (a repeat returns the registration as it is, created false).
// Errors: ErrNoRegistration, ErrRegistrationClosed.
func (l *Ledger) Register(ctx context.Context, eventID, userID string) (Registrant, bool, error) {
	r := Registrant{EventID: eventID, UserID: userID}
	created := false
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var open bool
		err := tx.QueryRow(ctx, `SELECT now() >= opens_at AND now() < closes_at AND drawn_at IS NULL
			FROM registration_windows WHERE event_id = $1 FOR SHARE`, eventID).Scan(&open)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNoRegistration
		}
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `SELECT id, registered_at, selected FROM registrations WHERE event_id = $1 AND user_id = $2`,
			eventID, userID).Scan(&r.ID, &r.At, &r.Selected)
		if err == nil || !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if !open {
			return ErrRegistrationClosed
		}
		created = true
		return tx.QueryRow(ctx, `INSERT INTO registrations (event_id, user_id) VALUES ($1, $2) RETURNING id, registered_at`,
			eventID, userID).Scan(&r.ID, &r.At)
	})
	if errors.Is(err, ErrNoRegistration) || errors.Is(err, ErrRegistrationClosed) {
		return Registrant{}, false, err
	}
	return r, created, wrap("register", err)
}

// Registrant returns userID's registration for the event (pgx.ErrNoRows
// wrapped as ErrNoRegistration when they have none).
func (l *Ledger) Registrant(ctx context.Context, eventID, userID string) (Registrant, error) {
	r := Registrant{EventID: eventID, UserID: userID}
	err := l.pool.QueryRow(ctx, `SELECT id, registered_at, selected FROM registrations WHERE event_id = $1 AND user_id = $2`,
		eventID, userID).Scan(&r.ID, &r.At, &r.Selected)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNoRegistration
	}
	return r, wrap("registrant", err)
}

// Draw selects count registrants once the window has closed: by the draw
// (booking.DrawOrder with the committed seed, which it reveals) or first
// come (by registration order), and calls apply with the selected users
// (booking.Store.MarkSelected) inside the transaction. A repeat returns
// the draw as made. Errors: ErrNoRegistration, ErrRegistrationOpen,
// booking.ErrInvalidArgument (a method or count).
func (l *Ledger) Draw(ctx context.Context, eventID, method string, count int, actor string,
	apply func(context.Context, []string) error) (RegistrationWindow, error) {
	if (method != SelectDraw && method != SelectFirstCome) || count < 1 {
		return RegistrationWindow{}, booking.ErrInvalidArgument
	}
	var w RegistrationWindow
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var err error
		w, err = scanWindow(tx.QueryRow(ctx, `SELECT `+windowColumns+` FROM registration_windows w WHERE event_id = $1 FOR UPDATE`, eventID))
		if err != nil || w.Drawn() {
			return err
		}
		var closed bool
		if err := tx.QueryRow(ctx, `SELECT now() >= $1`, w.ClosesAt).Scan(&closed); err != nil {
			return err
		}
		if !closed {
			return ErrRegistrationOpen
		}
		rows, err := tx.Query(ctx, `SELECT user_id FROM registrations WHERE event_id = $1 ORDER BY id`, eventID)
		users, err := rowsOf(rows, err, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if method == SelectDraw {
			// the pre-queue's rule, the event id as the salt (the
			// registrants are public: the registered facts)
			if users, err = booking.DrawOrder(w.seed, w.Commit, eventID, users); err != nil {
				return err
			}
		}
		chosen := users[:min(count, len(users))]
		if _, err := tx.Exec(ctx, `UPDATE registrations SET selected = (user_id = ANY($2)) WHERE event_id = $1`, eventID, chosen); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `UPDATE registration_windows SET method = $2, selected = $3, drawn_at = now(), drawn_by = $4
			WHERE event_id = $1 RETURNING drawn_at`, eventID, method, len(chosen), actor).Scan(&w.DrawnAt); err != nil {
			return err
		}
		w.Method, w.Selected, w.Seed, w.Actor, w.Fresh = method, len(chosen), w.seed, actor, true
		return apply(ctx, chosen)
	})
	if errors.Is(err, ErrNoRegistration) || errors.Is(err, ErrRegistrationOpen) {
		return RegistrationWindow{}, err
	}
	return w, wrap("draw", err)
}

// KeepSelection makes the users Redis has as selected by the event's
// registration draw the ones the ledger's draw selected (none before the
// draw): a draw Redis took whose transaction then rolled back, and that
// nobody repeated, is taken back, since the draw that decides who may
// join a registered phase is the one the ledger records and publishes.
// It holds the event's registration window, so no draw is under way;
// when another transaction holds it, or the event has no window, it does
// nothing. true when Redis's selection was changed.
func (l *Ledger) KeepSelection(ctx context.Context, store *booking.Store, eventID string) (bool, error) {
	reset := false
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		reset = false
		// (before the draw no registrant is selected: the same query)
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM registration_windows WHERE event_id = $1
			FOR UPDATE SKIP LOCKED`, eventID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT user_id FROM registrations WHERE event_id = $1 AND selected ORDER BY user_id`, eventID)
		want, err := rowsOf(rows, err, pgx.RowTo[string])
		if err != nil {
			return err
		}
		have, err := store.SelectedUsers(ctx, eventID)
		if err != nil || slices.Equal(have, want) {
			return err
		}
		reset = true
		return store.MarkSelected(ctx, eventID, want)
	})
	return reset, wrap("keep selection", err)
}

// Selected returns the users the event's draw selected, by registration
// order (a rebuild marks them again).
func (l *Ledger) Selected(ctx context.Context, eventID string) ([]string, error) {
	rows, err := l.pool.Query(ctx, `SELECT user_id FROM registrations WHERE event_id = $1 AND selected ORDER BY id`, eventID)
	out, err := rowsOf(rows, err, pgx.RowTo[string])
	return out, wrap("selected", err)
}
