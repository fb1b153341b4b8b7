package booking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Allocations: operators allocate seats to a named channel (a box office,
// a partner, a presale), MarkAllocate of MarkSeats with the channel as the
// purpose (lua/mark_seats.lua). Such a seat's status byte is
// SeatCodeAllocated and only a request through its channel may take it:
// LockSeatsVia and SelectBestVia with the channel claim of the fan's
// token, or any request while the event's current phase (SetPhase) is
// the channel, a presale phase being a channel. A seat a fan of the
// channel holds and gives back returns to the channel. At the
// allocation's release time (Redis's clock) or when the operator says so,
// ReleaseAllocation puts the unsold seats on sale, offered to the
// waitlist first; from its release time until then a seat of the
// allocation is selectable by anyone.

// SeatCodeAllocated is the status byte of a seat allocated to a channel.
const SeatCodeAllocated byte = 'c'

// ErrAllocationNotDue: ReleaseAllocation asked for a due release before
// the channel's release time (or with none set).
var ErrAllocationNotDue = errors.New("allocation not due")

// The accessibility channels: wheelchair spaces and their companion
// seats are allocated to these (an allocation like any other, with its
// release time: then they go on general sale, keeping their kind:
// AccessibleSeats). A fan who asks for accessibility seats (LockSeatsVia,
// SelectBestVia accessible; no proof asked) is a request through both.
const (
	ChannelWheelchair = "wheelchair"
	ChannelCompanion  = "companion"
)

// flag is a boolean as a script argument: "1" or "".
func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// MaxChannelLen bounds a channel's name, in bytes (an id, ids.Valid).
const MaxChannelLen = 64

// checkChannel checks a request's or allocation's channel: "" (none) or
// an id of at most MaxChannelLen bytes without ','.
func checkChannel(ch string) error {
	if ch == "" {
		return nil
	}
	if len(ch) > MaxChannelLen || strings.IndexByte(ch, ',') >= 0 {
		return fmt.Errorf("%w: channel must be an id of at most %d bytes without ,", ErrInvalidArgument, MaxChannelLen)
	}
	return checkIDs(ch)
}

// CheckChannel is checkChannel for callers outside the package: nil for
// "" or a valid channel name.
func CheckChannel(ch string) error { return checkChannel(ch) }

// AllocateSeats allocates seatIDs to channel, all of them or none, as
// MarkSeats does (same errors), and sets the channel's release time:
// releaseAt zero leaves it as it is, a time sets it. It returns the seats
// that changed.
func (s *Store) AllocateSeats(ctx context.Context, eventID, channel string, releaseAt time.Time, seatIDs []string) ([]string, error) {
	at := ""
	if !releaseAt.IsZero() {
		at = strconv.FormatInt(releaseAt.UnixMilli(), 10)
	}
	return s.markSeats(ctx, eventID, MarkAllocate, channel, at, seatIDs)
}

// AllocationEnd is what ReleaseAllocation did.
type AllocationEnd struct {
	// Released are the seats put on sale.
	Released []string
	// Repeat: the channel had no allocation to end (ended before, or
	// never allocated).
	Repeat bool
	// Before, on a repeat, are the seats the channel's last end put on
	// sale, while Redis keeps that end (until the channel is allocated
	// again): an end whose ledger record was lost is recorded with them.
	Before []string
}

// ReleaseAllocation ends channel's allocation: its unsold seats go on
// sale (offered to the waitlist first) and seats of it that fans hold or
// bought go on sale when given back. due: only once the channel's release
// time has passed by Redis's clock (ErrAllocationNotDue before, with the
// time; the zero time when none is set); else at once (the operator). A
// repeat puts nothing on sale and answers the seats the last end did
// (AllocationEnd.Before). Errors: ErrEventNotFound, ErrInvalidArgument,
// ErrAllocationNotDue (*AllocationNotDueError).
func (s *Store) ReleaseAllocation(ctx context.Context, eventID, channel string, due bool) (AllocationEnd, error) {
	if err := checkIDs(eventID); err != nil {
		return AllocationEnd{}, err
	}
	if channel == "" {
		return AllocationEnd{}, fmt.Errorf("%w: no channel", ErrInvalidArgument)
	}
	if err := checkChannel(channel); err != nil {
		return AllocationEnd{}, err
	}
	how := "now"
	if due {
		how = "due"
	}
	r, err := s.run(ctx, scriptMarkSeats, eventID, "end_allocation", channel, how)
	if errors.Is(err, ErrAllocationNotDue) {
		var e AllocationNotDueError
		r.scan(&e.At)
		return AllocationEnd{}, &e
	}
	if err != nil {
		return AllocationEnd{}, fmt.Errorf("release allocation: %w", err)
	}
	out := AllocationEnd{Repeat: len(r) > 3}
	r.scan(nil, &out.Released, &out.Before)
	return out, nil
}

// ChannelSeats returns the seats Redis allocates to channel, those its
// fans hold or bought too (the alloc hash's seat fields; not a request
// path).
func (s *Store) ChannelSeats(ctx context.Context, eventID, channel string) ([]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	all, err := s.rdb.HGetAll(ctx, s.eventKeys(eventID)[kAlloc]).Result()
	if err != nil {
		return nil, fmt.Errorf("channel seats: %w", err)
	}
	var out []string
	for field, v := range all {
		if v == channel && !strings.HasPrefix(field, " ") {
			out = append(out, field)
		}
	}
	slices.Sort(out)
	return out, nil
}

// EndedAllocations returns the channels whose allocation Redis ended and
// keeps the end of (none allocated since), each with the seats that end
// put on sale: what the ledger should have recorded (the
// reconciliation's read, not a request path).
func (s *Store) EndedAllocations(ctx context.Context, eventID string) (map[string][]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	keys := s.eventKeys(eventID)
	all, err := s.rdb.HGetAll(ctx, keys[kAlloc]).Result()
	if err != nil {
		return nil, fmt.Errorf("ended allocations: %w", err)
	}
	releases, err := s.AllocationReleases(ctx, eventID)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for field, v := range all {
		if ch, ok := strings.CutPrefix(field, " e:"); ok {
			out[ch] = nil
			if v != "" {
				out[ch] = strings.Split(v, ",")
			}
		}
	}
	// a channel allocated now (its rows, a release time or a seat) is not
	// ended
	for field, v := range all {
		if ch, ok := strings.CutPrefix(field, " r:"); ok {
			delete(out, ch)
		} else if !strings.HasPrefix(field, " ") {
			delete(out, v)
		}
	}
	for ch := range releases {
		delete(out, ch)
	}
	return out, nil
}

// AllocationNotDueError is ErrAllocationNotDue with the channel's release
// time (zero: none set).
type AllocationNotDueError struct{ At time.Time }

func (e *AllocationNotDueError) Error() string {
	if e.At.IsZero() {
		return ErrAllocationNotDue.Error() + ": no release time"
	}
	return ErrAllocationNotDue.Error() + ": at " + e.At.UTC().Format(time.RFC3339)
}

// Is makes errors.Is(err, ErrAllocationNotDue) true.
func (e *AllocationNotDueError) Is(target error) bool { return target == ErrAllocationNotDue }

// SetAllocationRelease sets channel's release time (a rebuild from the
// ledger sets it again), leaving its seats as they are. Errors:
// ErrEventNotFound, ErrInvalidArgument.
func (s *Store) SetAllocationRelease(ctx context.Context, eventID, channel string, at time.Time) error {
	if err := checkIDs(eventID); err != nil {
		return err
	}
	if channel == "" || at.IsZero() {
		return fmt.Errorf("%w: a channel and a time", ErrInvalidArgument)
	}
	if err := checkChannel(channel); err != nil {
		return err
	}
	if _, err := s.run(ctx, scriptMarkSeats, eventID, string(MarkAllocate), channel, at.UnixMilli()); err != nil {
		return fmt.Errorf("set allocation release: %w", err)
	}
	return nil
}

// AllocationReleases returns the release time of each channel that has
// one (config 'ra:<channel>'). ErrEventNotFound.
func (s *Store) AllocationReleases(ctx context.Context, eventID string) (map[string]time.Time, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	cfg, err := s.rdb.HGetAll(ctx, s.eventKeys(eventID)[kConfig]).Result()
	if err != nil {
		return nil, fmt.Errorf("allocation releases: %w", err)
	}
	if len(cfg) == 0 {
		return nil, ErrEventNotFound
	}
	out := map[string]time.Time{}
	for f, v := range cfg {
		if ch, ok := strings.CutPrefix(f, "ra:"); ok {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
				out[ch] = time.UnixMilli(ms)
			}
		}
	}
	return out, nil
}

