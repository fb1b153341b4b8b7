// Package lua embeds the Redis Lua scripts of the booking engine, one file
// per operation. Each file starts with a comment giving its KEYS, ARGV and
// replies; pkg/booking wraps each one in a typed Go function. lib.lua holds
// the helpers that several scripts share and is prepended to those scripts
// when they are loaded, so a rule (how a hold expires, say) is written once.
package lua

import (
	"embed"
	"fmt"
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
func Script(name string) string {
	return Source("lib") + "\n" + Source(name)
}
