package booking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// A draw's public randomness beacon (docs/fairness.md "The beacon"):
// before a pre-queue opens, the operator may commit its draw to a round of
// a public beacon (config beacon_round, beacon_source for the event's own
// pre-queue; pq_beacon_round:<id>, pq_beacon_source:<id> for a later
// phase's, beaconFields); the round's value, published by the beacon after
// the pre-queue closed, is then a third input of every rank
// (fairness.DrawInput), supplied by the operator (config beacon,
// pq_beacon:<id>), with the round's signature when the value is taken from
// it (beacon_sig, pq_beacon_sig:<id>). Plain commands on the config hash,
// read by CloseDraw, ClosePhaseDraw and DrawInputs; the ledger keeps a
// copy, which a rebuild writes with the config (RestoreInput.Beacons).

// Refusals of the beacon's settings.
var (
	// ErrBeaconLocked: the pre-queue has opened; the round can no longer
	// be committed or changed.
	ErrBeaconLocked = errors.New("the pre-queue has opened: the beacon round can no longer be committed or changed")
	// ErrBeaconNotCommitted: a value for a draw committed to no round.
	ErrBeaconNotCommitted = errors.New("the draw is committed to no beacon round")
	// ErrBeaconValueSet: the round's value was supplied already, and
	// differently.
	ErrBeaconValueSet = errors.New("the beacon round's value was supplied already")
	// ErrBeaconRoundEarly: the beacon (a chain fairness.BeaconChainOf
	// knows) publishes the round before the pre-queue closes, so its value
	// would be known while the list is open; the error's text says when.
	ErrBeaconRoundEarly = errors.New("the beacon publishes the round before the pre-queue closes")
	// ErrNoPrequeue: the event has no pre-queue, hence no draw.
	ErrNoPrequeue = errors.New("the event has no pre-queue (early_join_seconds): there is no draw")
)

// beaconFields are the config fields of the beacon of phase's draw (""
// the event's own pre-queue's): its round, source, value and signature,
// in the order beaconOf reads them.
func beaconFields(phase string) []string {
	if phase == "" {
		return []string{"beacon_round", "beacon_source", "beacon", "beacon_sig"}
	}
	return []string{"pq_beacon_round:" + phase, "pq_beacon_source:" + phase, "pq_beacon:" + phase, "pq_beacon_sig:" + phase}
}

// beaconOf reads a beacon's fields (beaconFields' values, in order).
func beaconOf(v []any) fairness.Beacon {
	var b fairness.Beacon
	if r, ok := v[0].(string); ok {
		b.Round, _ = strconv.ParseInt(r, 10, 64)
	}
	b.Source, _ = v[1].(string)
	b.Value, _ = v[2].(string)
	b.Signature, _ = v[3].(string)
	return b
}

// Beacon returns the beacon phase's draw is committed to ("" the event's
// own pre-queue's; zero: none).
func (s *Store) Beacon(ctx context.Context, eventID, phase string) (fairness.Beacon, error) {
	if err := checkIDs(eventID); err != nil {
		return fairness.Beacon{}, err
	}
	v, err := s.rdb.HMGet(ctx, s.eventKeys(eventID)[kConfig], beaconFields(phase)...).Result()
	if err != nil {
		return fairness.Beacon{}, fmt.Errorf("beacon: %w", err)
	}
	return beaconOf(v), nil
}

// SetBeaconRound commits the draw of phase's pre-queue ("" the event's
// own, else a later phase's: ErrNoPhaseDraw when that phase has none) to
// beacon round round (> 0), source naming the beacon for fans, while the
// pre-queue has not opened (Redis's clock before its start - its early
// join): ErrBeaconLocked after, ErrNoPrequeue for an event without a
// pre-queue. For a beacon of a chain boxoffice knows
// (fairness.BeaconChainOf) the round must come out after the pre-queue
// closes (its start; ErrBeaconRoundEarly), and it may be committed or
// changed until then: its value is unknown to anyone while the list is
// open. It returns the beacon before the change; the same round and
// source again change nothing.
func (s *Store) SetBeaconRound(ctx context.Context, eventID, phase string, round int64, source string) (fairness.Beacon, error) {
	if err := checkIDs(eventID); err != nil {
		return fairness.Beacon{}, err
	}
	if round <= 0 {
		return fairness.Beacon{}, ErrInvalidArgument
	}
	cfgKey := s.eventKeys(eventID)[kConfig]
	fields := beaconFields(phase)
	_, commitField := drawFields(phase)
	v, err := s.rdb.HMGet(ctx, cfgKey, append([]string{commitField, "sales_start_ms", "early_join_ms", "schedule"}, fields...)...).Result()
	if err != nil {
		return fairness.Beacon{}, fmt.Errorf("beacon round: %w", err)
	}
	prev := beaconOf(v[4:])
	commit, _ := v[0].(string)
	if v[1] == nil {
		return prev, ErrEventNotFound
	}
	switch {
	case commit == "" && phase == "":
		return prev, ErrNoPrequeue
	case commit == "":
		return prev, ErrNoPhaseDraw
	}
	if prev.Round == round && prev.Source == source {
		return prev, nil
	}
	start, early, ok := prequeueWindow(phase, v[1], v[2], v[3])
	if !ok {
		return prev, ErrNoPhaseDraw // the schedule has no such phase
	}
	now, err := s.Clock(ctx, eventID)
	if err != nil {
		return prev, err
	}
	b := fairness.Beacon{Round: round, Source: source}
	if at, known := b.RoundTime(); known {
		early = 0 // its time is checked: open until the close
		if !at.After(time.UnixMilli(start)) {
			return prev, roundEarly(b, at, time.UnixMilli(start))
		}
	}
	if now.UnixMilli() >= start-early {
		return prev, ErrBeaconLocked
	}
	if err := s.rdb.HSet(ctx, cfgKey, fields[0], round, fields[1], source).Err(); err != nil {
		return prev, fmt.Errorf("beacon round: %w", err)
	}
	return prev, nil
}

