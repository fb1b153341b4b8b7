package booking

import (
	"context"
	"fmt"
	"time"
)

// The front door's event settings: the rate cap (AdmitPerMinute), the
// pre-queue (EarlyJoin; its draw is prequeue.go's) and the join
// challenge. They are config fields written with the rest of the config:
// by create_event.lua and restore_event.lua (doorFields), and changed by
// update_event.lua.

// MaxAdmitPerMinute bounds the rate cap.
const MaxAdmitPerMinute = 10_000_000

// MaxEarlyJoin bounds EarlyJoin.
const MaxEarlyJoin = 7 * 24 * time.Hour

func checkEarlyJoin(d time.Duration) error {
	if d < 0 || d > MaxEarlyJoin {
		return fmt.Errorf("early join must be from 0 (off) to %s", MaxEarlyJoin)
	}
	return nil
}

func checkAdmitPerMinute(n int) error {
	if n < 0 || n > MaxAdmitPerMinute {
		return fmt.Errorf("admit_per_minute must be from 0 (off) to %d", MaxAdmitPerMinute)
	}
	return nil
}

// The join challenge: ChallengePoW makes the gateway require a solved
// proof-of-work challenge with every join (services/gateway/challenge.go);
// the engine only keeps the setting (config field challenge).
const (
	ChallengeNone = "none"
	ChallengePoW  = "pow"
)

// normaliseChallenge maps "" to ChallengeNone and refuses anything but
// the two values.
func normaliseChallenge(v string) (string, error) {
	switch v {
	case "", ChallengeNone:
		return ChallengeNone, nil
	case ChallengePoW:
		return v, nil
	}
	return "", fmt.Errorf("challenge must be %q or %q", ChallengeNone, ChallengePoW)
}

// normaliseDoor checks c's door settings and normalises its challenge.
func normaliseDoor(c *EventConfig) error {
	if err := checkAdmitPerMinute(c.AdmitPerMinute); err != nil {
		return err
	}
	if err := checkEarlyJoin(c.EarlyJoin); err != nil {
		return err
	}
	var err error
	c.Challenge, err = normaliseChallenge(c.Challenge)
	return err
}

// doorArgs are update_event.lua's field, value pairs of the door settings
// in u. A changed early join applies to joins from then on: users already
// pre-queued keep their draw key and are drawn at the sales start even if
// the pre-queue is shortened or switched off, and the seed committed to
// stays (update_event.lua sets draw_seed and draw_commit only when the
// event has none, i.e. when the pre-queue is switched on for the first
// time).
func (u EventUpdate) doorArgs() ([]any, error) {
	var args []any
	bad := func(err error) ([]any, error) { return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err) }
	if u.AdmitPerMinute != nil {
		if err := checkAdmitPerMinute(*u.AdmitPerMinute); err != nil {
			return bad(err)
		}
		args = append(args, "admit_per_minute", *u.AdmitPerMinute)
	}
	if u.EarlyJoin != nil {
		if err := checkEarlyJoin(*u.EarlyJoin); err != nil {
			return bad(err)
		}
		args = append(args, "early_join_ms", u.EarlyJoin.Milliseconds())
		if *u.EarlyJoin > 0 {
			args = append(args, drawSeedArgs()...)
		}
	}
	if u.Challenge != nil {
		v, err := normaliseChallenge(*u.Challenge)
		if err != nil {
			return bad(err)
		}
		args = append(args, "challenge", v)
	}
	if u.NoOrphanRule != nil {
		args = append(args, "no_orphans", boolArg(*u.NoOrphanRule))
	}
	return args, nil
}

// doorUpdate is the update that gives a created event c's door settings
// (nil when c has none), with a new draw seed for its pre-queue when
// newSeed (update_event.lua keeps a seed the event has).
func doorUpdate(c EventConfig, newSeed bool) []any {
	var args []any
	if c.AdmitPerMinute != 0 {
		args = append(args, "admit_per_minute", c.AdmitPerMinute)
	}
	if c.EarlyJoin > 0 {
		args = append(args, "early_join_ms", c.EarlyJoin.Milliseconds())
		if newSeed {
			args = append(args, drawSeedArgs()...)
		}
	}
	if c.Challenge == ChallengePoW {
		args = append(args, "challenge", c.Challenge)
	}
	if c.NoOrphanRule {
		args = append(args, "no_orphans", 1)
	}
	return args
}

// sameDoor reports whether e has c's door (and sales window) settings.
func sameDoor(e Event, c EventConfig) bool {
	return e.AdmitPerMinute == c.AdmitPerMinute && e.EarlyJoin == c.EarlyJoin && e.Challenge == c.Challenge &&
		e.NoOrphanRule == c.NoOrphanRule && e.OnPhaseChange == orKeep(c.OnPhaseChange) &&
		e.FinishAfterEnd == !c.HoldsEndWithSale && e.RefundableUntil.Equal(ms(unixMS(c.RefundableUntil)))
}

// challengeOf is the event's challenge setting from its config hash.
func challengeOf(cfg map[string]string) string {
	if v := cfg["challenge"]; v != "" {
		return v
	}
	return ChallengeNone
}

// EventChallenge reads only the event's challenge setting (the gateway
// checks it before each join, through a short cache). ErrEventNotFound
// when the event does not exist.
func (s *Store) EventChallenge(ctx context.Context, eventID string) (string, error) {
	if err := checkIDs(eventID); err != nil {
		return "", err
	}
	keys := s.eventKeys(eventID)
	v, err := s.rdb.HMGet(ctx, keys[kConfig], "total", "challenge").Result()
	if err != nil {
		return "", fmt.Errorf("event challenge: %w", err)
	}
	if v[0] == nil {
		return "", ErrEventNotFound
	}
	c, _ := v[1].(string)
	return challengeOf(map[string]string{"challenge": c}), nil
}

// doorFields are the config field, value pairs of c's door, sales window
// and waitlist settings (newSeed: doorUpdate), which CreateEvent and
// RestoreEvent write with the event's config.
func doorFields(c EventConfig, newSeed bool) []any {
	args := append(append(doorUpdate(c, newSeed), windowUpdate(c)...), waitlistUpdate(c)...)
	if c.OnPhaseChange == PhaseChangeLeave {
		args = append(args, "phase_leave", "1")
	}
	return args
}
