package fairness

import (
	"context"
	"sync"
	"time"
)

// Source is where the admission log's raw entries come from: the event's
// alog list (booking.Store), appended by the scripts in admission order.
type Source interface {
	FairSalt(ctx context.Context, eventID string) (string, error)
	AdmissionLog(ctx context.Context, eventID string, start, count int64) ([]string, error)
	AdmissionLogLen(ctx context.Context, eventID string) (int64, error)
}

// HeadSigner signs a log head (pass.Signer.SignLogHead).
type HeadSigner interface {
	SignLogHead(eventID string, size int64, head string, now time.Time) (string, error)
}

// Log serves an event's admission log as a hash chain, computed from
// Source. It keeps, per event, the hash after every PageSize-th entry and
// the head, extending them as the list grows, so a page costs one read of
// at most two pages of raw entries and their hashes, whatever the log's
// length. Safe for concurrent use.
type Log struct {
	src    Source
	mu     sync.Mutex
	events map[string]*chain
}

type chain struct {
	mu       sync.Mutex
	salt     string
	marks    []string // marks[k]: the hash after entry k*PageSize (marks[0]: Genesis)
	size     int64
	head     string
	signed   string // the last signed head, signed at signedAt
	signedAt time.Time
}

// NewLog returns a Log over src.
func NewLog(src Source) *Log { return &Log{src: src, events: map[string]*chain{}} }

func (l *Log) chain(eventID string) *chain {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.events[eventID]
	if c == nil {
		c = &chain{marks: []string{Genesis(eventID)}}
		c.head = c.marks[0]
		l.events[eventID] = c
	}
	return c
}

// entries reads raw entries [from, from+count) (0-based) and chains them
// from prev, the hash of entry from.
func (l *Log) entries(ctx context.Context, eventID, salt, prev string, from, count int64) ([]Entry, error) {
	raw, err := l.src.AdmissionLog(ctx, eventID, from, count)
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
	if c.salt == "" {
		salt, err := l.src.FairSalt(ctx, eventID)
		if err != nil {
			return err
		}
		c.salt = salt
	}
	n, err := l.src.AdmissionLogLen(ctx, eventID)
	if err != nil {
		return err
	}
	if n < c.size {
		// Redis lost the list (a rebuild from the ledger): a new log,
		// with a new salt, from entry 1
		salt, err := l.src.FairSalt(ctx, eventID)
		if err != nil {
			return err
		}
		c.salt, c.marks, c.size = salt, []string{Genesis(eventID)}, 0
		c.head, c.signed, c.signedAt = c.marks[0], "", time.Time{}
	}
	for c.size < n {
		// up to the next mark
		count := PageSize - c.size%PageSize
		es, err := l.entries(ctx, eventID, c.salt, c.head, c.size, count)
		if err != nil {
			return err
		}
		if len(es) == 0 {
			break
		}
		c.size += int64(len(es))
		c.head = es[len(es)-1].Hash
		if c.size%PageSize == 0 {
			c.marks = append(c.marks, c.head)
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
	p := Page{Size: c.size, Head: c.head}
	if after >= c.size {
		return p, nil
	}
	mark := after / PageSize
	es, err := l.entries(ctx, eventID, c.salt, c.marks[mark], mark*PageSize, after-mark*PageSize+PageSize)
	if err != nil {
		return Page{}, err
	}
	es = es[after-mark*PageSize:]
	if int64(len(es)) > PageSize {
		es = es[:PageSize]
	}
	p.Entries = es
	return p, nil
}

// SignedHead returns a signed head of the log (HeadSigner) no older than
// maxAge and no shorter than the log was maxAge ago, signing a new one
// when needed at now.
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
	tok, err := s.SignLogHead(eventID, c.size, c.head, now)
	if err != nil {
		return "", err
	}
	c.signed, c.signedAt = tok, now
	return tok, nil
}
