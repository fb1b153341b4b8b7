package fairness

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Source is where the admission log's raw entries come from: the event's
// alog list (booking.Store), appended by the scripts in admission order.
// The list holds the entries after AdmissionLogStart's size, whose hash is
// its head: 0 and "" for a log that began in this Redis, the archive's
// last entry for an event rebuilt from the ledger.
type Source interface {
	FairSalt(ctx context.Context, eventID string) (string, error)
	AdmissionLog(ctx context.Context, eventID string, start, count int64) ([]string, error)
	AdmissionLogLen(ctx context.Context, eventID string) (int64, error)
	AdmissionLogStart(ctx context.Context, eventID string) (size int64, head string, err error)
}

// Archive is the admission log's record outside Redis (the ledger): the
// chained entries after index after, at most count, in order.
type Archive interface {
	Admissions(ctx context.Context, eventID string, after, count int64) ([]Entry, error)
}

// Sink takes a page of an event's chained entries, in order, with the
// salt of their user hashes (ledger.Ledger.RecordAdmissions, a Kafka
// publisher). It must be idempotent: a page may be handed on again.
type Sink func(ctx context.Context, eventID, salt string, entries []Entry) error

// Cursor is how many of an event's entries were handed on
// (booking.Store's alog_kafka).
type Cursor interface {
	AdmissionLogPublished(ctx context.Context, eventID string) (int64, error)
	SetAdmissionLogPublished(ctx context.Context, eventID string, n int64) error
}

// HeadSigner signs a log head (pass.Signer.SignLogHead).
type HeadSigner interface {
	SignLogHead(eventID string, size int64, head string, now time.Time) (string, error)
}

// Log serves an event's admission log as a hash chain, computed from
// Source. It keeps, per event, the hash after every PageSize-th entry and
// the head, extending them as the list grows, so a page costs one read of
// at most two pages of raw entries and their hashes, whatever the log's
// length. Entries before the list's start (an event rebuilt from the
// ledger) are read from the Archive. Safe for concurrent use.
type Log struct {
	src     Source
	archive Archive
	// Recorded, when set, is how far each event's log was handed on to
	// the record (HandOn's cursor): SignedHead then signs only entries
	// the record holds, so a rebuild of Redis, which continues the chain
	// after the record's last entry, never contradicts a signed head.
	Recorded Cursor
	mu       sync.Mutex
	events   map[string]*chain
}

type chain struct {
	mu   sync.Mutex
	salt string
	base int64 // entries before the Redis list (the archive's)
	// marks: the hash after entry base and after every multiple of
	// PageSize above it
	marks    map[int64]string
	size     int64
	head     string
	signed   string // the last signed head, signed at signedAt
	signedAt time.Time
}

// NewLog returns a Log over src; archive (nil: none) serves the entries
// before the list's start.
func NewLog(src Source, archive Archive) *Log {
	return &Log{src: src, archive: archive, events: map[string]*chain{}}
}

func (l *Log) chain(eventID string) *chain {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.events[eventID]
	if c == nil {
		c = &chain{}
		l.events[eventID] = c
	}
	return c
}

// entries reads the list's raw entries for indexes (from, from+count] and
// chains them from prev, the hash of entry from.
func (l *Log) entries(ctx context.Context, eventID, salt, prev string, base, from, count int64) ([]Entry, error) {
	raw, err := l.src.AdmissionLog(ctx, eventID, from-base, count)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(raw))
	for i, r := range raw {
		seq, at, reason, user, err := ParseRaw(r)
		if err != nil {
			return nil, err
		}
		e := Entry{Index: from + int64(i) + 1, Seq: seq, UserHash: UserHash(salt, user), AtMs: at, Reason: reason, Prev: prev}
		e.Hash = Link(prev, e.Line())
		prev = e.Hash
		out[i] = e
	}
	return out, nil
}

// extend brings c up to the list's current length; c.mu is held.
func (l *Log) extend(ctx context.Context, eventID string, c *chain) error {
	base, baseHead, err := l.src.AdmissionLogStart(ctx, eventID)
	if err != nil {
		return err
	}
	if base == 0 {
		baseHead = Genesis(eventID)
	}
	n, err := l.src.AdmissionLogLen(ctx, eventID)
	if err != nil {
		return err
	}
	if c.marks == nil || base != c.base || base+n < c.size {
		// first read, or Redis lost the list: a rebuild from the ledger
		// continues the archived chain after base (with the archived
		// salt); one with nothing archived starts a new log (and salt)
		salt, err := l.src.FairSalt(ctx, eventID)
		if err != nil {
			return err
		}
		c.salt, c.base, c.size, c.head = salt, base, base, baseHead
		c.marks = map[int64]string{base: baseHead}
		c.signed, c.signedAt = "", time.Time{}
	}
	for c.size < base+n {
		// up to the next mark
		count := PageSize - c.size%PageSize
		es, err := l.entries(ctx, eventID, c.salt, c.head, c.base, c.size, count)
		if err != nil {
			return err
		}
		if len(es) == 0 {
			break
		}
		c.size += int64(len(es))
		c.head = es[len(es)-1].Hash
		if c.size%PageSize == 0 {
			c.marks[c.size] = c.head
		}
	}
	return nil
}