// AccessibleSeats returns the wheelchair spaces and companion seats,
// each seat id mapped to its kind (ChannelWheelchair or
// ChannelCompanion). A seat is of a kind from its first allocation to
// that channel (mark_seats.lua keeps the kind in alloc ' a:<seat>', a
// rebuild sets it again: MarkAccessible), whatever its status: on sale
// after the allocation ended, held, sold, held back or killed by the
// operators. A seat allocated to another channel is left out while that
// allocation lasts (its fans take it, not a fan who asks for
// accessibility seats). One read of the alloc hash, O(seats allocated to
// any channel or of a kind): for the seat map's snapshot, never per
// reader.
func (s *Store) AccessibleSeats(ctx context.Context, eventID string) (map[string]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	all, err := s.rdb.HGetAll(ctx, s.eventKeys(eventID)[kAlloc]).Result()
	if err != nil {
		return nil, fmt.Errorf("accessible seats: %w", err)
	}
	kinds := kindsOf(all)
	for seat, kind := range kinds {
		if ch, allocated := all[seat]; allocated && ch != kind {
			delete(kinds, seat)
		}
	}
	return kinds, nil
}

// SeatKinds returns every seat's accessibility kind Redis keeps, seat id
// -> ChannelWheelchair or ChannelCompanion, also of a seat allocated to
// another channel for now (which AccessibleSeats leaves out): what the
// ledger's accessible_seats should say (the reconciliation's read, not a
// request path). settled is false while a rebuild of the event has steps
// still to run (RestorePending), the kinds one of them: the kinds and
// that state are read at one instant (MULTI), so a rebuild never passes for
// settled with its kinds not loaded yet. ErrEventNotFound.
func (s *Store) SeatKinds(ctx context.Context, eventID string) (kinds map[string]string, settled bool, err error) {
	if err := checkIDs(eventID); err != nil {
		return nil, false, err
	}
	k := s.eventKeys(eventID)
	var all *redis.MapStringStringCmd
	var cfg *redis.SliceCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		all = p.HGetAll(ctx, k[kAlloc])
		cfg = p.HMGet(ctx, k[kConfig], "total", "restore_pending")
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("seat kinds: %w", err)
	}
	v := cfg.Val()
	if v[0] == nil {
		return nil, false, ErrEventNotFound
	}
	pending, _ := v[1].(string)
	return kindsOf(all.Val()), pending == "", nil
}

