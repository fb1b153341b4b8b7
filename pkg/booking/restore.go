package booking

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/ids"
)

// Rebuilding an event from the system of record (pkg/ledger): the scripts
// and functions the ledger's Restorer and reconciliation use. Kept in this
// file of its own, so the rest of the engine does not change.
var (
	scriptRestoreEvent = newScript("restore_event")
	scriptRepairSold   = newScript("repair_sold")
)

// NormalizeEvent applies CreateEvent's defaults and checks to c and returns
// it with Seats listing every seat in display order (expanded from Rows ×
// SeatsPerRow, which are kept). Errors wrap ErrInvalidEvent.
func NormalizeEvent(c EventConfig) (EventConfig, error) {
	rows, perRow := c.Rows, c.SeatsPerRow
	seats, err := normalise(&c)
	if err != nil {
		return EventConfig{}, err
	}
	if len(c.Seats) == 0 {
		c.Rows, c.SeatsPerRow = rows, perRow
	}
	c.Seats = seats
	return c, nil
}

// SoldSeat is one sold seat as the ledger records it.
type SoldSeat struct {
	UserID    string
	SeatID    string
	PaymentID string
	Sequence  int64
}

// MaxSequence is the largest join sequence: the scripts hold numbers as
// Lua numbers (doubles), exact for integers up to 2^53.
const MaxSequence = 1<<53 - 1

// MaxSeqBase is the largest sequence base RestoreEvent takes: it leaves
// 2^32 joins below MaxSequence (pkg/ledger picks bases near now_ms ×
// 1000, about 1.8e15 in 2026 and below this until the year 2255).
const MaxSeqBase = MaxSequence - 1<<32

// checkSold checks a sold seat's ids and sequence.
func checkSold(x SoldSeat) error {
	if err := checkIDs(x.UserID, x.SeatID, x.PaymentID); err != nil {
		return err
	}
	if x.Sequence < 0 || x.Sequence > MaxSequence {
		return fmt.Errorf("%w: sequence %d of seat %s outside [0, %d]", ErrInvalidArgument, x.Sequence, x.SeatID, int64(MaxSequence))
	}
	return nil
}

// RestoreInput is what RestoreEvent rebuilds: a normalised definition
// (NormalizeEvent), whether admission is paused, the seat sold to each
// completed user, SeqBase, a join sequence above every one the event
// ever gave out (new joins continue after it), and the seats operators
// hold or killed (Marks), the admission log the ledger archived
// (AdmissionLog; zero: a new log), the current phase and who may join in
// it (Phase; zero: none, anyone), and the draws' seeds the ledger kept
// (DrawSeeds: the event's own pre-queue's and later phases'; a draw
// without one gets a new seed, as a new event does). The rebuilt event
// has its phase, its seeds and Config's door, sales window and waitlist
// settings from its first step on, so that no join between the steps,
// nor after a later step failed, finds it open to anyone, without its
// challenge or rate cap, or showing a commitment other than the one
// published before the rebuild.
type RestoreInput struct {
	Config       EventConfig
	Paused       bool
	SeqBase      int64
	Sold         []SoldSeat
	Marks        []MarkedSeat
	AdmissionLog LogStart
	Phase        PhaseState
	DrawSeeds    []DrawSeed
	// Schedule is the event's schedule of phases (none: no phases), its
	// current slot applied again by the next ApplySchedule; Beacons the
	// beacon rounds its draws are committed to, with the values once
	// given, by phase ("" the event's own pre-queue's).
	Schedule Schedule
	Beacons  map[string]fairness.Beacon
}

// LogStart is where a rebuilt event's admission log continues: the
// archived entries (Size), the hash of the last (Head) and the salt of
// their user hashes (Salt).
type LogStart struct {
	Size int64
	Head string
	Salt string
}