// Page is a page of an event's log: the entries after an index, and the
// log's size and head when it was read.
type Page struct {
	Entries []Entry
	Size    int64
	Head    string
	salt    string
}

// Page returns up to PageSize entries after index after (0: from the
// first), with the log's size and head. A page of PageSize entries never
// changes.
func (l *Log) Page(ctx context.Context, eventID string, after int64) (Page, error) {
	c := l.chain(eventID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := l.extend(ctx, eventID, c); err != nil {
		return Page{}, err
	}
	p := Page{Size: c.size, Head: c.head, salt: c.salt}
	if after >= c.size {
		return p, nil
	}
	if after < c.base {
		// before the list: the archive's
		want := min(PageSize, c.base-after)
		var es []Entry
		var err error
		if l.archive != nil {
			es, err = l.archive.Admissions(ctx, eventID, after, want)
		}
		if err != nil {
			return Page{}, err
		}
		if int64(len(es)) != want {
			return Page{}, fmt.Errorf("admission log of %s: entries %d to %d are not in the archive", eventID, after+1, after+want)
		}
		p.Entries, after = es, after+want
		if int64(len(es)) == PageSize || after >= c.size {
			return p, nil
		}
	}
	mark := max(c.base, after/PageSize*PageSize)
	rest := PageSize - int64(len(p.Entries))
	es, err := l.entries(ctx, eventID, c.salt, c.marks[mark], c.base, mark, after-mark+rest)
	if err != nil {
		return Page{}, err
	}
	es = es[min(int64(len(es)), after-mark):]
	if int64(len(es)) > rest {
		es = es[:rest]
	}
	p.Entries = append(p.Entries, es...)
	return p, nil
}

// HandOn hands the event's entries after cur's count to each sink in turn,
// a page at a time, and moves cur past each page every sink took. It
// returns how many entries it handed on. Hands that race hand the same
// pages on again; the sinks are idempotent.
func (l *Log) HandOn(ctx context.Context, eventID string, cur Cursor, sinks ...Sink) (int, error) {
	n := 0
	for {
		done, err := cur.AdmissionLogPublished(ctx, eventID)
		if err != nil {
			return n, err
		}
		p, err := l.Page(ctx, eventID, done)
		if err != nil {
			return n, fmt.Errorf("admission log of %s: %w", eventID, err)
		}
		if len(p.Entries) == 0 {
			return n, nil
		}
		for _, sink := range sinks {
			if err := sink(ctx, eventID, p.salt, p.Entries); err != nil {
				return n, err
			}
		}
		if err := cur.SetAdmissionLogPublished(ctx, eventID, p.Entries[len(p.Entries)-1].Index); err != nil {
			return n, err
		}
		n += len(p.Entries)
		if len(p.Entries) < PageSize {
			return n, nil
		}
	}
}

// hashAt returns n and the hash of entry n (n <= c.size; c.mu is held).
func (l *Log) hashAt(ctx context.Context, eventID string, c *chain, n int64) (int64, string, error) {
	if n <= 0 {
		return 0, Genesis(eventID), nil
	}
	if n == c.base {
		return n, c.marks[n], nil
	}
	if n < c.base {
		if l.archive == nil {
			return 0, "", fmt.Errorf("admission log of %s: entry %d is before the list and there is no archive", eventID, n)
		}
		es, err := l.archive.Admissions(ctx, eventID, n-1, 1)
		if err != nil || len(es) != 1 {
			return 0, "", fmt.Errorf("admission log of %s: entry %d is not in the archive (%v)", eventID, n, err)
		}
		return n, es[0].Hash, nil
	}
	mark := max(c.base, (n-1)/PageSize*PageSize)
	es, err := l.entries(ctx, eventID, c.salt, c.marks[mark], c.base, mark, n-mark)
	if err != nil {
		return 0, "", err
	}
	if int64(len(es)) != n-mark {
		return 0, "", fmt.Errorf("admission log of %s: entry %d is gone from the list", eventID, n)
	}
	return n, es[len(es)-1].Hash, nil
}

// SignedHead returns a signed head of the log (HeadSigner) no older than
// maxAge and no shorter than the log (with Recorded: its recorded part)
// was maxAge ago, signing a new one when needed at now.
func (l *Log) SignedHead(ctx context.Context, eventID string, s HeadSigner, now time.Time, maxAge time.Duration) (string, error) {
	c := l.chain(eventID)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.signed != "" && now.Sub(c.signedAt) < maxAge {
		return c.signed, nil
	}
	if err := l.extend(ctx, eventID, c); err != nil {
		return "", err
	}
	size, head := c.size, c.head
	if l.Recorded != nil {
		n, err := l.Recorded.AdmissionLogPublished(ctx, eventID)
		if err != nil {
			return "", err
		}
		if n < size {
			if size, head, err = l.hashAt(ctx, eventID, c, n); err != nil {
				return "", err
			}
		}
	}
	tok, err := s.SignLogHead(eventID, size, head, now)
	if err != nil {
		return "", err
	}
	c.signed, c.signedAt = tok, now
	return tok, nil
}