// kindsOf is the seats' kinds in an event's alloc hash all: alloc
// ' a:<seat>', or a seat allocated to the channel wheelchair or companion
// before kinds were kept.
func kindsOf(all map[string]string) map[string]string {
	kinds := map[string]string{}
	for field, v := range all {
		if seat, ok := strings.CutPrefix(field, " a:"); ok {
			kinds[seat] = v
		} else if (v == ChannelWheelchair || v == ChannelCompanion) && !strings.HasPrefix(field, " ") {
			if _, kept := all[" a:"+field]; !kept {
				kinds[field] = v // allocated before kinds were kept
			}
		}
	}
	return kinds
}

// SetSeatKind sets seatIDs' accessibility kind (ChannelWheelchair or
// ChannelCompanion) or clears it (kind ""), all of them or none, an
// operator's change (MarkSeats with MarkKind): AccessibleSeats reports
// the new kind, or the seat no more. It returns the seats whose kind
// changed (a repeat: none). A seat allocated to the channel wheelchair or
// companion is of that kind while the allocation lasts: another kind or
// none is refused (*SeatsRefusedError, status SeatAllocated). Errors:
// ErrEventNotFound, ErrInvalidArgument, *SeatsUnknownError,
// *SeatsRefusedError.
func (s *Store) SetSeatKind(ctx context.Context, eventID, kind string, seatIDs []string) ([]string, error) {
	return s.MarkSeats(ctx, eventID, MarkKind, kind, seatIDs)
}

// MarkAccessible gives seatIDs the kind (ChannelWheelchair or
// ChannelCompanion) that AccessibleSeats reports: a rebuild's, for the
// seats the ledger knows as such whose allocation ended. Seats not in the
// map are left out; it returns the seats given the kind. Errors:
// ErrEventNotFound, ErrInvalidArgument.
func (s *Store) MarkAccessible(ctx context.Context, eventID, kind string, seatIDs []string) ([]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	if kind != ChannelWheelchair && kind != ChannelCompanion {
		return nil, fmt.Errorf("%w: kind %q", ErrInvalidArgument, kind)
	}
	if err := checkIDs(seatIDs...); err != nil {
		return nil, err
	}
	var set []string
	for len(seatIDs) > 0 {
		n := min(len(seatIDs), MaxMarkSeats)
		args := []any{"accessible", kind, ""}
		for _, id := range seatIDs[:n] {
			args = append(args, id)
		}
		r, err := s.run(ctx, scriptMarkSeats, eventID, args...)
		if err != nil {
			return set, fmt.Errorf("mark accessible: %w", err)
		}
		var part []string
		r.scan(nil, &part)
		set = append(set, part...)
		seatIDs = seatIDs[n:]
	}
	return set, nil
}
