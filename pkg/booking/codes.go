package booking

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/ids"
)

// Access codes (docs/booking-engine.md "Access codes"): an operator
// generates them for an event, or for one of its phases; a fan joins
// with one and the join redeems it in its own script (enqueue.lua,
// lua/lib/codes.lua), so a code's uses are counted exactly however many
// fans race for it. Redis holds a code's digest (CodeDigest), never the
// code: the codes hash of an event is loaded from the ledger by LoadCodes.

// The refusals of a join with a code. A code unknown to the event is
// ErrInvalidCode whatever the reason, so an answer never says whether a
// guess exists.
var (
	ErrInvalidCode    = errors.New("invalid access code")
	ErrCodeWrongPhase = errors.New("the access code is for another phase of this event")
	ErrCodeExpired    = errors.New("the access code has expired")
	ErrCodeTaken      = errors.New("the access code is bound to another user")
	ErrCodeUsedUp     = errors.New("the access code has no uses left")
	ErrCodeRequired   = errors.New("this sale needs an access code")
	ErrNotSelected    = errors.New("this sale is for the fans its registration selected")
	ErrPhaseClosed    = errors.New("no phase of this sale is open now: the next one has not started")
)

// MaxCodeUses bounds a code's uses; MaxCodeLen a code as typed.
const (
	MaxCodeUses = 1_000_000
	MaxCodeLen  = 64
)

var scriptLoadCodes = newScript("load_codes")

// codeAlphabet is Crockford's base 32: no I, L, O or U, so a code read
// aloud or typed from paper has no look-alikes.
const codeAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// NewCode returns a new random code: 16 characters of codeAlphabet (80
// bits) in groups of four joined by '-' ("K7QM-2XRT-9HBD-4PZA").
func NewCode() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	out := make([]byte, 0, 19)
	for i, v := range b {
		if i > 0 && i%4 == 0 {
			out = append(out, '-')
		}
		out = append(out, codeAlphabet[v&31])
	}
	return string(out)
}