// checkBeaconStart refuses to move the start of phase's pre-queue (""
// the event's own) to start when its draw is committed to a round of a
// chain boxoffice knows that comes out no later (ErrBeaconRoundEarly):
// the round's value would be public while the list is still open. The
// operator commits a later round first, which SetBeaconRound allows
// until the current start. Once that start has passed the draw is closed
// and its round stands.
func (s *Store) checkBeaconStart(ctx context.Context, eventID, phase string, start time.Time) error {
	b, err := s.Beacon(ctx, eventID, phase)
	if err != nil {
		return err
	}
	at, known := b.RoundTime()
	if !known || at.After(start) {
		return nil
	}
	v, err := s.rdb.HMGet(ctx, s.eventKeys(eventID)[kConfig], "sales_start_ms", "early_join_ms", "schedule").Result()
	if err != nil {
		return fmt.Errorf("beacon round: %w", err)
	}
	current, _, ok := prequeueWindow(phase, v[0], v[1], v[2])
	if !ok {
		return nil // a phase new to the schedule has no draw yet
	}
	now, err := s.Clock(ctx, eventID)
	if err != nil {
		return err
	}
	if now.UnixMilli() >= current {
		return nil
	}
	return roundEarly(b, at, start)
}

// roundEarly is ErrBeaconRoundEarly for beacon b, whose round comes out
// at at, and a pre-queue closing at start.
func roundEarly(b fairness.Beacon, at, start time.Time) error {
	c, _ := fairness.BeaconChainOf(b.Source)
	return fmt.Errorf("%w: %s round %d comes out at %s, the pre-queue closes at %s; commit round %d or later",
		ErrBeaconRoundEarly, c.Name, b.Round, at.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339), c.FirstRoundAfter(start))
}

// prequeueWindow is the start and early join (ms) of phase's pre-queue
// from the config's sales_start_ms, early_join_ms and schedule
// (scheduleField) as HMGET read them: the event's own for phase "", else
// that phase's, false when the schedule has no such phase.
func prequeueWindow(phase string, startMS, earlyMS, schedule any) (start, early int64, ok bool) {
	if phase == "" {
		start, _ = strconv.ParseInt(fmt.Sprint(startMS), 10, 64)
		early, _ = strconv.ParseInt(fmt.Sprint(earlyMS), 10, 64)
		return start, early, true
	}
	sched, _ := schedule.(string)
	for line := range strings.SplitSeq(sched, "\n") {
		f := strings.Split(line, "|")
		if len(f) < 8 || f[0] != phase {
			continue
		}
		start, err1 := strconv.ParseInt(f[1], 10, 64)
		early, err2 := strconv.ParseInt(f[7], 10, 64)
		return start, early, err1 == nil && err2 == nil
	}
	return 0, 0, false
}

// SetBeaconValue supplies the value of the round phase's draw is
// committed to (fairness.ValidBeacon, else ErrInvalidArgument), with the
// round's signature it was taken from ("" for a beacon whose values are
// not checked; the caller checked it: fairness.BeaconChain.RoundValue):
// ErrBeaconNotCommitted without a round, ErrBeaconValueSet when a
// different value was supplied (the same again changes nothing: changed
// false, unless it brings the signature an interrupted call did not
// keep).
func (s *Store) SetBeaconValue(ctx context.Context, eventID, phase, value, signature string) (changed bool, err error) {
	if err := checkIDs(eventID); err != nil {
		return false, err
	}
	if !fairness.ValidBeacon(value) {
		return false, ErrInvalidArgument
	}
	b, err := s.Beacon(ctx, eventID, phase)
	if err != nil {
		return false, err
	}
	if b.Round == 0 {
		if ok, err := s.rdb.Exists(ctx, s.eventKeys(eventID)[kConfig]).Result(); err == nil && ok == 0 {
			return false, ErrEventNotFound
		}
		return false, ErrBeaconNotCommitted
	}
	cfgKey, fields := s.eventKeys(eventID)[kConfig], beaconFields(phase)
	set, err := s.rdb.HSetNX(ctx, cfgKey, fields[2], value).Result()
	if err != nil {
		return false, fmt.Errorf("beacon value: %w", err)
	}
	if !set {
		if b, err = s.Beacon(ctx, eventID, phase); err != nil {
			return false, err
		}
		if b.Value != value {
			return false, ErrBeaconValueSet
		}
	}
	if signature == "" || b.Signature == signature {
		return set, nil
	}
	// a round has one signature, so the same value has the same one
	if err := s.rdb.HSet(ctx, cfgKey, fields[3], signature).Err(); err != nil {
		return false, fmt.Errorf("beacon signature: %w", err)
	}
	return true, nil
}
