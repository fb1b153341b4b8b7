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

	"github.com/redis/go-redis/v9"
)

// The pre-queue's draw: with EarlyJoin, the event gets a secret random
// seed (32 bytes, kept as hex in the config's draw_seed) and publishes its
// commitment draw_commit = hex(SHA-256(seed bytes)) from creation. A join
// in [SalesStart - EarlyJoin, SalesStart) waits with a key derived from
// the seed and the user id (lua/lib/draw.lua), so at the start the pre-queue is
// already in the order of a uniform random permutation, with no O(n) step
// anywhere; nobody can compute it before the seed is revealed (GetEvent
// shows draw_seed from SalesStart on). DrawOrder recomputes the order from
// the revealed seed and the list of pre-queued users.

// drawSeedArgs are a new secret draw seed and its commitment, as
// update_event.lua's field, value pairs.
func drawSeedArgs() []any {
	seed := make([]byte, 32)
	_, _ = rand.Read(seed) // never fails (crypto/rand)
	sum := sha256.Sum256(seed)
	return []any{"draw_seed", hex.EncodeToString(seed), "draw_commit", hex.EncodeToString(sum[:])}
}

// DrawKey is a pre-queued user's place in the draw: the first 52 bits of
// SHA-1(seedHex + ":" + user), smaller first (lua/lib/draw.lua stores it as the
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
	if _, err := s.run(ctx, scriptUpdateEvent, eventID, "drawn", 1); err != nil {
		return fmt.Errorf("mark drawn: %w", err)
	}
	return nil
}
