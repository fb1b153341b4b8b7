// Package fairness is what makes a sale checkable from the outside
// (docs/fairness.md): the pre-queue's draw, whose order depends on the
// closed list of pre-queued users as well as the committed seed, and the
// admission log, a SHA-256 hash chain over every admission, whose heads
// are signed with the admission-pass key. The functions here are the one
// definition of both, shared by the services that publish them and by
// tools/verify, which recomputes them.
package fairness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PageSize is the number of entries in a full page of the admission log
// and of the draw's list (GET /api/events/{id}/admissions and /draw).
const PageSize = 1000

// UserHash is a user's public name in the draw and the log: the first 16
// bytes, hex, of SHA-256(salt + ":" + user), salt the event's secret
// fairness salt. It names the same user throughout one event and cannot be
// reversed to a user id without the salt, which is never published.
func UserHash(salt, user string) string {
	sum := sha256.Sum256([]byte(salt + ":" + user))
	return hex.EncodeToString(sum[:16])
}

// ListDigest is the digest of the closed pre-queue: hex SHA-256 over its
// user hashes sorted, each followed by "\n". Any change to the list, one
// member more or less, changes it.
func ListDigest(hashes []string) string {
	sorted := slices.Clone(hashes)
	slices.Sort(sorted)
	h := sha256.New()
	for _, u := range sorted {
		h.Write([]byte(u))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DrawKey is a pre-queued user's place in the draw, smaller first: the
// first 52 bits of SHA-256(seed + ":" + digest + ":" + user hash), seed
// the revealed seed (hex) and digest the closed list's ListDigest. 52 bits
// are exact in a Redis score (the waiting entry's score is key - 2^53).
func DrawKey(seed, digest, userHash string) uint64 {
	sum := sha256.Sum256([]byte(seed + ":" + digest + ":" + userHash))
	v, _ := strconv.ParseUint(hex.EncodeToString(sum[:7])[:13], 16, 64)
	return v
}

// DrawInput is what DrawKey and DrawOrder take as the digest: the closed
// list's digest, followed by ":" and the public randomness beacon's value
// when the operator committed the draw to a beacon round (docs/fairness.md
// "The beacon"); the digest alone otherwise.
func DrawInput(digest, beacon string) string {
	if beacon == "" {
		return digest
	}
	return digest + ":" + beacon
}

// ValidBeacon reports whether v is a beacon value as the draw takes it:
// 64 lowercase hex characters (32 bytes, the size of a drand or NIST
// beacon's randomness).
func ValidBeacon(v string) bool {
	if len(v) != 64 {
		return false
	}
	for _, c := range v {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// DrawOrder is the pre-queue's order: its user hashes by DrawKey, ties by
// the hash.
func DrawOrder(seed, digest string, hashes []string) []string {
	type keyed struct {
		k uint64
		u string
	}
	ks := make([]keyed, len(hashes))
	for i, u := range hashes {
		ks[i] = keyed{DrawKey(seed, digest, u), u}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.k != b.k {
			if a.k < b.k {
				return -1
			}
			return 1
		}
		return strings.Compare(a.u, b.u)
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.u
	}
	return out
}

// Reasons of an admission-log entry.
const (
	ReasonPromoted = "promoted" // admitted from the queue by promotion
	ReasonJoined   = "joined"   // admitted at once by the join (nobody waiting)
	ReasonOffered  = "offered"  // offered a returned seat (waitlist offers)
)

// Entry is one admission in an event's log. Index counts from 1; Prev is
// the Hash of entry Index-1 (for entry 1, Genesis(event)); Hash is
// Link(Prev, the entry).
type Entry struct {
	Index    int64  `json:"index"`
	Seq      int64  `json:"seq"`
	UserHash string `json:"user_hash"`
	AtMs     int64  `json:"at_ms"`
	Reason   string `json:"reason"`
	Prev     string `json:"prev"`
	Hash     string `json:"hash"`
}

// Genesis is the Prev of an event's first log entry: hex
// SHA-256("boxoffice admission log:" + event id), so no event's chain can
// be passed off as another's.
func Genesis(eventID string) string {
	sum := sha256.Sum256([]byte("boxoffice admission log:" + eventID))
	return hex.EncodeToString(sum[:])
}

// Line is the entry's canonical text, what its hash covers besides Prev:
// "index|seq|user_hash|at_ms|reason".
func (e Entry) Line() string {
	return strconv.FormatInt(e.Index, 10) + "|" + strconv.FormatInt(e.Seq, 10) + "|" + e.UserHash + "|" +
		strconv.FormatInt(e.AtMs, 10) + "|" + e.Reason
}

// Link is an entry's hash: hex SHA-256(prev + "\n" + line).
func Link(prev, line string) string {
	sum := sha256.Sum256([]byte(prev + "\n" + line))
	return hex.EncodeToString(sum[:])
}

// ParseRaw reads one entry of the Redis list the scripts append to
// (lua/lib/room.lua log_admissions): "seq|at_ms|reason|user".
func ParseRaw(raw string) (seq, atMs int64, reason, user string, err error) {
	parts := strings.SplitN(raw, "|", 4)
	if len(parts) != 4 {
		return 0, 0, "", "", fmt.Errorf("admission log entry %q: want seq|at_ms|reason|user", raw)
	}
	if seq, err = strconv.ParseInt(parts[0], 10, 64); err != nil {
		return 0, 0, "", "", fmt.Errorf("admission log entry %q: seq: %w", raw, err)
	}
	if atMs, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
		return 0, 0, "", "", fmt.Errorf("admission log entry %q: at: %w", raw, err)
	}
	return seq, atMs, parts[2], parts[3], nil
}

// ErrBrokenChain is wrapped by every failure of CheckChain.
var ErrBrokenChain = errors.New("admission log: broken chain")

// CheckChain checks that entries continue a chain whose last hash is prev
// (Genesis for the first page) at index len: consecutive indexes from
// index+1, each Prev the hash before it, each Hash its Link. It returns
// the new last hash.
func CheckChain(prev string, index int64, entries []Entry) (string, error) {
	for _, e := range entries {
		index++
		if e.Index != index {
			return "", fmt.Errorf("%w: entry %d where %d was expected (an entry is missing, repeated or moved)", ErrBrokenChain, e.Index, index)
		}
		if e.Prev != prev {
			return "", fmt.Errorf("%w: entry %d names %s as the previous hash, the chain has %s", ErrBrokenChain, e.Index, short(e.Prev), short(prev))
		}
		if h := Link(prev, e.Line()); e.Hash != h {
			return "", fmt.Errorf("%w: entry %d was changed: its content hashes to %s, it says %s", ErrBrokenChain, e.Index, short(h), short(e.Hash))
		}
		prev = e.Hash
	}
	return prev, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
