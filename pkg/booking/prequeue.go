package booking

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// The pre-queue's draw (docs/fairness.md "The draw"): with EarlyJoin, the
// event gets a secret random seed (32 bytes, kept as hex in the config's
// draw_seed) and publishes its commitment draw_commit = hex(SHA-256(seed
// bytes)) from creation. A join in [SalesStart - EarlyJoin, SalesStart)
// waits with a provisional negative score (lua/lib/draw.lua): ahead of
// every later joiner, in an order nobody outside Redis can see. The order
// that counts is fixed only when the pre-queue is closed: CloseDraw, when
// the sale has started, digests the closed list of the pre-queued users'
// salted hashes and ranks them by fairness.DrawKey(seed, digest, hash), so
// a rank depends on every member of the list as well as on the seed, and
// nobody, not even a reader of Redis who knows the seed, can compute a
// rank while the list is open.

// drawSeedArgs are a new secret draw seed and its commitment, as
// update_event.lua's field, value pairs.
func drawSeedArgs() []any {
	seed := make([]byte, 32)
	_, _ = rand.Read(seed) // never fails (crypto/rand)
	sum := sha256.Sum256(seed)
	return []any{"draw_seed", hex.EncodeToString(seed), "draw_commit", hex.EncodeToString(sum[:])}
}

// DrawOrder is the order in which the pre-queued users are admitted,
// recomputed from the revealed seed (hex), the event's fairness salt
// (FairSalt) and the pre-queue's members (in any order): their salted
// hashes ranked by fairness.DrawOrder over the list's digest. It checks
// the seed against the commitment published before the sale.
func DrawOrder(seedHex, commitHex, salt string, users []string) ([]string, error) {
	seed, err := hex.DecodeString(seedHex)
	if err != nil {
		return nil, fmt.Errorf("draw seed: %w", err)
	}
	sum := sha256.Sum256(seed)
	if hex.EncodeToString(sum[:]) != commitHex {
		return nil, fmt.Errorf("draw seed does not match the commitment %s", commitHex)
	}
	byHash := make(map[string]string, len(users))
	hashes := make([]string, len(users))
	for i, u := range users {
		hashes[i] = fairness.UserHash(salt, u)
		byHash[hashes[i]] = u
	}
	order := fairness.DrawOrder(seedHex, fairness.ListDigest(hashes), hashes)
	out := make([]string, len(order))
	for i, h := range order {
		out[i] = byHash[h]
	}
	return out, nil
}

// Draw is the pre-queue's draw once closed: its inputs and the list.
type Draw struct {
	Seed, Commit string // hex
	Count        int64
	Digest       string // fairness.ListDigest of the closed list
	Beacon       fairness.Beacon
}

// ErrDrawBusy: another process is closing the draw; promotion keeps
// answering draw_pending until it has, so the caller tries again later.
var ErrDrawBusy = errors.New("the draw is being closed by another process")

// ErrBeaconPending: the draw is committed to a beacon round whose value
// the operator has not supplied (SetBeaconValue); promotion keeps
// answering draw_pending, as for ErrDrawBusy, until it is.
var ErrBeaconPending = errors.New("the draw waits for its beacon round's value")

// drawLockTTL bounds how long a process that died while closing a draw
// blocks the others.
const drawLockTTL = time.Minute