// NormaliseCode is a code as typed made canonical: upper case, without
// the dashes and spaces; false when it cannot be a code (empty, too long,
// or a character outside letters and digits), which a join answers as
// ErrInvalidCode like any unknown code.
func NormaliseCode(code string) (string, bool) {
	if code == "" || len(code) > MaxCodeLen {
		return "", false
	}
	var b strings.Builder
	for _, r := range code {
		switch {
		case r == '-' || r == ' ':
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), b.Len() > 0
}

// CodeDigest is what the ledger and Redis keep of a code: HMAC-SHA256
// with the server's key over the normalised code, in hex (128 bits). A
// copy of either store without the key does not give the codes back.
func CodeDigest(key []byte, normalised string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(normalised))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// CodeRecord is one access code as Redis holds it (lua/lib/codes.lua):
// its number, digest, the phase it opens ("" every phase), its uses and
// how many were made, its holder's seats per order (0: the event's
// max_seats), its expiry (zero: none) and the user it is bound to.
type CodeRecord struct {
	ID      int64
	Digest  string
	Phase   string
	Uses    int
	Used    int
	Seats   int
	Expires time.Time
	User    string
}

func (c CodeRecord) check() error {
	if len(c.Digest) != 32 || strings.Trim(c.Digest, "0123456789abcdef") != "" {
		return fmt.Errorf("%w: code digest %q", ErrInvalidArgument, c.Digest)
	}
	if c.Uses < 1 || c.Uses > MaxCodeUses || c.Used < 0 || c.Used > c.Uses || c.Seats < 0 || c.Seats > MaxSeats {
		return fmt.Errorf("%w: code uses %d, used %d, seats %d", ErrInvalidArgument, c.Uses, c.Used, c.Seats)
	}
	if strings.Contains(c.Phase, "|") || strings.Contains(c.User, "|") {
		return fmt.Errorf("%w: '|' in a code's phase or user", ErrInvalidArgument)
	}
	return nil
}

func (c CodeRecord) value() string {
	return strconv.FormatInt(c.ID, 10) + "|" + c.Phase + "|" + strconv.Itoa(c.Uses) + "|" + strconv.Itoa(c.Used) +
		"|" + strconv.Itoa(c.Seats) + "|" + strconv.FormatInt(unixMilliOrZero(c.Expires), 10) + "|" + c.User
}

func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// LoadCodes writes codes into the event's codes hash, replacing a code
// already there (a rebuild loads each with its uses and user), in calls
// of at most 1,000 codes. ErrEventNotFound, ErrInvalidArgument.
func (s *Store) LoadCodes(ctx context.Context, eventID string, codes []CodeRecord) error {
	if err := checkIDs(eventID); err != nil {
		return err
	}
	for len(codes) > 0 {
		n := min(len(codes), 1000)
		args := make([]any, 0, 4*n)
		for _, c := range codes[:n] {
			if err := c.check(); err != nil {
				return err
			}
			args = append(args, "c:"+c.Digest, c.value())
			if c.User != "" && c.Seats > 0 {
				args = append(args, "u:"+c.User, c.Seats)
			}
		}
		if _, err := s.run(ctx, scriptLoadCodes, eventID, args...); err != nil {
			return fmt.Errorf("load codes: %w", err)
		}
		codes = codes[n:]
	}
	return nil
}

// CodeUse is a redemption: the code's number, which of its uses this
// was (from 1), and the event's phase at the time ("" none).
type CodeUse struct {
	CodeID int64
	Use    int64
	Phase  string
}

// EnqueueCode is Enqueue with an access code's digest (CodeDigest): a
// new join redeems it in the same script, after every other check, so
// a refused join takes no use and a use is taken only by a join that
// places the user (JoinResult.Code). A user already queued or in the room
// gets their entry back and the code is not looked at. Errors: Enqueue's,
// and ErrInvalidCode, ErrCodeWrongPhase, ErrCodeExpired, ErrCodeTaken,
// ErrCodeUsedUp. Joins with codes are batched like others
// (pipeline.go groupCalls), with the joins of the same limits.
func (s *Store) EnqueueCode(ctx context.Context, eventID, userID, digest string, limits ...Limit) (JoinResult, error) {
	if digest == "" {
		return JoinResult{}, ErrInvalidCode
	}
	lkeys, args, err := s.enqueueArgs(eventID, userID, digest, limits)
	if err != nil {
		return JoinResult{}, err
	}
	return s.runJoin(ctx, eventID, userID, lkeys, args)
}

// Audiences of a phase: who may join while it is the event's.
const (
	AudiencePublic     = "public"
	AudienceCode       = "code"
	AudienceRegistered = "registered"
)

var scriptSetPhase = newScript("set_phase")

// PhaseState is the event's current phase ("" none) and audience.
type PhaseState struct {
	Phase    string `json:"phase"`
	Audience string `json:"audience"`
}

// CheckPhase reports whether p is a phase the engine takes: an id (or ""
// for none) and a known audience.
func CheckPhase(p PhaseState) error {
	if p.Phase != "" && !ids.Valid(p.Phase) {
		return fmt.Errorf("%w: phase %q", ErrInvalidArgument, p.Phase)
	}
	if p.Audience != AudiencePublic && p.Audience != AudienceCode && p.Audience != AudienceRegistered {
		return fmt.Errorf("%w: audience must be %q, %q or %q", ErrInvalidArgument, AudiencePublic, AudienceCode, AudienceRegistered)
	}
	return nil
}

// SetPhase makes p the event's current phase: codes of p (and of every
// phase) are redeemed from then on, and with AudienceCode a join needs a
// code. Users waiting or in the room keep their place and hold. It
// returns the phase before and whether anything changed.
// ErrEventNotFound, ErrInvalidArgument.
func (s *Store) SetPhase(ctx context.Context, eventID string, p PhaseState) (PhaseState, bool, error) {
	if err := checkIDs(eventID); err != nil {
		return PhaseState{}, false, err
	}
	if err := CheckPhase(p); err != nil {
		return PhaseState{}, false, err
	}
	r, err := s.run(ctx, scriptSetPhase, eventID, p.Phase, p.Audience)
	if err != nil {
		return PhaseState{}, false, fmt.Errorf("set phase: %w", err)
	}
	var prev PhaseState
	var changed bool
	r.scan(&changed, &prev.Phase, &prev.Audience)
	return prev, changed, nil
}

// MarkSelected records that the registration's draw selected users, and
// no one else: while the audience is AudienceRegistered they may join
// (SetPhase). It marks them in calls of at most 1,000 after it takes
// back any earlier selection of someone else (a draw Redis took whose
// ledger transaction rolled back, drawn again with another count), so
// no one selected now loses the mark on the way. ErrEventNotFound.
func (s *Store) MarkSelected(ctx context.Context, eventID string, users []string) error {
	if err := checkIDs(eventID); err != nil {
		return err
	}
	if err := checkIDs(users...); err != nil {
		return err
	}
	if err := s.unselectOthers(ctx, eventID, users); err != nil {
		return fmt.Errorf("mark selected: %w", err)
	}
	for len(users) > 0 {
		n := min(len(users), 1000)
		args := make([]any, 0, 2*n)
		for _, u := range users[:n] {
			args = append(args, "r:"+u, 1)
		}
		if _, err := s.run(ctx, scriptLoadCodes, eventID, args...); err != nil {
			return fmt.Errorf("mark selected: %w", err)
		}
		users = users[n:]
	}
	return nil
}

// unselectOthers removes the selection marks ('r:<user>' in the codes
// hash, lib/codes.lua) of everyone not in users.
func (s *Store) unselectOthers(ctx context.Context, eventID string, users []string) error {
	keep := make(map[string]bool, len(users))
	for _, u := range users {
		keep[u] = true
	}
	marked, err := s.SelectedUsers(ctx, eventID)
	if err != nil {
		return err
	}
	var drop []string
	for _, u := range marked {
		if !keep[u] {
			drop = append(drop, "r:"+u)
		}
	}
	for len(drop) > 0 {
		n := min(len(drop), 1000)
		if err := s.rdb.HDel(ctx, s.eventKeys(eventID)[kCodes], drop[:n]...).Err(); err != nil {
			return err
		}
		drop = drop[n:]
	}
	return nil
}

// SelectedUsers returns the users Redis has as selected by the
// registration's draw (MarkSelected), sorted, read with HSCAN (an
// operator's call or the reconciliation, not a request path).
func (s *Store) SelectedUsers(ctx context.Context, eventID string) ([]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	key := s.eventKeys(eventID)[kCodes]
	var out []string
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "r:*", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("selected users: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, strings.TrimPrefix(kv[i], "r:"))
		}
		if cursor = next; cursor == 0 {
			slices.Sort(out)
			return slices.Compact(out), nil
		}
	}
}
