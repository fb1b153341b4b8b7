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
	"slices"
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
)

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
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=%s%s\n%s\n", LibraryPrefix, version, Source("lib"))
	for _, op := range operations {
		fmt.Fprintf(&b, "local function op_%s()\n%s\nend\n", op, Source(op))
		fmt.Fprintf(&b, "redis.register_function('%s_%s', function(keys, argv) bind(keys, argv) return op_%s() end)\n",
			op, version, op)
	}
	library = b.String()
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
