package lua

// The KEYS of every function of the library, declared here once, beside
// its name. The library's registration of each function (build) binds
// the event keys it takes to their K_* names, so what a function is given
// is this table, not anything in the Lua files; keys_test.go checks that
// each function touches exactly the keys declared for it.
//
// The table lives in this module, not in pkg/booking, because the library
// text is built here and needs it (pkg/popularity, pkg/report and
// pkg/redisfn load the same library without importing pkg/booking, and
// this module imports nothing of the project's). pkg/booking reads it
// through FunctionKeys and builds an event's keys from EventKeyNames.

// EventKey is one of an event's keys: an index into the list of an
// event's keys (booking.EventKeys), which has them in this order.
type EventKey int

// An event's keys (docs/booking-engine.md "Key layout").
const (
	Config EventKey = iota
	Seats
	Seatmap
	Waiting
	Active
	Seq
	Seen
	Outbox
	Rate
	State
	Useq
	Useat
	Upay
	Ugrace
	Pays
	Status
	Seatidx
	Alog
	Codes
	Runs
	Waitlist
	Offers
	Alloc
	Boxsales
	Pq
	Pqdraw
)

// eventKeyNames are the keys' names, the last part of each key
// ("<prefix>:{<event_id>}:<name>"), in EventKey order; the Lua code
// names key n K_<NAME>.
var eventKeyNames = [...]string{
	"config", "seats", "seatmap", "waiting", "active", "seq", "seen", "outbox",
	"rate", "state", "useq", "useat", "upay", "ugrace", "pays", "status", "seatidx",
	"alog",
	"codes",
	"runs",
	"waitlist", "offers",
	"alloc",
	"boxsales",
	"pq", "pqdraw",
}

// String returns the key's name ("config").
func (k EventKey) String() string { return eventKeyNames[k] }

// EventKeyNames returns the names of an event's keys in EventKey order.
func EventKeyNames() []string { return eventKeyNames[:] }

// declaration is one function of the library: its file's name, then its
// KEYS. A booking operation takes event keys, in EventKey order (the
// registration binds them to K_*), and, when limits is set, after them
// one key per abuse limit (KEYS[NKEYS + 1..], booking.Limit). A function
// with keys of its own (the counters of pkg/popularity and pkg/report)
// takes own, KEYS[1..] as given.
type declaration struct {
	name   string
	event  []EventKey
	limits bool
	own    []string
}

// ek is a list of event keys, for the table.
func ek(keys ...EventKey) []EventKey { return keys }

var functions = []declaration{
	{name: "ack_outbox", event: ek(Outbox)},
	{name: "box_office_sale", event: ek(Config, Seats, Seatmap, Waiting, State, Useq, Useat, Upay, Pays, Status, Seatidx, Runs, Alloc, Boxsales)},
	{name: "cancel", event: ek(Config, Seats, Waiting, Active, Seen, Outbox, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Runs, Waitlist, Offers, Alloc, Pq)},
	{name: "counts", event: ek(Config, Waiting, Active, Rate, Pq)},
	{name: "create_event", event: ek(Config, Seats, Seatmap, Status, Seatidx, Runs)},
	{name: "enqueue", event: ek(Config, Waiting, Active, Seq, Seen, Outbox, Rate, State, Useq, Useat, Upay, Ugrace, Alog, Codes, Pq, Pqdraw), limits: true},
	{name: "enqueue_batch", event: ek(Config, Waiting, Active, Seq, Seen, Outbox, Rate, State, Useq, Useat, Upay, Ugrace, Alog, Codes, Pq, Pqdraw), limits: true},
	{name: "get_position", event: ek(Config, Waiting, Active, Seen, Rate, State, Useq, Useat, Upay, Pq), limits: true},
	{name: "get_position_batch", event: ek(Config, Waiting, Active, Seen, Rate, State, Useq, Useat, Upay, Pq), limits: true},
	{name: "handle_timeout", event: ek(Config, Seats, Waiting, Active, Outbox, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Runs, Waitlist, Offers, Alloc)},
	{name: "initiate_payment", event: ek(Config, Seatmap, Waiting, Active, Outbox, State, Useq, Useat, Upay, Pays, Seatidx, Offers)},
	{name: "lock_seat", event: ek(Config, Seats, Seatmap, Waiting, Active, Outbox, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Codes, Runs, Waitlist, Offers, Alloc)},
	{name: "load_codes", event: ek(Config, Codes)},
	{name: "load_waitlist", event: ek(Config, Seats, Seatmap, Waiting, Active, Outbox, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Runs, Waitlist, Offers)},
	{name: "set_phase", event: ek(Config)},
	{name: "apply_schedule", event: ek(Config, Waiting, Seq, Outbox, State, Useq, Pq, Pqdraw)},
	{name: "place_draw", event: ek(Config, Waiting, Seq, State, Pq, Pqdraw)},
	{name: "mark_seats", event: ek(Config, Seats, Waiting, Active, Outbox, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Runs, Waitlist, Offers, Alloc)},
	{name: "mend_outbox", event: ek(Outbox, State, Useq)},
	{name: "payment_failure", event: ek(Config, Seats, Waiting, Active, Outbox, State, Useq, Useat, Upay, Ugrace, Pays, Status, Seatidx, Alog, Runs, Waitlist, Offers, Alloc)},
	{name: "payment_success", event: ek(Config, Seats, Seatmap, Waiting, Active, State, Useq, Useat, Upay, Ugrace, Pays, Status, Seatidx, Runs)},
	{name: "popularity_count", own: []string{"ranking", "seen"}},
	{name: "provider_state", event: ek(Config, Active)},
	{name: "promote", event: ek(Config, Seats, Waiting, Active, Seen, Outbox, Rate, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Runs, Waitlist, Offers, Alloc)},
	{name: "rate_limit", event: ek(Config), limits: true},
	{name: "release_sold", event: ek(Config, Seats, Waiting, Active, Outbox, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Runs, Waitlist, Offers, Alloc)},
	{name: "repair_sold", event: ek(Config, Seats, Waiting, Active, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Runs, Alloc)},
	{name: "report_count", own: []string{"counts", "seen", "times", "queue", "purchase", "minutes"}},
	{name: "restore_event", event: ek(Config, Seats, Seatmap, Waiting, Active, Seq, Seen, Outbox, Rate, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Runs, Waitlist, Offers, Alloc, Pq, Pqdraw)},
	{name: "select_best", event: ek(Config, Seats, Seatmap, Waiting, Active, Outbox, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Codes, Runs, Waitlist, Offers, Alloc)},
	{name: "seat_status", event: ek(Config, Seats, Seatmap, Status, Seatidx)},
	{name: "touch", event: ek(Config, Waiting, Seen)},
	{name: "update_event", event: ek(Config)},
	{name: "join_waitlist", event: ek(Config, Waiting, Seq, Outbox, State, Waitlist, Offers)},
	{name: "waitlist_status", event: ek(Config, Waitlist, Offers)},
	{name: "answer_offer", event: ek(Config, Seats, Waiting, Active, Outbox, State, Useq, Useat, Upay, Ugrace, Status, Seatidx, Alog, Runs, Waitlist, Offers, Alloc)},
}
