// Package lua embeds the project's Redis Lua scripts, one file per
// operation: the booking engine's (pkg/booking wraps each one in a typed
// Go function) and the counters of pkg/popularity and pkg/report, which
// have keys of their own. Each file starts with a comment giving its
// ARGV, replies and keys; the KEYS each function takes are declared in Go
// (ops.go), which the registration below binds. The files of lib/ hold
// the helpers that several booking scripts share, by concern, so a rule
// (how a hold expires, say) is written once.
//
// Redis runs every script as a function of one library (Redis 7
// FUNCTION LOAD, called with FCALL; pkg/redisfn loads and calls it):
// lib/'s files once, in the order of libParts, then each operation's file
// as the body of a function registered as Function(name). The library's
// code runs once when it is loaded, so a call pays neither for its text
// nor for creating the helpers, which as an EVAL script it did on every
// call (docs/benchmarks.md "Redis Functions").
package lua

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
)

//go:embed *.lua lib/*.lua
var files embed.FS

// libParts are the files of lib/, in the order the library has them: a
// part uses only what the parts before it define (Lua locals).
var libParts = []string{
	"base",      // the frame (KEYS, ARGV, K_*), numbers as text, users' state
	"rows",      // rows, the status string, the index of free runs
	"seats",     // the seat map, a seat's position, status and price
	"holds",     // how a hold ends, expires or gets its grace
	"select",    // a fan's selection: held whole, best available, no orphans
	"payments",  // the payment registry
	"outbox",    // the outbox's entries
	"room",      // admission into the room, the admission rate
	"limits",    // the abuse limits
	"requests",  // a join or position call's requests in ARGV
	"draw",      // the pre-queue's draw
	"codes",     // access codes, redeemed by a join
	"join",      // enqueue_joins
	"positions", // read_positions
	"waitlist",  // the waitlist's offers
}

// libSource is the library's shared code: lib/'s files in order, and in
// a test binary the test clock after base (testClockSource).
func libSource() string { return libText(testClock) }

// libText is lib/'s files in order, with the test clock after base when
// test is set.
func libText(test bool) string {
	var b strings.Builder
	for _, p := range libParts {
		b.WriteString(Source("lib/" + p))
		if p == "base" && test {
			b.WriteString(testClockSource)
		}
	}
	return b.String()
}

// testClock: the library is built for a test binary (testing.Testing()),
// whose scripts read the test clock.
var testClock = testing.Testing()

// testClockSource replaces base.lua's clock in the library of a test
// binary only: a call's time is then the event's test clock when a test
// set one, the key "<prefix>:{<event_id>}:clock" (unix ms; its name is
// config's with "clock" for "config", so it shares the event's hash slot
// and works on Redis Cluster), else Redis's. booking.WithClock sets it
// in tests. Production's library has no such code and a different
// version (the name hashes the text), so no key, request or setting can
// move the time its scripts read (docs/booking-engine.md "One clock").
const testClockSource = `-- test library only (lua/lua.go testClockSource)
do
  local redis_clock = clock
  clock = function()
    if K_CONFIG then
      local v = redis.call('GET', string.sub(K_CONFIG, 1, -7) .. 'clock')
      if v then
        local now = tonumber(v)
        return now, int(now)
      end
    end
    return redis_clock()
  end
end
`

// ReadsTestClock reports whether this binary's library reads the test clock
// (a test binary: testing.Testing()).
func ReadsTestClock() bool { return testClock }

// Source returns the text of lua/<name>.lua ("enqueue", "lib/base"),
// exactly as stored.
func Source(name string) string {
	b, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no script %q", name))
	}
	return string(b)
}

// LibraryPrefix begins the name of every version of the library.
const LibraryPrefix = "boxoffice_"

var (
	libOnce    sync.Once
	library    string
	version    string // a hash of the scripts
	operations []string
	byName     map[string]declaration
)

