// Package lua embeds the project's Redis Lua scripts, one file per
// operation: the booking engine's (pkg/booking wraps each one in a typed
// Go function) and the counters of pkg/popularity and pkg/report, which
// have keys of their own. Each file starts with a comment giving its KEYS,
// ARGV and replies. lib.lua holds the helpers that several booking scripts
// share, so a rule (how a hold expires, say) is written once.
//
// Redis runs every script as a function of one library (Redis 7
// FUNCTION LOAD, called with FCALL; pkg/redisfn loads and calls it):
// lib.lua once, then each operation's file as the body of a function
// registered as Function(name). The
// library's code runs once when it is loaded, so a call pays neither for
// its text nor for creating lib.lua's functions, which as an EVAL script
// it did on every call (docs/benchmarks.md "Redis Functions").
package lua

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

//go:embed *.lua
var files embed.FS

// Source returns the text of lua/<name>.lua, exactly as stored.
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
	opKeys     map[string][]int // operation -> the event keys it takes (FunctionKeys)
)

var (
	// eventKeyLine is a line of lib.lua's header naming an event key:
	// "--   4 waiting  zset ...".
	eventKeyLine = regexp.MustCompile(`(?m)^--\s+(\d+) (\w+)\s`)
	// keysBlock is a booking script's header line of the event keys it
	// reads and writes (lua/keys_test.go checks them against the code).
	keysBlock = regexp.MustCompile(`(?m)^-- KEYS: the event key set \(lib\.lua\)\.?\n--   reads:  (.*)\n--   writes: (.*)$`)
)

// eventKeyNames are lib.lua's event keys in order (config, seats, ...).
func eventKeyNames() []string {
	var names []string
	for _, m := range eventKeyLine.FindAllStringSubmatch(Source("lib"), -1) {
		if i, _ := strconv.Atoi(m[1]); i == len(names)+1 {
			names = append(names, m[2])
		}
	}
	return names
}

// headerKeys returns the indexes (from 0, in lib.lua's order) of the
// event keys src's header says it reads or writes; false for a script
// without that header (keys of its own).
func headerKeys(src string, names []string) ([]int, bool) {
	m := keysBlock.FindStringSubmatch(src)
	if m == nil {
		return nil, false
	}
	used := map[string]bool{}
	for _, list := range m[1:] {
		for _, k := range strings.Split(list, ", ") {
			used[strings.TrimSpace(k)] = true
		}
	}
	var idx []int
	for i, n := range names {
		if used[n] {
			idx = append(idx, i)
		}
	}
	return idx, true
}

func build() {
	all, _ := fs.Glob(files, "*.lua")
	for _, f := range all {
		if name := strings.TrimSuffix(f, ".lua"); name != "lib" {
			operations = append(operations, name)
		}
	}
	slices.Sort(operations)
	h := sha1.New()
	h.Write([]byte(Source("lib")))
	for _, op := range operations {
		fmt.Fprintf(h, "\x00%s\x00%s", op, Source(op))
	}
	version = hex.EncodeToString(h.Sum(nil))[:12]
	names := eventKeyNames()
	opKeys = map[string][]int{}
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=%s%s\n%s\n", LibraryPrefix, version, Source("lib"))
	for _, op := range operations {
		src := Source(op)
		fmt.Fprintf(&b, "local function op_%s()\n%s\nend\n", op, src)
		fmt.Fprintf(&b, "redis.register_function('%s_%s', function(keys, argv)\n", op, version)
		idx, event := headerKeys(src, names)
		if !event {
			// keys of its own: KEYS as given
			fmt.Fprintf(&b, "  KEYS, ARGV, NKEYS = keys, argv, #keys\n")
		} else {
			// the event keys its header lists, in lib.lua's order, then
			// the abuse-limit keys; every other K_ is nil
			opKeys[op] = idx
			vars, vals := make([]string, len(names)), make([]string, len(names))
			for i, n := range names {
				vars[i], vals[i] = "K_"+strings.ToUpper(n), "nil"
			}
			for j, i := range idx {
				vals[i] = fmt.Sprintf("keys[%d]", j+1)
			}
			fmt.Fprintf(&b, "  KEYS, ARGV, NKEYS = keys, argv, %d\n  %s =\n    %s\n",
				len(idx), strings.Join(vars, ", "), strings.Join(vals, ", "))
		}
		fmt.Fprintf(&b, "  return op_%s()\nend)\n", op)
	}
	library = b.String()
}

// FunctionKeys returns the event keys an operation's function takes, as
// indexes (from 0) into lib.lua's list of an event's keys
// (booking.EventKeys), in that order: the ones its header says it reads
// or writes. The abuse-limit keys follow them. false for a function
// with keys of its own (the popularity and report counters).
func FunctionKeys(op string) ([]int, bool) {
	libOnce.Do(build)
	idx, ok := opKeys[op]
	return slices.Clone(idx), ok
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
