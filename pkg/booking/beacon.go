package booking

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// The draw's public randomness beacon (docs/fairness.md "The beacon"):
// before the pre-queue opens, the operator may commit the draw to a round
// of a public beacon (config beacon_round, beacon_source); the round's
// value, published by the beacon after the pre-queue closed, is then a
// third input of every rank (fairness.DrawInput), supplied by the
// operator (config beacon). Plain commands on the config hash, read by
// CloseDraw and DrawInputs; the ledger keeps a copy, which a rebuild
// writes with the config (RestoreInput.Beacon).

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
	// ErrNoPrequeue: the event has no pre-queue, hence no draw.
	ErrNoPrequeue = errors.New("the event has no pre-queue (early_join_seconds): there is no draw")
)

// beaconOf reads the config's beacon_round, beacon_source, beacon.
func beaconOf(v []any) fairness.Beacon {
	var b fairness.Beacon
	if r, ok := v[0].(string); ok {
		b.Round, _ = strconv.ParseInt(r, 10, 64)
	}
	b.Source, _ = v[1].(string)
	b.Value, _ = v[2].(string)
	return b
}

// Beacon returns the event's committed beacon (zero: none).
func (s *Store) Beacon(ctx context.Context, eventID string) (fairness.Beacon, error) {
	if err := checkIDs(eventID); err != nil {
		return fairness.Beacon{}, err
	}
	v, err := s.rdb.HMGet(ctx, s.eventKeys(eventID)[kConfig], "beacon_round", "beacon_source", "beacon").Result()
	if err != nil {
		return fairness.Beacon{}, fmt.Errorf("beacon: %w", err)
	}
	return beaconOf(v), nil
}

// SetBeaconRound commits eventID's draw to beacon round round (> 0),
// source naming the beacon for fans, while the pre-queue has not opened
// (Redis's clock before sales start - early join): ErrBeaconLocked after,
// ErrNoPrequeue for an event without a pre-queue. It returns the beacon
// before the change; the same round and source again change nothing.
func (s *Store) SetBeaconRound(ctx context.Context, eventID string, round int64, source string) (fairness.Beacon, error) {
	if err := checkIDs(eventID); err != nil {
		return fairness.Beacon{}, err
	}
	if round <= 0 {
		return fairness.Beacon{}, ErrInvalidArgument
	}
	cfgKey := s.eventKeys(eventID)[kConfig]
	v, err := s.rdb.HMGet(ctx, cfgKey, "beacon_round", "beacon_source", "beacon", "draw_commit", "sales_start_ms", "early_join_ms").Result()
	if err != nil {
		return fairness.Beacon{}, fmt.Errorf("beacon round: %w", err)
	}
	prev := beaconOf(v)
	commit, _ := v[3].(string)
	if v[4] == nil {
		return prev, ErrEventNotFound
	}
	if commit == "" {
		return prev, ErrNoPrequeue
	}
	if prev.Round == round && prev.Source == source {
		return prev, nil
	}
	start, _ := strconv.ParseInt(fmt.Sprint(v[4]), 10, 64)
	early, _ := strconv.ParseInt(fmt.Sprint(v[5]), 10, 64)
	now, err := s.Clock(ctx, eventID)
	if err != nil {
		return prev, err
	}
	if now.UnixMilli() >= start-early {
		return prev, ErrBeaconLocked
	}
	if err := s.rdb.HSet(ctx, cfgKey, "beacon_round", round, "beacon_source", source).Err(); err != nil {
		return prev, fmt.Errorf("beacon round: %w", err)
	}
	return prev, nil
}

// SetBeaconValue supplies the committed round's value (fairness.ValidBeacon,
// else ErrInvalidArgument): ErrBeaconNotCommitted without a round,
// ErrBeaconValueSet when a different value was supplied (the same again
// changes nothing: changed false).
func (s *Store) SetBeaconValue(ctx context.Context, eventID, value string) (changed bool, err error) {
	if err := checkIDs(eventID); err != nil {
		return false, err
	}
	if !fairness.ValidBeacon(value) {
		return false, ErrInvalidArgument
	}
	b, err := s.Beacon(ctx, eventID)
	if err != nil {
		return false, err
	}
	if b.Round == 0 {
		if ok, err := s.rdb.Exists(ctx, s.eventKeys(eventID)[kConfig]).Result(); err == nil && ok == 0 {
			return false, ErrEventNotFound
		}
		return false, ErrBeaconNotCommitted
	}
	set, err := s.rdb.HSetNX(ctx, s.eventKeys(eventID)[kConfig], "beacon", value).Result()
	if err != nil {
		return false, fmt.Errorf("beacon value: %w", err)
	}
	if set {
		return true, nil
	}
	if b, err = s.Beacon(ctx, eventID); err != nil {
		return false, err
	}
	if b.Value != value {
		return false, ErrBeaconValueSet
	}
	return false, nil
}
