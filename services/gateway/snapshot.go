package main

import (
	"compress/gzip"
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// Anonymous reads that every client repeats (the seat map, the queue's
// progress, the event list and the ranking) must cost per event, not per
// client. Each gateway instance keeps one snapshot per key and kind: it
// is rebuilt at most once per maxAge, with one read in flight per key
// however many clients ask (singleflight); every reader in between gets
// the same prepared bytes (fastserver.Encoded: the JSON, its gzip encoding
// and their ETags, made once per snapshot), so a read costs neither Redis
// nor encoding. The answer carries an ETag and Cache-Control, so browsers
// revalidate with a 304 and a CDN in front absorbs the rest
// (docs/scaling.md).
//
// A snapshot may be built from other snapshots instead of Redis (a page
// of the event list from the snapshots of its events): then only the
// snapshots at the bottom read Redis, each at most once per maxAge.

// maxSnapshotEvents bounds the snapshots kept per kind when the kind sets
// no bound of its own (only existing events are kept, and events are
// created by admins, so this is a backstop).
const maxSnapshotEvents = 10_000

// snapshotGzipLevel is the compression of every snapshot: gzip.BestSpeed
// (fastserver.Encode; BenchmarkEncodeSeatMap).
const snapshotGzipLevel = gzip.BestSpeed

// snapshot is one refresh's result: when it was read, what the next
// refresh (or a snapshot built from this one) uses (v), and the answer
// itself (doc; nil for a kind that is only a part of other answers).
type snapshot[V any] struct {
	at  time.Time
	doc *fastserver.Encoded
	v   V
}

// newSnapshot prepares body, read at at, for every reader: its ETag (a
// hash of the bytes, so an unchanged document keeps its ETag across
// refreshes and instances) and its gzip encoding.
func newSnapshot[V any](at time.Time, body []byte, v V) *snapshot[V] {
	return &snapshot[V]{at: at, doc: fastserver.Encode(body, snapshotGzipLevel), v: v}
}

// snapshotCache holds one kind of snapshot of a gateway instance, by key
// (an event id, or a normalized query).
type snapshotCache[V any] struct {
	// limit bounds the snapshots kept (0: maxSnapshotEvents). A kind whose
	// keys clients choose (pages of the event list) sets a small one.
	limit   int
	flights singleflight.Group
	mu      sync.Mutex
	snaps   map[string]*snapshot[V]
}

func (m *snapshotCache[V]) cached(key string) *snapshot[V] {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snaps[key]
}

// get returns key's snapshot no older than maxAge, calling read (with the
// previous snapshot, nil the first time) at most once at a time per key.
func (m *snapshotCache[V]) get(ctx context.Context, key string, maxAge time.Duration,
	read func(ctx context.Context, prev *snapshot[V]) (*snapshot[V], error)) (*snapshot[V], error) {
	if s := m.cached(key); s != nil && time.Since(s.at) < maxAge {
		return s, nil
	}
	v, err, _ := m.flights.Do(key, func() (any, error) {
		prev := m.cached(key)
		if prev != nil && time.Since(prev.at) < maxAge {
			return prev, nil // refreshed while this caller waited
		}
		// not the first caller's context: one caller going away must not
		// fail the read the others wait for
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		snap, err := read(rctx, prev)
		if err != nil {
			return nil, err
		}
		m.keep(key, snap, maxAge)
		return snap, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*snapshot[V]), nil
}

// keep stores snap under key. A full cache first drops its expired
// snapshots, then, if it is still full, any one: the bound holds, and
// keys that clients chose cannot hold the places for good.
func (m *snapshotCache[V]) keep(key string, snap *snapshot[V], maxAge time.Duration) {
	limit := m.limit
	if limit <= 0 {
		limit = maxSnapshotEvents
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snaps == nil {
		m.snaps = map[string]*snapshot[V]{}
	}
	if _, ok := m.snaps[key]; !ok && len(m.snaps) >= limit {
		for k, s := range m.snaps {
			if time.Since(s.at) >= maxAge {
				delete(m.snaps, k)
			}
		}
		for k := range m.snaps {
			if len(m.snaps) < limit {
				break
			}
			delete(m.snaps, k)
		}
	}
	m.snaps[key] = snap
}

// size is the number of snapshots kept.
func (m *snapshotCache[V]) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.snaps)
}

// serveSnapshot answers with snap's document: ETag, Cache-Control public
// for maxAge (at least a second), Vary: Accept-Encoding, gzip-compressed
// for a client that accepts it, and a bodiless 304 when If-None-Match
// names the ETag.
func serveSnapshot[V any](c *fastserver.Ctx, snap *snapshot[V], maxAge time.Duration) {
	c.ServeEncoded(snap.doc, max(1, int(maxAge/time.Second)))
}
