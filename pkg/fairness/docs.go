package fairness

import (
	"context"
	"time"
)

// The public documents of GET /api/events/{id}/draw and /admissions
// (docs/openapi.yaml), built here so the gateway serves and tools/verify
// reads one definition.

// DrawInputs is what the booking state says about an event's draw.
type DrawInputs struct {
	Phase      string   // a later phase's id; "" the first phase's pre-queue
	Phases     []string // (the first's) the later phases with a pre-queue of their own
	Commit     string   // hex SHA-256 of the seed; empty: no pre-queue
	Seed       string   // hex, once the sale started
	Prequeued  int64
	SalesStart time.Time
	Digest     string // the closed list's, once closed
	Base       int64  // a later phase's: the join sequence its ranks follow (rank r ranks as Base + r)
	Count      int64  // the closed list's length
	Beacon     Beacon // the committed beacon round, if any
}

// Beacon is the public randomness beacon an event's draw is committed to
// (docs/fairness.md "The beacon"): a round (0: none), the beacon's name
// or address for fans, and the round's value (hex, once supplied).
type Beacon struct {
	Round  int64  `json:"beacon_round,omitempty"`
	Source string `json:"beacon_source,omitempty"`
	Value  string `json:"beacon,omitempty"`
	// Signature is the round's signature, for a beacon whose value is
	// taken from it (BeaconChain.Checks: drand quicknet): anyone can check
	// it against the chain's public key (BeaconChain.RoundValue) without
	// asking the beacon.
	Signature string `json:"beacon_signature,omitempty"`
}

// DrawSource reads an event's draw (booking.Store).
// phase "" is the first phase's pre-queue, else a later phase's.
type DrawSource interface {
	DrawInputs(ctx context.Context, eventID, phase string) (DrawInputs, error)
	DrawList(ctx context.Context, eventID, phase string, start, count int64) ([]string, error)
}

// DrawEntry is one member of the closed pre-queue: its rank (1 first) and
// salted user hash.
type DrawEntry struct {
	Rank     int64  `json:"rank"`
	UserHash string `json:"user_hash"`
}

// Draw statuses.
const (
	DrawNone    = "none"    // the event has no pre-queue
	DrawOpen    = "open"    // before the sales start: the seed is secret
	DrawPending = "pending" // started, the list not yet closed
	DrawDrawn   = "drawn"   // closed and ranked: the document never changes
)

// DrawDoc is GET /api/events/{id}/draw: the draw's inputs and a page of
// the closed list in draw order.
type DrawDoc struct {
	EventID string `json:"event_id"`
	// Phase is a later phase's id (its own pre-queue; SalesStart is then
	// its start); Phases, on the first page of the first phase's
	// document, lists them.
	Phase  string   `json:"phase,omitempty"`
	Phases []string `json:"phases,omitempty"`
	Status string   `json:"status"`
	Commit string   `json:"commit,omitempty"`
	Seed   string   `json:"seed,omitempty"`
	Digest string   `json:"digest,omitempty"`
	Beacon
	// BeaconAt is when the beacon publishes the round, for a chain
	// boxoffice knows (Beacon.RoundTime): after SalesStart, the close.
	BeaconAt time.Time `json:"beacon_round_at,omitzero"`
	Count    int64     `json:"count"`
	// Base (a later phase's draw, once closed): the join sequence its
	// ranks follow, so rank r is admitted as join Base + r would be.
	Base       int64       `json:"base,omitempty"`
	SalesStart time.Time   `json:"sales_start,omitzero"`
	Page       int64       `json:"page"`
	PageSize   int64       `json:"page_size"`
	Entries    []DrawEntry `json:"entries"`
	NextPage   *int64      `json:"next_page,omitempty"`
}

// BuildDraw returns page page (from 0) of eventID's draw document: the
// first phase's pre-queue (phase "") or a later phase's.
func BuildDraw(ctx context.Context, src DrawSource, eventID, phase string, page int64) (DrawDoc, error) {
	in, err := src.DrawInputs(ctx, eventID, phase)
	if err != nil {
		return DrawDoc{}, err
	}
	d := DrawDoc{EventID: eventID, Phase: in.Phase, Status: DrawNone, Commit: in.Commit, Seed: in.Seed,
		Beacon: in.Beacon, Base: in.Base, SalesStart: in.SalesStart, Page: page, PageSize: PageSize, Entries: []DrawEntry{}}
	if page == 0 {
		d.Phases = in.Phases
	}
	d.BeaconAt, _ = in.Beacon.RoundTime()
	switch {
	case in.Commit == "":
		return d, nil
	case in.Digest == "":
		d.Status, d.Count = DrawOpen, in.Prequeued
		if in.Seed != "" {
			d.Status = DrawPending
		}
		return d, nil
	}
	d.Status, d.Digest, d.Count = DrawDrawn, in.Digest, in.Count
	list, err := src.DrawList(ctx, eventID, phase, page*PageSize, PageSize)
	if err != nil {
		return DrawDoc{}, err
	}
	for i, h := range list {
		d.Entries = append(d.Entries, DrawEntry{Rank: page*PageSize + int64(i) + 1, UserHash: h})
	}
	if (page+1)*PageSize < in.Count {
		next := page + 1
		d.NextPage = &next
	}
	return d, nil
}

// LogDoc is GET /api/events/{id}/admissions: the entries after an index.
// A Full page (PageSize entries) never changes; the open page carries the
// log's size and head when read and a signed head (SignedHead).
type LogDoc struct {
	EventID    string  `json:"event_id"`
	After      int64   `json:"after"`
	Entries    []Entry `json:"entries"`
	Full       bool    `json:"full"`
	Size       int64   `json:"size,omitempty"`
	Head       string  `json:"head,omitempty"`
	SignedHead string  `json:"signed_head,omitempty"`
}

// HeadMaxAge is how old the signed head on the log's open page may be.
const HeadMaxAge = 2 * time.Second

// Doc returns eventID's log document after index after. clock gives the
// time a head is signed at (Redis's clock); signer may be nil (no head).
func (l *Log) Doc(ctx context.Context, eventID string, after int64, signer HeadSigner,
	clock func(ctx context.Context, eventID string) (time.Time, error)) (LogDoc, error) {
	p, err := l.Page(ctx, eventID, after)
	if err != nil {
		return LogDoc{}, err
	}
	d := LogDoc{EventID: eventID, After: after, Entries: p.Entries, Full: len(p.Entries) == PageSize}
	if d.Entries == nil {
		d.Entries = []Entry{}
	}
	if d.Full {
		return d, nil
	}
	d.Size, d.Head = p.Size, p.Head
	if signer != nil {
		now, err := clock(ctx, eventID)
		if err != nil {
			return LogDoc{}, err
		}
		if d.SignedHead, err = l.SignedHead(ctx, eventID, signer, now, HeadMaxAge); err != nil {
			return LogDoc{}, err
		}
	}
	return d, nil
}