// RestoreResult is what RestoreEvent rebuilt.
type RestoreResult struct {
	Total   int64 // seats in the map
	Sold    int64 // seats marked sold (completed users)
	SeqBase int64 // where the join sequence continues
	// Skipped counts sold seats that were not in the seat map or given twice.
	Skipped int64
	// Unmarked are seats of Marks left on sale: sold, or not in the map.
	Unmarked []string
	// Restored is the rebuild's outbox entry (KindRestored), written in the
	// same step: the event_restored fact, to publish and acknowledge
	// (AckOutbox); the safety net's sweep publishes it otherwise.
	Restored OutboxEntry
}

// RestoreEvent rebuilds an event whose configuration is gone from Redis
// (lua/restore_event.lua), atomically: configuration, seat map, sold seats
// and completed users; waiting users and open holds are dropped and may
// join again. The seats operators hold or killed (Marks) are marked by a
// second call right after, before any fan can have been admitted again
// (admission needs a promotion and a selection in between). ErrEventExists when the event's configuration is present
// (nothing changed). Errors: ErrInvalidEvent, ErrInvalidArgument (also a
// draw seed that does not match its commitment: nothing written).
func (s *Store) RestoreEvent(ctx context.Context, in RestoreInput) (RestoreResult, error) {
	c := in.Config
	if !ids.Valid(c.ID) || len(c.Seats) == 0 || len(c.Seats) > MaxSeats {
		return RestoreResult{}, fmt.Errorf("%w: restore needs a normalised definition", ErrInvalidEvent)
	}
	if err := normaliseOrders(&c); err != nil { // defaults for a definition stored before orders of several seats
		return RestoreResult{}, err
	}
	if in.SeqBase < 0 || in.SeqBase > MaxSeqBase {
		return RestoreResult{}, fmt.Errorf("%w: sequence base %d outside [0, %d]", ErrInvalidArgument, in.SeqBase, int64(MaxSeqBase))
	}
	paused := 0
	if in.Paused {
		paused = 1
	}
	args := make([]any, 0, 40+4*len(in.DrawSeeds)+len(c.Seats)+4*len(in.Sold))
	args = append(args, c.Name, c.Capacity, c.Hold.Milliseconds(), c.Grace.Milliseconds(),
		unixMS(c.SalesStart), unixMS(c.SalesEnd), c.BatchSize, c.Abandon.Milliseconds(),
		c.Rows, c.SeatsPerRow, paused, in.SeqBase, len(c.Seats))
	more, err := orderArgs(c, len(c.Seats))
	if err != nil {
		return RestoreResult{}, fmt.Errorf("restore event: %w", err)
	}
	args = append(args, more...)
	lg := in.AdmissionLog
	if lg.Size < 0 || (lg.Size > 0) != (lg.Head != "") || strings.ContainsRune(lg.Salt+lg.Head, '|') {
		return RestoreResult{}, fmt.Errorf("%w: admission log start %d %q", ErrInvalidArgument, lg.Size, lg.Head)
	}
	conf, err := restoreFields(c, in)
	if err != nil {
		return RestoreResult{}, err
	}
	args = append(args, lg.Size, lg.Head, lg.Salt, len(conf)/2)
	args = append(args, conf...)
	for _, id := range c.Seats {
		args = append(args, id)
	}
	for _, x := range in.Sold {
		if err := checkSold(x); err != nil {
			return RestoreResult{}, err
		}
		args = append(args, x.UserID, x.SeatID, x.PaymentID, x.Sequence)
	}
	r, err := s.run(ctx, scriptRestoreEvent, c.ID, args...)
	if err != nil {
		return RestoreResult{}, fmt.Errorf("restore event: %w", err)
	}
	unmarked, err := s.applyMarks(ctx, c.ID, in.Marks)
	if err != nil {
		return RestoreResult{}, fmt.Errorf("restore event: marks: %w", err)
	}
	if err := s.rdb.SAdd(ctx, eventsIndexKey(s.prefix), c.ID).Err(); err != nil {
		return RestoreResult{}, fmt.Errorf("index event: %w", err)
	}
	var res RestoreResult
	r.scan(&res.Total, &res.Sold, &res.SeqBase, &res.Skipped, &res.Restored.Reason, &res.Restored.At)
	res.Unmarked = unmarked
	res.Restored.Kind, res.Restored.Sequence = KindRestored, res.SeqBase
	return res, nil
}

