package booking

// keysFor returns the 17 keys every booking script takes, in the order
// lua/lib.lua names them. They all carry the hash tag {eventID}, so one
// event's keys live in one Redis Cluster slot and every script is
// cluster-safe; different events spread over the cluster.
func keysFor(prefix, eventID string) []string {
	base := prefix + ":{" + eventID + "}:"
	return []string{
		base + "config",
		base + "seats",
		base + "seatmap",
		base + "waiting",
		base + "active",
		base + "seq",
		base + "seen",
		base + "outbox",
		base + "rate",
		base + "state",
		base + "useq",
		base + "useat",
		base + "upay",
		base + "ugrace",
		base + "pays",
		base + "status",
		base + "seatidx",
	}
}

// Indexes into keysFor's result.
const (
	kConfig = iota
	kSeats
	kSeatmap
	kWaiting
	kActive
	kSeq
	kSeen
	kOutbox
	kRate
	kState
	kUseq
	kUseat
	kUpay
	kUgrace
	kPays
	kStatus
	kSeatidx
)

// EventKeys returns the keys every booking script takes for an event, for
// tools outside this package (benchmarks running the scripts with
// redis-benchmark). Services use Store and never touch keys.
func EventKeys(prefix, eventID string) []string { return keysFor(prefix, eventID) }

// eventsIndexKey is the set of all event ids (one key, outside any event's
// slot; only read by listing, never by a script).
func eventsIndexKey(prefix string) string { return prefix + ":events" }
