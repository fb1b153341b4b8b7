package booking

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The front door's event settings: the rate cap
// (AdmitPerMinute) and the pre-queue (EarlyJoin). They are config fields
// that create_event.lua does not take: CreateEvent sets them with
// update_event.lua right after the create, and a retried create whose
// event lacks them sets them then.
//
// The pre-queue's draw: with EarlyJoin, the event gets a secret random
// seed (32 bytes, kept as hex in the config's draw_seed) and publishes its
// commitment draw_commit = hex(SHA-256(seed bytes)) from creation. A join
// in [SalesStart - EarlyJoin, SalesStart) waits with a key derived from
// the seed and the user id (enqueue.lua), so at the start the pre-queue is
// already in the order of a uniform random permutation, with no O(n) step
// anywhere; nobody can compute it before the seed is revealed (GetEvent
// shows draw_seed from SalesStart on). DrawOrder recomputes the order from
// the revealed seed and the list of pre-queued users.

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
	return args, nil
}

// drawSeedArgs are a new secret draw seed and its commitment, as
// update_event.lua's field, value pairs.
func drawSeedArgs() []any {
	seed := make([]byte, 32)
	_, _ = rand.Read(seed) // never fails (crypto/rand)
	sum := sha256.Sum256(seed)
	return []any{"draw_seed", hex.EncodeToString(seed), "draw_commit", hex.EncodeToString(sum[:])}
}

// doorUpdate is the update that gives a created event c's door settings
// (nil when c has none).
func doorUpdate(c EventConfig) []any {
	var args []any
	if c.AdmitPerMinute != 0 {
		args = append(args, "admit_per_minute", c.AdmitPerMinute)
	}
	if c.EarlyJoin > 0 {
		args = append(args, "early_join_ms", c.EarlyJoin.Milliseconds())
		args = append(args, drawSeedArgs()...)
	}
	if c.Challenge == ChallengePoW {
		args = append(args, "challenge", c.Challenge)
	}
	return args
}

// sameDoor reports whether e has c's door settings.
func sameDoor(e Event, c EventConfig) bool {
	return e.AdmitPerMinute == c.AdmitPerMinute && e.EarlyJoin == c.EarlyJoin && e.Challenge == c.Challenge
}

// noDoor reports whether e has no door setting (created by a create whose
// door update did not run).
func noDoor(e Event) bool {
	return e.AdmitPerMinute == 0 && e.EarlyJoin == 0 && e.Challenge == ChallengeNone
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

// setDoor applies c's door settings to the event.
func (s *Store) setDoor(ctx context.Context, c EventConfig) error {
	args := doorUpdate(c)
	if len(args) == 0 {
		return nil
	}
	args = append(args, "now_ms", s.nowMS())
	if _, err := s.run(ctx, scriptUpdateEvent, c.ID, args...); err != nil {
		return fmt.Errorf("create event: door settings: %w", err)
	}
	return nil
}

// DrawKey is a pre-queued user's place in the draw: the first 52 bits of
// SHA-1(seedHex + ":" + user), smaller first (enqueue.lua stores it as the
// score key - 2^53).
func DrawKey(seedHex, user string) uint64 {
	sum := sha1.Sum([]byte(seedHex + ":" + user))
	v, _ := strconv.ParseUint(hex.EncodeToString(sum[:])[:13], 16, 64)
	return v
}

// DrawOrder is the order in which the pre-queued users are admitted,
// recomputed from the revealed seed (hex) and the pre-queue's members (in
// any order): by DrawKey, ties by user id. It checks the seed against the
// commitment published before the sale.
func DrawOrder(seedHex, commitHex string, users []string) ([]string, error) {
	seed, err := hex.DecodeString(seedHex)
	if err != nil {
		return nil, fmt.Errorf("draw seed: %w", err)
	}
	sum := sha256.Sum256(seed)
	if hex.EncodeToString(sum[:]) != commitHex {
		return nil, fmt.Errorf("draw seed does not match the commitment %s", commitHex)
	}
	out := slices.Clone(users)
	slices.SortFunc(out, func(a, b string) int {
		ka, kb := DrawKey(seedHex, a), DrawKey(seedHex, b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return bytes.Compare([]byte(a), []byte(b))
	})
	return out, nil
}

// Draw is the pre-queue's draw as read at the sales start.
type Draw struct {
	Seed, Commit string // hex
	Count        int64
	Digest       string // hex SHA-256 of the order, each user id + "\n"
}

// ReadDraw reads the pre-queue in its order (the waiting users with
// negative scores, enqueue.lua) in pages of 1,000, so no single Redis call
// is O(n), and digests it. Promotion waits for MarkDrawn (promote.lua
// 'draw_pending'), so the pre-queue does not move while it is read, but
// for users who cancel meanwhile. ErrEventNotFound when the event is gone.
func (s *Store) ReadDraw(ctx context.Context, eventID string) (Draw, error) {
	if err := checkIDs(eventID); err != nil {
		return Draw{}, err
	}
	keys := s.eventKeys(eventID)
	cfg, err := s.rdb.HMGet(ctx, keys[kConfig], "draw_seed", "draw_commit").Result()
	if err != nil {
		return Draw{}, fmt.Errorf("read draw: %w", err)
	}
	seed, _ := cfg[0].(string)
	commit, _ := cfg[1].(string)
	if seed == "" {
		return Draw{}, ErrEventNotFound
	}
	d := Draw{Seed: seed, Commit: commit}
	h := sha256.New()
	const page = 1000
	for off := int64(0); ; off += page {
		users, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: keys[kWaiting], ByScore: true,
			Start: "-inf", Stop: "(0", Offset: off, Count: page}).Result()
		if err != nil {
			return Draw{}, fmt.Errorf("read draw: %w", err)
		}
		for _, u := range users {
			h.Write([]byte(u + "\n"))
		}
		d.Count += int64(len(users))
		if len(users) < page {
			break
		}
	}
	d.Digest = hex.EncodeToString(h.Sum(nil))
	return d, nil
}

// MarkDrawn lets promotion admit the pre-queue (after its draw was
// published).
func (s *Store) MarkDrawn(ctx context.Context, eventID string) error {
	if err := checkIDs(eventID); err != nil {
		return err
	}
	if _, err := s.run(ctx, scriptUpdateEvent, eventID, "drawn", 1, "now_ms", s.nowMS()); err != nil {
		return fmt.Errorf("mark drawn: %w", err)
	}
	return nil
}