// restoreFields are the config field, value pairs restore_event writes
// with a rebuilt event's config: c's door, sales window and waitlist
// settings, in's phase, schedule and beacon, and its kept draw seeds (a
// new seed for a pre-queue none was kept for).
func restoreFields(c EventConfig, in RestoreInput) ([]any, error) {
	kept := func(phase string) bool {
		return slices.ContainsFunc(in.DrawSeeds, func(d DrawSeed) bool { return d.Phase == phase })
	}
	conf := doorFields(c, !kept(""))
	if in.Phase != (PhaseState{}) {
		if err := CheckPhase(in.Phase); err != nil {
			return nil, err
		}
		conf = append(conf, "phase", in.Phase.Phase, "audience", in.Phase.Audience)
	}
	if len(in.Schedule.Phases) > 0 {
		conf = append(conf, scheduleArgs(c, in.Schedule, kept)...)
	}
	for _, phase := range slices.Sorted(maps.Keys(in.Beacons)) {
		b := in.Beacons[phase]
		if b.Round <= 0 || (b.Value != "" && !fairness.ValidBeacon(b.Value)) || (phase != "" && !ids.Valid(phase)) {
			return nil, fmt.Errorf("%w: beacon of %q: round %d, value %q", ErrInvalidArgument, phase, b.Round, b.Value)
		}
		f := beaconFields(phase)
		conf = append(conf, f[0], b.Round, f[1], b.Source)
		if b.Value != "" {
			conf = append(conf, f[2], b.Value)
		}
		if b.Signature != "" {
			conf = append(conf, f[3], b.Signature)
		}
	}
	for _, d := range in.DrawSeeds {
		if err := CheckDrawSeed(d); err != nil {
			return nil, err
		}
		seed, commit := drawFields(d.Phase)
		conf = append(conf, seed, d.Seed, commit, d.Commit)
	}
	return append(conf, "restore_pending", RestorePendingAll), nil
}

// RestorePendingAll is the restore_pending of a rebuilt event none of
// whose steps after RestoreEvent has run yet (ledger.Restorer runs them,
// then records those that failed: SetRestorePending).
const RestorePendingAll = "all"

// RestorePending reports whether eventID's configuration is in Redis and
// which of its rebuild's steps after RestoreEvent are still to run
// (config restore_pending: RestorePendingAll, the names of those that
// failed joined by ',', or "": none; absent on an event never rebuilt).
func (s *Store) RestorePending(ctx context.Context, eventID string) (exists bool, steps string, err error) {
	if err := checkIDs(eventID); err != nil {
		return false, "", err
	}
	v, err := s.rdb.HMGet(ctx, s.eventKeys(eventID)[kConfig], "total", "restore_pending").Result()
	if err != nil {
		return false, "", fmt.Errorf("restore pending: %w", err)
	}
	steps, _ = v[1].(string)
	return v[0] != nil, steps, nil
}

// SetRestorePending records the steps of eventID's rebuild still to run
// ("": none). ErrEventNotFound when its configuration is gone.
func (s *Store) SetRestorePending(ctx context.Context, eventID, steps string) error {
	if _, err := s.run(ctx, scriptUpdateEvent, eventID, "restore_pending", steps); err != nil {
		return fmt.Errorf("restore pending: %w", err)
	}
	return nil
}

// EventExists reports whether the event's configuration is in Redis.
func (s *Store) EventExists(ctx context.Context, eventID string) (bool, error) {
	if err := checkIDs(eventID); err != nil {
		return false, err
	}
	n, err := s.rdb.Exists(ctx, s.eventKeys(eventID)[kConfig]).Result()
	if err != nil {
		return false, fmt.Errorf("event exists: %w", err)
	}
	return n == 1, nil
}

