package booking

import "github.com/boxoffice/boxoffice/lua"

// keysFor returns the keys every booking script may take, in the order
// of lua.EventKey (the booking functions' KEYS are declared in lua/ops.go
// as indexes into this list). They all carry the hash tag {eventID}, so
// one event's keys live in one Redis Cluster slot and every script is
// cluster-safe; different events spread over the cluster.
func keysFor(prefix, eventID string) []string {
	base := prefix + ":{" + eventID + "}:"
	names := lua.EventKeyNames()
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = base + n
	}
	return out
}

// Indexes into keysFor's result.
const (
	kConfig   = lua.Config
	kSeats    = lua.Seats
	kSeatmap  = lua.Seatmap
	kWaiting  = lua.Waiting
	kActive   = lua.Active
	kSeq      = lua.Seq
	kSeen     = lua.Seen
	kOutbox   = lua.Outbox
	kRate     = lua.Rate
	kState    = lua.State
	kUseq     = lua.Useq
	kUseat    = lua.Useat
	kUpay     = lua.Upay
	kUgrace   = lua.Ugrace
	kPays     = lua.Pays
	kStatus   = lua.Status
	kSeatidx  = lua.Seatidx
	kAlog     = lua.Alog
	kCodes    = lua.Codes
	kRuns     = lua.Runs
	kWaitlist = lua.Waitlist
	kOffers   = lua.Offers
	kAlloc    = lua.Alloc
	kBoxsales = lua.Boxsales
	kPq       = lua.Pq
	kPqdraw   = lua.Pqdraw
)

// EventKeys returns the keys every booking script takes for an event, for
// tools outside this package (benchmarks running the scripts with
// redis-benchmark). Services use Store and never touch keys.
func EventKeys(prefix, eventID string) []string { return keysFor(prefix, eventID) }

// eventsIndexKey is the set of all event ids (one key, outside any event's
// slot; only read by listing, never by a script).
func eventsIndexKey(prefix string) string { return prefix + ":events" }
