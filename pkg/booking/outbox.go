package booking

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// OutboxKind is the fact an outbox entry announces (pkg/admission's
// Announcer gives each kind its side effects).
type OutboxKind string

const (
	// KindJoined: a new join (the booking_request fact).
	KindJoined OutboxKind = "joined"
	// KindPromoted: an admission into the room (ExpireAt is the hold's
	// deadline).
	KindPromoted OutboxKind = "promoted"
	// KindExpired: a hold that ended at its deadline (ExpireAt, zero in
	// older entries).
	KindExpired OutboxKind = "expired"
	// KindCancelled: a cancellation by the user, or by the system for
	// absence (From FromAbandoned).
	KindCancelled OutboxKind = "cancelled"
	// KindRestored: the event was rebuilt from the ledger (RestoreEvent;
	// Sequence is the sequence base, Reason what was rebuilt, no user).
	KindRestored OutboxKind = "restored"
	// KindWaitlisted: a fan joined the waitlist (waitlist_joined; From is
	// the number of seats wanted).
	KindWaitlisted OutboxKind = "waitlisted"
	// KindOffered: an offer to a waitlisted fan, a hold (offer_made;
	// ExpireAt is its deadline, SeatID the seats).
	KindOffered OutboxKind = "offered"
	// KindOfferEnded: an offer answered or run out (From is
	// OfferAccepted, OfferDeclined or OfferExpired; SeatID the seats).
	KindOfferEnded OutboxKind = "offer_ended"
	// KindUnreadable: an entry that is not in the outbox's format (Field
	// and Value as stored): one an earlier version wrote with a number in
	// Lua's exponent form that Outbox could not mend. It announces
	// nothing; the Announcer logs it whole and removes it, so it neither
	// fails every sweep nor goes unnoticed.
	KindUnreadable OutboxKind = "unreadable"
)

// OutboxReadMax bounds the entries one Outbox call returns, so that a
// sweep after a long broker outage (every join of the outage still
// unannounced) works through the backlog in bounded steps instead of
// reading millions of entries at once.
const OutboxReadMax = 10_000

// Outbox returns the event's unannounced entries written at least olderThan
// ago (0: all), at most OutboxReadMax of them, in join-sequence order (a
// joined entry before the promotion of the same sequence). A crashed
// announcer's entries are picked up by the safety net this way; announcing
// twice is harmless. It reads the hash with HSCAN, never all at once.
func (s *Store) Outbox(ctx context.Context, eventID string, olderThan time.Duration) ([]OutboxEntry, error) {
	return s.outbox(ctx, eventID, olderThan, "")
}

// WaitlistOutbox returns the event's unannounced waitlist entries (joins,
// offers and their ends: KindWaitlisted, KindOffered, KindOfferEnded) as
// Outbox does, reading only their fields, so whoever freed seats can
// announce the offers made at once.
func (s *Store) WaitlistOutbox(ctx context.Context, eventID string) ([]OutboxEntry, error) {
	return s.outbox(ctx, eventID, 0, "[woe]:*")
}

// outbox is Outbox of the fields matching match (HSCAN's glob; "": all).
func (s *Store) outbox(ctx context.Context, eventID string, olderThan time.Duration, match string) ([]OutboxEntry, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	key := s.eventKeys(eventID)[kOutbox]
	var cutoff time.Time
	if olderThan > 0 {
		// ages by Redis's clock, the one that wrote the entries' times
		now, err := s.Clock(ctx, eventID)
		if err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
		cutoff = now.Add(-olderThan)
	}
	var out, bad []OutboxEntry
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, match, 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			e, ok := parseOutbox(kv[i], kv[i+1])
			if !ok {
				bad = append(bad, OutboxEntry{Kind: KindUnreadable, Field: kv[i], Value: kv[i+1]})
				continue
			}
			if olderThan > 0 && e.At.After(cutoff) {
				continue
			}
			out = append(out, e)
		}
		cursor = next
		if cursor == 0 || len(out)+len(bad) >= OutboxReadMax {
			break
		}
	}
	if len(bad) > 0 {
		mended, err := s.mendOutbox(ctx, eventID, bad)
		if err != nil {
			return nil, err
		}
		out = append(out, mended...)
	}
	// HSCAN may return a field twice
	seen := make(map[string]bool, len(out))
	uniq := out[:0]
	for _, e := range out {
		if f := e.field(); !seen[f] {
			seen[f] = true
			uniq = append(uniq, e)
		}
	}
	out = uniq
	sort.Slice(out, func(i, j int) bool {
		if out[i].Sequence != out[j].Sequence {
			return out[i].Sequence < out[j].Sequence
		}
		return kindOrder(out[i].Kind) < kindOrder(out[j].Kind)
	})
	if len(out) > OutboxReadMax {
		out = out[:OutboxReadMax]
	}
	return out, nil
}

// kindOrder orders the entries of one join sequence as they happened.
func kindOrder(kind OutboxKind) int {
	switch kind {
	case KindJoined, KindWaitlisted:
		return 0
	case KindPromoted, KindOffered:
		return 1
	}
	return 2
}