// SoldSeats returns every seat Redis has sold, seat id → buyer. It reads
// the seat hash with HSCAN (operator and reconciliation use, not a request
// path). ErrEventNotFound when the event is not in Redis.
func (s *Store) SoldSeats(ctx context.Context, eventID string) (map[string]string, error) {
	out := map[string]string{}
	err := s.scanSeats(ctx, eventID, func(seat, v string) {
		if user, ok := strings.CutPrefix(v, "s:"); ok {
			out[seat] = user
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sold seats: %w", err)
	}
	return out, nil
}

// MarkedSeats returns every seat Redis has held for a purpose (MarkHold),
// killed (MarkKill) or allocated to a channel and not taken by its fans
// (MarkAllocate, the channel as Purpose), by seat id, read as SoldSeats
// reads (not a request path); with seatIDs, of those seats alone (one
// HMGET). ErrEventNotFound when the event is not in Redis.
func (s *Store) MarkedSeats(ctx context.Context, eventID string, seatIDs ...string) (map[string]MarkedSeat, error) {
	out := map[string]MarkedSeat{}
	add := func(seat, v string) {
		if purpose, ok := strings.CutPrefix(v, "r:"); ok {
			out[seat] = MarkedSeat{SeatID: seat, Mark: MarkHold, Purpose: purpose}
		} else if channel, ok := strings.CutPrefix(v, "c:"); ok {
			out[seat] = MarkedSeat{SeatID: seat, Mark: MarkAllocate, Purpose: channel}
		} else if v == "k:" {
			out[seat] = MarkedSeat{SeatID: seat, Mark: MarkKill}
		}
	}
	if len(seatIDs) == 0 {
		if err := s.scanSeats(ctx, eventID, add); err != nil {
			return nil, fmt.Errorf("marked seats: %w", err)
		}
		return out, nil
	}
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	vs, err := s.rdb.HMGet(ctx, s.eventKeys(eventID)[kSeats], seatIDs...).Result()
	if err != nil {
		return nil, fmt.Errorf("marked seats: %w", err)
	}
	for i, v := range vs {
		if v, ok := v.(string); ok {
			add(seatIDs[i], v)
		}
	}
	return out, nil
}

// scanSeats calls fn with each seat of the event and its value in the
// seat hash (lua/lib/seats.lua), read with HSCAN. ErrEventNotFound.
func (s *Store) scanSeats(ctx context.Context, eventID string, fn func(seat, value string)) error {
	ok, err := s.EventExists(ctx, eventID)
	if err != nil {
		return err
	}
	if !ok {
		return ErrEventNotFound
	}
	key := s.eventKeys(eventID)[kSeats]
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "", 1000).Result()
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			fn(kv[i], kv[i+1])
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// RepairResult is what RepairSold did.
type RepairResult struct {
	Repaired int64 // seats that became sold in Redis
	Already  int64 // seats Redis had sold to the same user
	// Conflicts are seats Redis sold to another user: reported, unchanged.
	Conflicts []string
	// Unknown are seats not in Redis's seat map.
	Unknown []string
}

// RepairSold marks seats the ledger sold as sold in Redis
// (lua/repair_sold.lua): a free seat is sold, a seat held by someone else
// is taken (their hold expires), a seat sold to another user is only
// reported. Errors: ErrEventNotFound.
func (s *Store) RepairSold(ctx context.Context, eventID string, seats []SoldSeat) (RepairResult, error) {
	if err := checkIDs(eventID); err != nil {
		return RepairResult{}, err
	}
	if len(seats) == 0 {
		return RepairResult{}, nil
	}
	args := make([]any, 0, 4*len(seats))
	for _, x := range seats {
		if err := checkSold(x); err != nil {
			return RepairResult{}, err
		}
		args = append(args, x.UserID, x.SeatID, x.PaymentID, x.Sequence)
	}
	r, err := s.run(ctx, scriptRepairSold, eventID, args...)
	if err != nil {
		return RepairResult{}, fmt.Errorf("repair sold: %w", err)
	}
	var res RepairResult
	r.scan(&res.Repaired, &res.Already, &res.Conflicts, &res.Unknown)
	return res, nil
}
