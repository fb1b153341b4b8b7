package booking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The seat map's read model. Every seat's status is mirrored, one byte per
// seat in seat-map order, in the event's status string (key 15), which
// every script that changes a seat writes with SETRANGE
// (set_seat_status in lua/lib/seats.lua). Reading the whole map is then a GET of
// one string of len(seats) bytes — no script, no loop over the seats — so
// its cost in Redis is a memcpy, not 200,000 hash lookups. Selection stays
// authoritative in the scripts (the seats hash): a map read a moment
// before only means a 409 on select.

// Status codes in the seat status string.
const (
	SeatCodeAvailable byte = 'a'
	SeatCodeHeld      byte = 'h'
	SeatCodeSold      byte = 's'
	// A seat operators hold for a purpose or killed (marks.go).
	SeatCodeReserved byte = 'r'
	SeatCodeKilled   byte = 'k'
)

var scriptSeatStatus = newScript("seat_status")

// SeatStatuses returns the event's seat status string: byte i is the
// status (SeatCodeAvailable, SeatCodeHeld, SeatCodeSold, SeatCodeReserved,
// SeatCodeKilled) of seat i of
// SeatMapIDs. It is one pipelined GET and HGET; only an event whose string
// is missing or damaged (created before the string existed) is rebuilt
// once by seat_status.lua. Errors: ErrEventNotFound.
func (s *Store) SeatStatuses(ctx context.Context, eventID string) (string, error) {
	if err := checkIDs(eventID); err != nil {
		return "", err
	}
	k := s.eventKeys(eventID)
	var get *redis.StringCmd
	var total *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, k[kStatus])
		total = p.HGet(ctx, k[kConfig], "total")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("seat statuses: %w", err)
	}
	n, terr := total.Int()
	if errors.Is(terr, redis.Nil) {
		return "", ErrEventNotFound
	}
	status := get.Val()
	if terr == nil && len(status) == n && strings.IndexByte(status, 0) < 0 {
		return status, nil
	}
	r, err := s.run(ctx, scriptSeatStatus, eventID)
	if err != nil {
		return "", fmt.Errorf("seat statuses: %w", err)
	}
	var fresh string
	r.scan(&fresh)
	return fresh, nil
}

// SeatMapIDs returns the event's seat ids in display order. A seat map is
// fixed when the event is created, so callers read it once per event and
// keep it. Errors: ErrEventNotFound.
func (s *Store) SeatMapIDs(ctx context.Context, eventID string) ([]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	ids, err := s.rdb.LRange(ctx, s.eventKeys(eventID)[kSeatmap], 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("seat map: %w", err)
	}
	if len(ids) == 0 {
		return nil, ErrEventNotFound
	}
	return ids, nil
}

// SeatStatusOf names a status code.
func SeatStatusOf(code byte) SeatStatus {
	switch code {
	case SeatCodeHeld:
		return SeatHeld
	case SeatCodeSold:
		return SeatSold
	case SeatCodeReserved:
		return SeatReserved
	case SeatCodeKilled:
		return SeatKilled
	case SeatCodeAllocated:
		return SeatAllocated
	}
	return SeatAvailable
}

// SeatSection is a run of seats of the map that the seat-map response
// names compactly: either a row and the number of its first seat (seat i
// is Row + (First+i), as in A1, A2, …), or, for ids that do not follow
// that pattern, the ids themselves. Start and Len locate the run in the
// status string.
type SeatSection struct {
	Row   string
	First int
	IDs   []string // set instead of Row/First for other ids
	Start int
	Len   int
}

// SeatSections groups a seat map's ids (in display order) into sections:
// consecutive ids <letters><n>, <letters><n+1>, … form one numbered
// section; consecutive ids of any other form one listed section.
func SeatSections(ids []string) []SeatSection {
	var out []SeatSection
	for i, id := range ids {
		row, num, ok := splitSeatID(id)
		if len(out) > 0 {
			last := &out[len(out)-1]
			if ok && last.IDs == nil && last.Row == row && last.First+last.Len == num {
				last.Len++
				continue
			}
			if !ok && last.IDs != nil {
				last.IDs = append(last.IDs, id)
				last.Len++
				continue
			}
		}
		if ok {
			out = append(out, SeatSection{Row: row, First: num, Start: i, Len: 1})
		} else {
			out = append(out, SeatSection{IDs: []string{id}, Start: i, Len: 1})
		}
	}
	return out
}

// splitSeatID splits "AB12" into "AB", 12; ok is false for any other
// form (including leading zeros, which would not round-trip).
func splitSeatID(id string) (string, int, bool) {
	i := 0
	for i < len(id) && id[i] >= 'A' && id[i] <= 'Z' {
		i++
	}
	if i == 0 || i == len(id) || id[i] == '0' || len(id)-i > 9 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i:])
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return id[:i], n, true
}