// CloseDraw closes the pre-queue, once the sale has started (promotion
// answers draw_pending until MarkDrawn): it reads the pre-queued users
// (the waiting users with negative scores, enqueue.lua) in pages of
// PageSize, so no single Redis call is O(n); digests their salted hashes;
// gives each its rank's score (fairness.DrawKey - 2^53, ZADD XX, so a user
// who cancelled meanwhile is not put back); and keeps the list in draw
// order (key drawlist, read by DrawList) with the digest and count in the
// config (draw_digest, draw_count). One process closes a draw at a time
// (ErrDrawBusy); a close that was cut short is done again from the start
// with the same result, and once the digest is kept it is reused. With a
// beacon round committed (SetBeaconRound), ranks use the beacon's value
// too (fairness.DrawInput), and the draw waits for it: ErrBeaconPending
// until SetBeaconValue. ErrEventNotFound when the event has no draw seed.
func (s *Store) CloseDraw(ctx context.Context, eventID string) (Draw, error) {
	if err := checkIDs(eventID); err != nil {
		return Draw{}, err
	}
	keys := s.eventKeys(eventID)
	cfg, err := s.rdb.HMGet(ctx, keys[kConfig], append([]string{"draw_seed", "draw_commit", "draw_digest", "draw_count"},
		beaconFields("")...)...).Result()
	if err != nil {
		return Draw{}, fmt.Errorf("close draw: %w", err)
	}
	seed, _ := cfg[0].(string)
	commit, _ := cfg[1].(string)
	if seed == "" {
		return Draw{}, ErrEventNotFound
	}
	d := Draw{Seed: seed, Commit: commit, Beacon: beaconOf(cfg[4:])}
	if d.Beacon.Round > 0 && d.Beacon.Value == "" {
		return Draw{}, ErrBeaconPending
	}
	input := func() string { return fairness.DrawInput(d.Digest, d.Beacon.Value) }
	if digest, _ := cfg[2].(string); digest != "" {
		d.Digest = digest
		d.Count, _ = strconv.ParseInt(fmt.Sprint(cfg[3]), 10, 64)
		return d, nil
	}
	lock := s.drawKey(eventID, "drawlock")
	ok, err := s.rdb.SetNX(ctx, lock, "1", drawLockTTL).Result()
	if err != nil {
		return Draw{}, fmt.Errorf("close draw: %w", err)
	}
	if !ok {
		return Draw{}, ErrDrawBusy
	}
	defer s.rdb.Del(context.WithoutCancel(ctx), lock)
	salt, err := s.FairSalt(ctx, eventID)
	if err != nil {
		return Draw{}, err
	}
	byHash, hashes, err := hashedList(salt, func(off int64) ([]string, error) {
		return s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: keys[kWaiting], ByScore: true,
			Start: "-inf", Stop: "(0", Offset: off, Count: fairness.PageSize}).Result()
	})
	if err != nil {
		return Draw{}, fmt.Errorf("close draw: %w", err)
	}
	d.Count = int64(len(hashes))
	d.Digest = fairness.ListDigest(hashes)
	order := fairness.DrawOrder(seed, input(), hashes)
	list := s.drawKey(eventID, drawListName(""))
	if err := s.rdb.Del(ctx, list).Err(); err != nil {
		return Draw{}, fmt.Errorf("close draw: %w", err)
	}
	for i := 0; i < len(order); i += fairness.PageSize {
		page := order[i:min(i+fairness.PageSize, len(order))]
		zs := make([]redis.Z, len(page))
		vals := make([]any, len(page))
		for j, h := range page {
			zs[j] = redis.Z{Score: float64(int64(fairness.DrawKey(seed, input(), h)) - 1<<53), Member: byHash[h]}
			vals[j] = h
		}
		if err := s.rdb.ZAddXX(ctx, keys[kWaiting], zs...).Err(); err != nil {
			return Draw{}, fmt.Errorf("close draw: %w", err)
		}
		if err := s.rdb.RPush(ctx, list, vals...).Err(); err != nil {
			return Draw{}, fmt.Errorf("close draw: %w", err)
		}
	}
	if err := s.rdb.HSet(ctx, keys[kConfig], "draw_count", d.Count, "draw_digest", d.Digest).Err(); err != nil {
		return Draw{}, fmt.Errorf("close draw: %w", err)
	}
	return d, nil
}

