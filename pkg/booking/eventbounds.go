package booking

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/boxoffice/boxoffice/pkg/ids"
)

// Bounds of every event setting, enforced here for every entry point (the
// admin API, tools, tests) so that no value can wedge an event: a batch
// of 9.2e18 made every promotion fail, a sales end before 1970 read as "no
// end". docs/http-api.md lists them.
const (
	MaxEventIDLen = ids.MaxEventLen
	MaxNameLen    = 200
	MaxCapacity   = 1_000_000
	MaxBatchSize  = 10_000
	// MaxWindow bounds hold, grace and abandonment.
	MaxWindow = 24 * time.Hour
)

// salesEpoch is the earliest sales start or end: times are stored as unix
// milliseconds, where 0 and below mean "not set".
var salesEpoch = time.Unix(0, 0).Add(time.Millisecond)

// checkWindow checks a hold, grace or abandonment duration.
func checkWindow(name string, d, least time.Duration) error {
	if d < least || d > MaxWindow {
		return fmt.Errorf("%s must be from %v to %v", name, least, MaxWindow)
	}
	return nil
}

// checkName checks an event's or a section's name: at most max bytes of
// text without control characters (a NUL, which PostgreSQL's text cannot
// hold, a line break, an escape sequence).
func checkName(field, name string, max int) error {
	if len(name) > max {
		return fmt.Errorf("%s must be at most %d bytes", field, max)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("%s must not contain control characters", field)
	}
	return nil
}

// checkSalesTime rejects a sales start or end before 1970 (it would be
// stored as "none").
func checkSalesTime(name string, t time.Time) error {
	if !t.IsZero() && t.Before(salesEpoch) {
		return fmt.Errorf("%s must be after 1970-01-01T00:00:00Z", name)
	}
	return nil
}

// Validate checks every setting of an update against its bounds, as
// UpdateEvent does, without a store: the ledger checks an update with it
// before PostgreSQL sees it. Errors wrap ErrInvalidArgument and name the
// setting as the admin API does.
func (u EventUpdate) Validate() error {
	_, err := u.args()
	return err
}

// args validates an update and returns it as update_event's field/value
// pairs.
func (u EventUpdate) args() ([]any, error) {
	var args []any
	bad := func(err error) ([]any, error) { return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err) }
	if u.Paused != nil {
		v := 0
		if *u.Paused {
			v = 1
		}
		args = append(args, "paused", v)
	}
	if u.Capacity != nil {
		if *u.Capacity < 0 || *u.Capacity > MaxCapacity {
			return bad(fmt.Errorf("capacity must be from 0 to %d", MaxCapacity))
		}
		args = append(args, "capacity", *u.Capacity)
	}
	if u.Hold != nil {
		if err := checkWindow("hold", *u.Hold, time.Second); err != nil {
			return bad(err)
		}
		args = append(args, "hold_ms", u.Hold.Milliseconds())
	}
	if u.Abandon != nil {
		if err := checkWindow("abandon", *u.Abandon, 0); err != nil {
			return bad(err)
		}
		args = append(args, "abandon_ms", u.Abandon.Milliseconds())
	}
	if u.Name != nil {
		if *u.Name == "" {
			return bad(fmt.Errorf("name must be 1 to %d bytes", MaxNameLen))
		}
		if err := checkName("name", *u.Name, MaxNameLen); err != nil {
			return bad(err)
		}
		args = append(args, "name", *u.Name)
	}
	if u.Grace != nil {
		if err := checkWindow("grace", *u.Grace, time.Second); err != nil {
			return bad(err)
		}
		args = append(args, "grace_ms", u.Grace.Milliseconds())
	}
	if u.BatchSize != nil {
		if *u.BatchSize < 1 || *u.BatchSize > MaxBatchSize {
			return bad(fmt.Errorf("batch_size must be from 1 to %d", MaxBatchSize))
		}
		args = append(args, "batch", *u.BatchSize)
	}
	if u.SalesStart != nil {
		if err := checkSalesTime("sales_start", *u.SalesStart); err != nil {
			return bad(err)
		}
		args = append(args, "sales_start_ms", unixMS(*u.SalesStart))
	}
	if u.SalesEnd != nil {
		if err := checkSalesTime("sales_end", *u.SalesEnd); err != nil {
			return bad(err)
		}
		args = append(args, "sales_end_ms", unixMS(*u.SalesEnd))
	}
	if u.MaxSeatsPerOrder != nil {
		if *u.MaxSeatsPerOrder < 1 || *u.MaxSeatsPerOrder > MaxSeatsPerOrderLimit {
			return bad(fmt.Errorf("max_seats_per_order must be from 1 to %d", MaxSeatsPerOrderLimit))
		}
		args = append(args, "max_seats", *u.MaxSeatsPerOrder)
	}
	door, err := u.doorArgs()
	if err != nil {
		return nil, err
	}
	window, err := u.windowArgs()
	if err != nil {
		return nil, err
	}
	wl, err := u.waitlistArgs()
	if err != nil {
		return nil, err
	}
	if u.OnPhaseChange != nil {
		v, err := phaseLeaveArg(*u.OnPhaseChange)
		if err != nil {
			return bad(err)
		}
		args = append(args, "phase_leave", v)
	}
	return append(append(append(args, door...), window...), wl...), nil
}

// checkSalesWindow checks that an update leaves the sales end after the
// start, taking the one not changed from the event.
func (s *Store) checkSalesWindow(ctx context.Context, eventID string, u EventUpdate) error {
	e, err := s.GetEvent(ctx, eventID)
	if err != nil {
		return err
	}
	return u.CheckSalesWindow(e.SalesStart, e.SalesEnd)
}

// CheckSalesWindow checks that u, applied to an event sold from start to
// end (zero: not set), leaves the sales end after the start: the one rule
// of an update that depends on the event. The ledger checks it before it
// takes a change, Store.UpdateEvent before Redis does, so neither keeps a
// change the other refuses. ErrInvalidArgument.
func (u EventUpdate) CheckSalesWindow(start, end time.Time) error {
	if u.SalesStart != nil {
		start = *u.SalesStart
	}
	if u.SalesEnd != nil {
		end = *u.SalesEnd
	}
	if !end.IsZero() && !end.After(start) {
		return fmt.Errorf("%w: sales_end must be after sales_start", ErrInvalidArgument)
	}
	return nil
}
