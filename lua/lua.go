// Package lua embeds the Redis Lua scripts of the booking engine, one file
// per operation. Each file starts with a comment giving its KEYS, ARGV and
// replies; pkg/booking wraps each one in a typed Go function. lib.lua holds
// the helpers that several scripts share and is prepended to those scripts
// when they are loaded, so a rule (how a hold expires, say) is written once.
package lua

import (
	"embed"
	"fmt"
	"regexp"
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

// Script returns the script that Redis runs for an operation: the shared
// library followed by the operation's own file. The result is what EVALSHA
// hashes, so every client (Go, redis-cli, redis-benchmark) must load this
// text, not the bare file.
//
// Of the library only what the operation uses is included: its opening
// part (the KEYS locals and constants) and each `local function` that the
// operation's text names, directly or through another included function.
// Redis runs the whole script text on every call, and creating the
// closures of the library's two dozen functions cost about 3 µs per call
// (a third of a join), whether the operation used them or not.
func Script(name string) string {
	body := Source(name)
	return libFor(body) + "\n" + body
}

var (
	libOnce   sync.Once
	libHead   string
	libChunks []libChunk
	identRe   = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	funcRe    = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
)

// libChunk is one function of lib.lua with the comment above it.
type libChunk struct {
	name, text string
	uses       []string // identifiers in text
}

// splitLib cuts lib.lua into its opening part and one chunk per top-level
// `local function` (a chunk runs from the comment lines above its
// function to the next chunk).
func splitLib() {
	lines := strings.SplitAfter(Source("lib"), "\n")
	var starts []int
	for i, l := range lines {
		if funcRe.MatchString(l) {
			s := i
			for s > 0 && strings.HasPrefix(lines[s-1], "--") {
				s--
			}
			starts = append(starts, s)
		}
	}
	if len(starts) == 0 {
		libHead = strings.Join(lines, "")
		return
	}
	libHead = strings.Join(lines[:starts[0]], "")
	for k, s := range starts {
		end := len(lines)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		text := strings.Join(lines[s:end], "")
		var name string
		for _, l := range lines[s:end] {
			if m := funcRe.FindStringSubmatch(l); m != nil {
				name = m[1]
				break
			}
		}
		libChunks = append(libChunks, libChunk{name: name, text: text, uses: identRe.FindAllString(text, -1)})
	}
}

// libFor returns the part of lib.lua that body needs. A function can only
// call functions defined above it, so one pass from the last chunk to the
// first collects every dependency.
func libFor(body string) string {
	libOnce.Do(splitLib)
	need := map[string]bool{}
	for _, id := range identRe.FindAllString(body, -1) {
		need[id] = true
	}
	keep := make([]bool, len(libChunks))
	for i := len(libChunks) - 1; i >= 0; i-- {
		if need[libChunks[i].name] {
			keep[i] = true
			for _, id := range libChunks[i].uses {
				need[id] = true
			}
		}
	}
	var b strings.Builder
	b.WriteString(libHead)
	for i, c := range libChunks {
		if keep[i] {
			b.WriteString(c.text)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
