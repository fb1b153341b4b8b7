package main

import (
	"context"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// Anonymous reads that every client of an event repeats (the seat map,
// the queue's progress) must cost per event, not per client. Each gateway
// instance keeps one encoded snapshot per event and kind: it is rebuilt
// from Redis at most once per maxAge, with one read in flight per event
// however many clients ask (singleflight); every reader in between gets
// the same bytes. The answer carries an ETag and Cache-Control, so
// browsers revalidate with a 304 and a CDN in front absorbs the rest
// (docs/scaling.md).

// maxSnapshotEvents bounds the snapshots kept per kind (only existing
// events are kept, and events are created by admins, so this is a
// backstop).
const maxSnapshotEvents = 10_000

// snapshot is one encoded answer: its body, ETag and when it was read,
// plus what the next refresh may reuse (V).
type snapshot[V any] struct {
	at   time.Time
	body []byte
	etag string
	v    V
}

// newSnapshot encodes body read at at; the ETag is a hash of the bytes, so
// an unchanged document keeps its ETag across refreshes and instances.
func newSnapshot[V any](at time.Time, body []byte, v V) *snapshot[V] {
	h := fnv.New64a()
	h.Write(body)
	return &snapshot[V]{at: at, body: body, etag: `"` + strconv.FormatUint(h.Sum64(), 36) + `"`, v: v}
}

// snapshotCache holds one kind of per-event snapshot of a gateway
// instance.
type snapshotCache[V any] struct {
	flights singleflight.Group
	mu      sync.Mutex
	snaps   map[string]*snapshot[V]
}

func (m *snapshotCache[V]) cached(eventID string) *snapshot[V] {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snaps[eventID]
}

// get returns eventID's snapshot no older than maxAge, calling read (with
// the previous snapshot, nil the first time) at most once at a time per
// event.
func (m *snapshotCache[V]) get(ctx context.Context, eventID string, maxAge time.Duration,
	read func(ctx context.Context, prev *snapshot[V]) (*snapshot[V], error)) (*snapshot[V], error) {
	if s := m.cached(eventID); s != nil && time.Since(s.at) < maxAge {
		return s, nil
	}
	v, err, _ := m.flights.Do(eventID, func() (any, error) {
		prev := m.cached(eventID)
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
		m.mu.Lock()
		if m.snaps == nil {
			m.snaps = map[string]*snapshot[V]{}
		}
		if _, ok := m.snaps[eventID]; ok || len(m.snaps) < maxSnapshotEvents {
			m.snaps[eventID] = snap
		}
		m.mu.Unlock()
		return snap, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*snapshot[V]), nil
}

// serveSnapshot answers with snap: ETag, Cache-Control public for maxAge
// (at least a second), and a bodiless 304 when If-None-Match names the
// ETag.
func serveSnapshot[V any](c *httpapi.FastCtx, snap *snapshot[V], maxAge time.Duration) {
	h := &c.Response.Header
	h.Set("ETag", snap.etag)
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(max(1, int(maxAge/time.Second))))
	if etagMatches(c.Header("If-None-Match"), snap.etag) {
		c.SetStatusCode(http.StatusNotModified)
		return
	}
	c.WriteJSON(http.StatusOK, snap.body)
}

// etagMatches reports whether an If-None-Match header names etag (weak
// comparison, as RFC 9110 asks for If-None-Match).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