// parseOutbox decodes "p:<seq>:<user>" / "x:<seq>:<user>" →
// "seq|deadline_ms|seat|at_ms", "c:<seq>:<user>" → "seq|from|seat|at_ms",
// "j:<seq>" → "seq|user|code|at_ms" (code: "id:use:phase" of the access
// code the join redeemed, "" none) and "r:<seq_base>" →
// "seq_base|reason||at_ms", the waitlist's "w:", "o:" and "e:" (lua/lib/waitlist.lua), each value with an optional fifth part
// "r" or "k" (the side announced already; lua/lib/outbox.lua has the table).
// Fields written before they carried the sequence ("p:<user>") still parse
// (LegacyKey). The sequence, a deadline and the time must be decimal
// integers (an expiry's deadline may be empty): false otherwise.
func parseOutbox(field, val string) (OutboxEntry, bool) {
	kind, rest, ok := strings.Cut(field, ":")
	parts := strings.Split(val, "|")
	if !ok || len(parts) < 4 || len(parts) > 5 {
		return OutboxEntry{}, false
	}
	e := OutboxEntry{SeatID: parts[2]}
	if len(parts) == 5 {
		switch parts[4] {
		case "r":
			e.RabbitDone = true
		case "k":
			e.KafkaDone = true
		default:
			return OutboxEntry{}, false
		}
	}
	user := parts[1]
	switch kind {
	case "j":
		e.SeatID = ""
		if parts[2] != "" {
			var ok bool
			if e.Code, ok = parseCodeUse(parts[2]); !ok {
				return OutboxEntry{}, false
			}
		}
	case "r":
		user, e.Reason = "", parts[1]
	default:
		// "<seq>:<user>": the sequence never holds ':', a user id may
		if seq, u, ok := strings.Cut(rest, ":"); ok && seq == parts[0] {
			user = u
		} else {
			user, e.LegacyKey = rest, true
		}
	}
	e.UserID = user
	var err error
	if e.Sequence, err = strconv.ParseInt(parts[0], 10, 64); err != nil {
		return OutboxEntry{}, false
	}
	at, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return OutboxEntry{}, false
	}
	e.At = ms(at)
	var dl int64
	if kind == "p" || kind == "o" || (kind == "x" && parts[1] != "") {
		if dl, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
			return OutboxEntry{}, false
		}
	}
	switch kind {
	case "p":
		e.Kind, e.ExpireAt = KindPromoted, ms(dl)
	case "x":
		e.Kind, e.ExpireAt = KindExpired, ms(dl) // the deadline that passed (zero in older entries)
	case "c":
		e.Kind, e.From = KindCancelled, parts[1]
	case "j":
		e.Kind = KindJoined
	case "r":
		e.Kind = KindRestored
	case "w":
		e.Kind, e.From = KindWaitlisted, parts[1]
	case "o":
		e.Kind, e.ExpireAt = KindOffered, ms(dl)
	case "e":
		e.Kind, e.From = KindOfferEnded, parts[1]
	default:
		return OutboxEntry{}, false
	}
	return e, true
}

// parseCodeUse decodes a joined entry's "id:use:phase" (the phase may
// hold ':', it is last).
func parseCodeUse(v string) (CodeUse, bool) {
	id, rest, ok1 := strings.Cut(v, ":")
	use, phase, ok2 := strings.Cut(rest, ":")
	c := CodeUse{Phase: phase}
	var err1, err2 error
	c.CodeID, err1 = strconv.ParseInt(id, 10, 64)
	c.Use, err2 = strconv.ParseInt(use, 10, 64)
	return c, ok1 && ok2 && err1 == nil && err2 == nil && c.CodeID > 0 && c.Use > 0
}

// outboxField is the outbox field of a fact of user's join seq.
func outboxField(kind byte, seq int64, user string) string {
	var buf [64]byte
	b := append(buf[:0], kind, ':')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, ':')
	return string(append(b, user...))
}

// seqField is the outbox field of a fact named by a sequence alone.
func seqField(kind byte, seq int64) string {
	var buf [24]byte
	return string(strconv.AppendInt(append(buf[:0], kind, ':'), seq, 10))
}

// field and value are an entry as stored, each made in one buffer (the
// relay acknowledges every join's entry: TestOutboxFieldsAndValues).
func (e OutboxEntry) field() string {
	var k byte
	switch e.Kind {
	case KindUnreadable:
		return e.Field
	case KindJoined:
		return seqField('j', e.Sequence)
	case KindRestored:
		return seqField('r', e.Sequence)
	case KindExpired:
		k = 'x'
	case KindCancelled:
		k = 'c'
	case KindWaitlisted:
		k = 'w'
	case KindOffered:
		k = 'o'
	case KindOfferEnded:
		k = 'e'
	default:
		k = 'p'
	}
	if e.LegacyKey {
		return string(k) + ":" + e.UserID
	}
	return outboxField(k, e.Sequence, e.UserID)
}