// DrawList returns the closed pre-queue's user hashes in draw order,
// count of them from index start (0-based): the first phase's (phase
// "") or a later phase's (ClosePhaseDraw).
func (s *Store) DrawList(ctx context.Context, eventID, phase string, start, count int64) ([]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	out, err := s.rdb.LRange(ctx, s.drawKey(eventID, drawListName(phase)), start, start+count-1).Result()
	if err != nil {
		return nil, fmt.Errorf("draw list: %w", err)
	}
	return out, nil
}

// drawKey is one of the event's keys that only Go reads and writes with
// plain commands (never a script): the draw's list and lock.
func (s *Store) drawKey(eventID, name string) string {
	c := s.eventKeys(eventID)[kConfig]
	return c[:len(c)-len("config")] + name
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

// ClosedDraw returns the closed draw's digest and count (config
// draw_digest, draw_count: CloseDraw), empty and 0 while it is not closed.
func (s *Store) ClosedDraw(ctx context.Context, eventID string) (digest string, count int64, err error) {
	if err := checkIDs(eventID); err != nil {
		return "", 0, err
	}
	v, err := s.rdb.HMGet(ctx, s.eventKeys(eventID)[kConfig], "draw_digest", "draw_count").Result()
	if err != nil {
		return "", 0, fmt.Errorf("closed draw: %w", err)
	}
	digest, _ = v[0].(string)
	if c, ok := v[1].(string); ok {
		count, _ = strconv.ParseInt(c, 10, 64)
	}
	return digest, count, nil
}

// DrawInputs returns what the booking state says about the event's draw
// (fairness.BuildDraw): the commitment, the seed once revealed (GetEvent),
// the pre-queue's count and, once closed, its digest and count. phase ""
// is the first phase's pre-queue (with the ids of the later phases that
// have one), else that later phase's (ErrNoPhaseDraw when it has none).
func (s *Store) DrawInputs(ctx context.Context, eventID, phase string) (fairness.DrawInputs, error) {
	if phase != "" {
		return s.phaseDrawInputs(ctx, eventID, phase)
	}
	e, err := s.GetEvent(ctx, eventID)
	if err != nil {
		return fairness.DrawInputs{}, err
	}
	in := fairness.DrawInputs{Commit: e.DrawCommit, Seed: e.DrawSeed, Prequeued: e.Prequeued, SalesStart: e.SalesStart}
	if in.Phases, err = s.PhaseDraws(ctx, eventID); err != nil {
		return in, err
	}
	if e.DrawCommit == "" {
		return in, nil
	}
	if in.Beacon, err = s.Beacon(ctx, eventID, ""); err != nil {
		return in, err
	}
	in.Digest, in.Count, err = s.ClosedDraw(ctx, eventID)
	return in, err
}

// A later phase's pre-queue (docs/booking-engine.md "A later phase's
// pre-queue"; lua/lib/draw.lua): its joins wait outside the queue (key
// pq) until the phase's start closes the list (pqdraw) and reserves the
// sequence numbers after the counter for it; ClosePhaseDraw ranks the
// closed list as CloseDraw does the first phase's, with the phase's own
// seed (config pq_seed:<id>, committed by pq_commit:<id> when the
// schedule was saved), and places the users into the queue at base +
// rank: after everyone waiting before the start, before every later
// joiner. Promotion answers draw_pending until MarkPhaseDrawn.

var scriptPlaceDraw = newScript("place_draw")

// ErrNoPhaseDraw: the event has no later phase of that id with a
// pre-queue.
var ErrNoPhaseDraw = errors.New("no phase of that id has a pre-queue")

// PhaseDraw is a later phase's draw: the phase's id, the draw (its seed,
// commitment, closed list's count and digest, and the beacon it is
// committed to, if any) and Base, the sequence number before its first
// rank.
type PhaseDraw struct {
	Phase string
	Draw
	Base int64
}

// drawListName is the key (drawKey) of a draw's list in draw order.
func drawListName(phase string) string {
	if phase == "" {
		return "drawlist"
	}
	return "drawlist:" + phase
}

// ClosePhaseDraw closes and places the pending draw of a later phase's
// pre-queue, closing the pre-queue first if its phase started and no
// call did yet; false (and no error) when none is pending. It reads the
// closed list in pages of PageSize, digests the users' salted hashes,
// ranks them (fairness.DrawOrder with the phase's seed), keeps the list
// in draw order (drawlist:<id>) with the digest and count in the config
// (pq_digest:<id>, pq_count:<id>), and places the users still waiting
// for it into the queue, PageSize per call (place_draw.lua, which skips
// the ones who cancelled). One process at a time (ErrDrawBusy); a draw
// cut short is done again from the start with the same result. A draw
// committed to a beacon round waits for its value (ErrBeaconPending, the
// list closed meanwhile), as CloseDraw's does.
func (s *Store) ClosePhaseDraw(ctx context.Context, eventID string) (PhaseDraw, bool, error) {
	if err := checkIDs(eventID); err != nil {
		return PhaseDraw{}, false, err
	}
	r, err := s.run(ctx, scriptPlaceDraw, eventID, "close")
	if err != nil {
		return PhaseDraw{}, false, fmt.Errorf("close phase draw: %w", err)
	}
	var d PhaseDraw
	var start int64
	r.scan(&d.Phase, &d.Base, &d.Count, &start)
	if d.Phase == "" {
		return d, false, nil
	}
	keys := s.eventKeys(eventID)
	seedField, commitField := drawFields(d.Phase)
	cfg, err := s.rdb.HMGet(ctx, keys[kConfig], append([]string{seedField, commitField}, beaconFields(d.Phase)...)...).Result()
	if err != nil {
		return d, true, fmt.Errorf("close phase draw: %w", err)
	}
	d.Seed, _ = cfg[0].(string)
	d.Commit, _ = cfg[1].(string)
	if d.Beacon = beaconOf(cfg[2:]); d.Beacon.Round > 0 && d.Beacon.Value == "" {
		return d, true, ErrBeaconPending
	}
	lock := s.drawKey(eventID, "drawlock")
	ok, err := s.rdb.SetNX(ctx, lock, "1", drawLockTTL).Result()
	if err != nil {
		return d, true, fmt.Errorf("close phase draw: %w", err)
	}
	if !ok {
		return d, true, ErrDrawBusy
	}
	defer s.rdb.Del(context.WithoutCancel(ctx), lock)
	salt, err := s.FairSalt(ctx, eventID)
	if err != nil {
		return d, true, err
	}
	byHash, hashes, err := hashedList(salt, func(off int64) ([]string, error) {
		return s.rdb.ZRange(ctx, keys[kPqdraw], off, off+fairness.PageSize-1).Result()
	})
	if err != nil {
		return d, true, fmt.Errorf("close phase draw: %w", err)
	}
	if int64(len(hashes)) != d.Count {
		return d, true, fmt.Errorf("close phase draw: the closed list of %s has %d users, its close counted %d", d.Phase, len(hashes), d.Count)
	}
	d.Digest = fairness.ListDigest(hashes)
	order := fairness.DrawOrder(d.Seed, fairness.DrawInput(d.Digest, d.Beacon.Value), hashes)
	list := s.drawKey(eventID, drawListName(d.Phase))
	if err := s.rdb.Del(ctx, list).Err(); err != nil {
		return d, true, fmt.Errorf("close phase draw: %w", err)
	}
	for i := 0; i < len(order); i += fairness.PageSize {
		page := order[i:min(i+fairness.PageSize, len(order))]
		args := make([]any, 0, 3+len(page))
		args = append(args, "place", d.Phase, i+1)
		vals := make([]any, len(page))
		for j, h := range page {
			args = append(args, byHash[h])
			vals[j] = h
		}
		if err := s.rdb.RPush(ctx, list, vals...).Err(); err != nil {
			return d, true, fmt.Errorf("close phase draw: %w", err)
		}
		if _, err := s.run(ctx, scriptPlaceDraw, eventID, args...); err != nil {
			return d, true, fmt.Errorf("close phase draw: %w", err)
		}
	}
	if err := s.rdb.HSet(ctx, keys[kConfig], "pq_count:"+d.Phase, d.Count, "pq_digest:"+d.Phase, d.Digest).Err(); err != nil {
		return d, true, fmt.Errorf("close phase draw: %w", err)
	}
	return d, true, nil
}

// MarkPhaseDrawn lets promotion admit a later phase's drawn pre-queue
// (after its draw was published): ErrInvalidArgument when phase's draw
// is not the one pending.
func (s *Store) MarkPhaseDrawn(ctx context.Context, eventID, phase string) error {
	if err := checkIDs(eventID); err != nil {
		return err
	}
	if _, err := s.run(ctx, scriptPlaceDraw, eventID, "done", phase); err != nil {
		return fmt.Errorf("mark phase drawn: %w", err)
	}
	return nil
}

// PhaseDraws returns the ids of the event's later phases with a
// pre-queue (a committed seed), sorted.
func (s *Store) PhaseDraws(ctx context.Context, eventID string) ([]string, error) {
	commits, err := s.PhaseCommits(ctx, eventID)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(commits))
	for id := range commits {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// PhaseCommits returns the commitments (hex SHA-256 of the seed) of the
// draws of the event's later phases with a pre-queue, by phase id.
func (s *Store) PhaseCommits(ctx context.Context, eventID string) (map[string]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var cursor uint64
	for {
		fields, next, err := s.rdb.HScan(ctx, s.eventKeys(eventID)[kConfig], cursor, "pq_commit:*", 100).Result()
		if err != nil {
			return nil, fmt.Errorf("phase draws: %w", err)
		}
		for i := 0; i+1 < len(fields); i += 2 {
			out[strings.TrimPrefix(fields[i], "pq_commit:")] = fields[i+1]
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	return out, nil
}

// phaseDrawInputs is DrawInputs of a later phase: its commitment, its
// seed and closed list's count once the phase started, and its digest
// once drawn; Prequeued counts the open list.
func (s *Store) phaseDrawInputs(ctx context.Context, eventID, phase string) (fairness.DrawInputs, error) {
	if err := checkIDs(eventID); err != nil {
		return fairness.DrawInputs{}, err
	}
	keys := s.eventKeys(eventID)
	v, err := s.rdb.HMGet(ctx, keys[kConfig], "total", "pq_commit:"+phase, "pq_seed:"+phase, "pq_closed:"+phase,
		"pq_digest:"+phase, "pq_count:"+phase, "pq").Result()
	if err != nil {
		return fairness.DrawInputs{}, fmt.Errorf("phase draw: %w", err)
	}
	str := func(i int) string { x, _ := v[i].(string); return x }
	if str(0) == "" {
		return fairness.DrawInputs{}, ErrEventNotFound
	}
	in := fairness.DrawInputs{Phase: phase, Commit: str(1)}
	if in.Commit == "" {
		return in, ErrNoPhaseDraw
	}
	if in.Beacon, err = s.Beacon(ctx, eventID, phase); err != nil {
		return in, err
	}
	if closed := str(3); closed != "" {
		// '<base>|<n>|<start_ms>' (draw.lua pq_close): the seed is revealed
		in.Seed = str(2)
		parts := strings.Split(closed, "|")
		if len(parts) == 3 {
			in.Base, _ = strconv.ParseInt(parts[0], 10, 64)
			in.Prequeued, _ = strconv.ParseInt(parts[1], 10, 64)
			if ms, err := strconv.ParseInt(parts[2], 10, 64); err == nil {
				in.SalesStart = time.UnixMilli(ms).UTC()
			}
		}
		in.Digest = str(4)
		in.Count, _ = strconv.ParseInt(str(5), 10, 64)
		return in, nil
	}
	// the open pre-queue: '<phase>|<open_ms>|<start_ms>|<audience>' (draw.lua)
	if open := strings.Split(str(6), "|"); len(open) == 4 && open[0] == phase {
		if in.Prequeued, err = s.rdb.ZCard(ctx, keys[kPq]).Result(); err != nil {
			return in, fmt.Errorf("phase draw: %w", err)
		}
		if ms, err := strconv.ParseInt(open[2], 10, 64); err == nil {
			in.SalesStart = time.UnixMilli(ms).UTC()
		}
	}
	return in, nil
}

// hashedList reads a closed pre-queue a page (fairness.PageSize users)
// at a time, page(offset) answering one, and returns each user's salted
// hash (fairness.UserHash) in the order read and the user of each hash.
func hashedList(salt string, page func(off int64) ([]string, error)) (map[string]string, []string, error) {
	byHash := map[string]string{}
	var hashes []string
	for off := int64(0); ; off += fairness.PageSize {
		users, err := page(off)
		if err != nil {
			return nil, nil, err
		}
		for _, u := range users {
			h := fairness.UserHash(salt, u)
			byHash[h] = u
			hashes = append(hashes, h)
		}
		if len(users) < fairness.PageSize {
			return byHash, hashes, nil
		}
	}
}

// DrawSeed is one pre-queue draw's secret seed and its commitment (hex
// SHA-256 of the seed bytes): Phase "" is the event's own pre-queue
// (config draw_seed, draw_commit), a phase id a later phase's (pq_seed:<id>,
// pq_commit:<id>).
type DrawSeed struct {
	Phase  string
	Seed   string
	Commit string
}

// drawFields are the config fields of a draw's seed and commitment:
// phase "" the event's own pre-queue's, else the later phase's.
func drawFields(phase string) (seed, commit string) {
	if phase == "" {
		return "draw_seed", "draw_commit"
	}
	return "pq_seed:" + phase, "pq_commit:" + phase
}

// DrawSeeds returns the seeds and commitments of the event's draws as
// Redis keeps them, the event's own first, then by phase id (none: no
// pre-queue ever). ErrEventNotFound.
func (s *Store) DrawSeeds(ctx context.Context, eventID string) ([]DrawSeed, error) {
	commits, err := s.PhaseCommits(ctx, eventID)
	if err != nil {
		return nil, err
	}
	phases := slices.Sorted(maps.Keys(commits))
	fields := []string{"total", "draw_seed", "draw_commit"}
	for _, p := range phases {
		seed, _ := drawFields(p)
		fields = append(fields, seed)
	}
	v, err := s.rdb.HMGet(ctx, s.eventKeys(eventID)[kConfig], fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("draw seeds: %w", err)
	}
	str := func(i int) string { x, _ := v[i].(string); return x }
	if str(0) == "" {
		return nil, ErrEventNotFound
	}
	var out []DrawSeed
	if str(1) != "" {
		out = append(out, DrawSeed{Seed: str(1), Commit: str(2)})
	}
	for i, p := range phases {
		out = append(out, DrawSeed{Phase: p, Seed: str(3 + i), Commit: commits[p]})
	}
	return out, nil
}

// CheckDrawSeed reports whether d's seed is 32 bytes of hex whose SHA-256
// is its commitment.
func CheckDrawSeed(d DrawSeed) error {
	seed, err := hex.DecodeString(d.Seed)
	if err != nil || len(seed) != 32 {
		return fmt.Errorf("%w: draw seed of %q is not 32 bytes of hex", ErrInvalidArgument, d.Phase)
	}
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != d.Commit {
		return fmt.Errorf("%w: draw seed of %q does not match its commitment", ErrInvalidArgument, d.Phase)
	}
	if d.Phase != "" && checkIDs(d.Phase) != nil {
		return fmt.Errorf("%w: phase id %q", ErrInvalidArgument, d.Phase)
	}
	return nil
}