// check panics unless every operation's file has exactly one entry in
// functions, with its event keys in EventKey order, and every entry a
// file.
func check(files []string) {
	byName = map[string]declaration{}
	for _, f := range functions {
		if _, dup := byName[f.name]; dup {
			panic(fmt.Sprintf("lua: function %q declared twice", f.name))
		}
		if !slices.Contains(files, f.name) {
			panic(fmt.Sprintf("lua: function %q has no file %s.lua", f.name, f.name))
		}
		if (len(f.event) == 0) == (len(f.own) == 0) || (f.limits && len(f.event) == 0) {
			panic(fmt.Sprintf("lua: function %q must take event keys or keys of its own", f.name))
		}
		for i := 1; i < len(f.event); i++ {
			if f.event[i] <= f.event[i-1] {
				panic(fmt.Sprintf("lua: function %q: event keys not in EventKey order", f.name))
			}
		}
		byName[f.name] = f
	}
	for _, op := range files {
		if _, ok := byName[op]; !ok {
			panic(fmt.Sprintf("lua: %s.lua is in no entry of functions (ops.go)", op))
		}
	}
}

func build() {
	all, _ := fs.Glob(files, "*.lua")
	for _, f := range all {
		if name := strings.TrimSuffix(f, ".lua"); name != "lib" {
			operations = append(operations, name)
		}
	}
	slices.Sort(operations)
	check(operations)
	h := sha1.New()
	h.Write([]byte(libSource()))
	for _, op := range operations {
		fmt.Fprintf(h, "\x00%s\x00%s", op, Source(op))
	}
	version = hex.EncodeToString(h.Sum(nil))[:12]
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=%s%s\n%s\n", LibraryPrefix, version, libSource())
	for _, op := range operations {
		// each operation in a block of its own: its local goes out of
		// scope at the block's end, so the operations do not count against
		// Lua's 200 locals of the library's main function
		fmt.Fprintf(&b, "do\nlocal function op_%s()\n%s\nend\n", op, Source(op))
		fmt.Fprintf(&b, "redis.register_function('%s_%s', function(keys, argv)\n", op, version)
		if f := byName[op]; len(f.event) == 0 {
			// keys of its own: KEYS as given
			fmt.Fprintf(&b, "  KEYS, ARGV, NKEYS = keys, argv, #keys\n")
		} else {
			// the event keys it takes, in EventKey order, then the
			// abuse-limit keys; every other K_ is nil
			vars, vals := make([]string, len(eventKeyNames)), make([]string, len(eventKeyNames))
			for i, n := range eventKeyNames {
				vars[i], vals[i] = "K_"+strings.ToUpper(n), "nil"
			}
			for j, i := range f.event {
				vals[i] = fmt.Sprintf("keys[%d]", j+1)
			}
			fmt.Fprintf(&b, "  KEYS, ARGV, NKEYS = keys, argv, %d\n  %s =\n    %s\n",
				len(f.event), strings.Join(vars, ", "), strings.Join(vals, ", "))
		}
		fmt.Fprintf(&b, "  return op_%s()\nend)\nend\n", op)
	}
	library = b.String()
}

// FunctionKeys returns the event keys an operation's function takes
// (declared in ops.go), as indexes (from 0) into the list of an event's
// keys (EventKey, booking.EventKeys), in that order. The abuse-limit keys
// follow them for the operations that check limits. false for a function
// with keys of its own (the popularity and report counters) and for a
// name that is no operation.
func FunctionKeys(op string) ([]int, bool) {
	libOnce.Do(build)
	f, ok := byName[op]
	if !ok || len(f.event) == 0 {
		return nil, false
	}
	idx := make([]int, len(f.event))
	for i, k := range f.event {
		idx[i] = int(k)
	}
	return idx, true
}

// Library returns the text of the function library (FUNCTION LOAD).
func Library() string {
	libOnce.Do(build)
	return library
}

// LibraryName is the library's name, "boxoffice_<version>": the version is
// a hash of the scripts, so processes built from different scripts (a
// rolling deploy) each call their own functions.
func LibraryName() string {
	libOnce.Do(build)
	return LibraryPrefix + version
}

// Function returns the name FCALL calls for an operation (its file's
// name, e.g. "enqueue"), "<operation>_<version>". It panics for a name
// that is not an operation.
func Function(op string) string {
	libOnce.Do(build)
	if !slices.Contains(operations, op) {
		panic(fmt.Sprintf("lua: no operation %q", op))
	}
	return op + "_" + version
}

// Operations returns the names of the operations in the library, sorted.
func Operations() []string {
	libOnce.Do(build)
	return slices.Clone(operations)
}