func (e OutboxEntry) value() string {
	if e.Kind == KindUnreadable {
		return e.Value
	}
	var buf [128]byte
	b := strconv.AppendInt(buf[:0], e.Sequence, 10)
	b = append(b, '|')
	switch e.Kind {
	case KindPromoted, KindOffered:
		b = strconv.AppendInt(b, e.ExpireAt.UnixMilli(), 10)
	case KindWaitlisted, KindOfferEnded, KindCancelled:
		b = append(b, e.From...)
	case KindExpired:
		if !e.ExpireAt.IsZero() {
			b = strconv.AppendInt(b, e.ExpireAt.UnixMilli(), 10)
		}
	case KindJoined:
		b = append(b, e.UserID...)
	case KindRestored:
		b = append(b, e.Reason...)
	}
	b = append(b, '|')
	if e.Kind == KindJoined && e.Code.CodeID != 0 {
		b = strconv.AppendInt(b, e.Code.CodeID, 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, e.Code.Use, 10)
		b = append(b, ':')
		b = append(b, e.Code.Phase...)
	}
	b = append(b, e.SeatID...)
	b = append(b, '|')
	b = strconv.AppendInt(b, e.At.UnixMilli(), 10)
	switch {
	case e.RabbitDone && !e.KafkaDone:
		b = append(b, "|r"...)
	case e.KafkaDone && !e.RabbitDone:
		b = append(b, "|k"...)
	}
	return string(b)
}

// outboxFor returns the outbox entries a promotion (or an immediate
// admission) wrote at now, so the caller can announce and acknowledge them
// without reading the outbox back.
func outboxFor(promoted []Admission, expired []Expiry, at time.Time) []OutboxEntry {
	var out []OutboxEntry
	for _, a := range promoted {
		out = append(out, OutboxEntry{Kind: KindPromoted, UserID: a.UserID, Sequence: a.Sequence, ExpireAt: a.ExpireAt, At: at})
	}
	for _, x := range expired {
		out = append(out, OutboxEntry{Kind: KindExpired, UserID: x.UserID, Sequence: x.Sequence, SeatID: x.SeatID, ExpireAt: x.At, At: at})
	}
	return out
}

// AckOutbox removes announced entries, each only if unchanged since read.
func (s *Store) AckOutbox(ctx context.Context, eventID string, entries ...OutboxEntry) error {
	return s.settleOutbox(ctx, eventID, entries, func(OutboxEntry) string { return "" })
}

// MarkOutbox records that one side of each entry was announced: the
// RabbitMQ side (rabbit true) or the Kafka side. Each entry is rewritten
// only if unchanged since read; an entry whose other side was done already
// is removed. A later sweep then redoes only the side still missing.
func (s *Store) MarkOutbox(ctx context.Context, eventID string, rabbit bool, entries ...OutboxEntry) error {
	return s.settleOutbox(ctx, eventID, entries, func(e OutboxEntry) string {
		if rabbit {
			e.RabbitDone = true
		} else {
			e.KafkaDone = true
		}
		if e.RabbitDone && e.KafkaDone {
			return ""
		}
		return e.value()
	})
}

func (s *Store) settleOutbox(ctx context.Context, eventID string, entries []OutboxEntry, next func(OutboxEntry) string) error {
	if len(entries) == 0 {
		return nil
	}
	if err := checkIDs(eventID); err != nil {
		return err
	}
	args := make([]any, 0, 3*len(entries))
	for _, e := range entries {
		args = append(args, e.field(), e.value(), next(e))
	}
	if _, err := s.run(ctx, scriptAckOutbox, eventID, args...); err != nil {
		return fmt.Errorf("ack outbox: %w", err)
	}
	return nil
}

// OutboxEntry is a side effect of a state change that still has to be
// announced (timeout scheduled, user notified, event published, slot
// released). See Store.Outbox.
type OutboxEntry struct {
	Kind     OutboxKind
	UserID   string
	Sequence int64
	ExpireAt time.Time // promoted: the hold's deadline; expired: the deadline that passed (zero in older entries)
	SeatID   string    // expired, cancelled, offered and offer_ended
	From     string    // cancelled: "queue", "active" or FromAbandoned; offer_ended: the outcome; waitlisted: seats wanted
	// Reason: restored only, what was rebuilt ("seats=<n> sold=<n>
	// completed_users=<n>"); Sequence is then the rebuild's sequence base.
	Reason string
	At     time.Time // when the entry was written
	// RequestID is the id of the HTTP request that wrote the entry, when the
	// writer passes it on (it is not stored in Redis): the Kafka event then
	// carries it in its request_id header.
	RequestID string
	// RabbitDone and KafkaDone say which side of the entry was announced
	// already (MarkOutbox): a retry does only the other one. At most one is
	// set on a stored entry; an entry with both sides done is removed.
	RabbitDone bool
	KafkaDone  bool
	// LegacyKey is set on an entry written before outbox fields carried the
	// join sequence ('p:<user>' instead of 'p:<seq>:<user>'), so that its
	// acknowledgement finds it.
	LegacyKey bool
	// Code is the access code a joined entry's join redeemed (its
	// CodeID 0: none): the announcer records it in the ledger and
	// publishes its code_redeemed fact with the booking_request.
	Code CodeUse
	// Field and Value are a KindUnreadable entry as stored.
	Field, Value string
}
