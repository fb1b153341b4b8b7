package lua

import (
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The booking scripts all receive the same 17 keys (lib.lua's header), but
// each touches only some of them. Every script's header says which, in two
// lines after "-- KEYS: the event key set (lib.lua)":
//
//	--   reads:  config, state
//	--   writes: waiting, outbox
//
// TestScriptHeadersListTheirKeys derives both lists from the code: each
// redis.call / bulk on a K_* key of the script or of a lib.lua function it
// calls (transitively), a read or a write by the command.

// writeCommands are the Redis commands the scripts use that change a key;
// any other command on a key is a read.
var writeCommands = map[string]bool{
	"SET": true, "SETRANGE": true, "INCR": true, "INCRBY": true, "DEL": true,
	"HSET": true, "HSETNX": true, "HMSET": true, "HDEL": true, "HINCRBY": true,
	"ZADD": true, "ZREM": true, "ZINCRBY": true, "ZREMRANGEBYSCORE": true, "ZREMRANGEBYRANK": true, "ZPOPMIN": true,
	"RPUSH": true, "LPUSH": true, "EXPIRE": true, "PEXPIRE": true,
}

var (
	keyLocal = regexp.MustCompile(`(?m)^local K_[A-Z]+(?:,\s*K_[A-Z]+)*\s*$`)
	funcDecl = regexp.MustCompile(`(?ms)^local function (\w+)\(.*?^end$`)
	keyCall  = regexp.MustCompile(`(?:redis\.p?call|bulk)\(\s*'([A-Z]+)'\s*,\s*((?:K_[A-Z]+\s*,\s*)*K_[A-Z]+)`)
	keyRef   = regexp.MustCompile(`\bK_[A-Z]+\b`)
	comment  = regexp.MustCompile(`--.*`)
)

// access is what a piece of Lua does to the event's keys (by short name).
type access struct{ reads, writes map[string]bool }

func (a access) add(b access) {
	maps.Copy(a.reads, b.reads)
	maps.Copy(a.writes, b.writes)
}

// keyNames maps lib.lua's K_* locals to the keys' short names (config,
// seats, ...) of its header: K_<NAME> is the key named name, as lua.go
// binds them.
func keyNames(t *testing.T, lib string) map[string]string {
	declared := map[string]bool{}
	for _, l := range keyLocal.FindAllString(lib, -1) {
		for _, v := range regexp.MustCompile(`K_[A-Z]+`).FindAllString(l, -1) {
			declared[v] = true
		}
	}
	out := map[string]string{}
	for _, n := range eventKeyNames() {
		v := "K_" + strings.ToUpper(n)
		if !declared[v] {
			t.Fatalf("lib.lua's header names key %s, but lib.lua declares no %s", n, v)
		}
		out[v] = n
	}
	if len(out) != 17 || len(declared) != 17 {
		t.Fatalf("lib.lua names %d keys and declares %d K_ locals, want 17", len(out), len(declared))
	}
	return out
}

// direct returns the key accesses written in code (comments stripped),
// and fails on a K_* reference outside a recognised call.
func direct(t *testing.T, where, code string, names map[string]string) access {
	a := access{reads: map[string]bool{}, writes: map[string]bool{}}
	seen := 0
	for _, m := range keyCall.FindAllStringSubmatch(code, -1) {
		for _, k := range keyRef.FindAllString(m[2], -1) {
			seen++
			if writeCommands[m[1]] {
				a.writes[names[k]] = true
			} else {
				a.reads[names[k]] = true
			}
		}
	}
	if all := len(keyRef.FindAllString(code, -1)); all != seen {
		t.Errorf("%s: %d K_* references, %d of them in redis.call/bulk: pass keys only to those", where, all, seen)
	}
	return a
}

func sorted(set map[string]bool) string {
	if len(set) == 0 {
		return "(none)"
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

func TestScriptHeadersListTheirKeys(t *testing.T) {
	lib := Source("lib")
	names := keyNames(t, lib)
	libCode := comment.ReplaceAllString(lib, "")
	libCode = keyLocal.ReplaceAllString(libCode, "")
	funcs := map[string]string{}
	for _, m := range funcDecl.FindAllStringSubmatch(libCode, -1) {
		funcs[m[1]] = m[0]
	}
	if rest := funcDecl.ReplaceAllString(libCode, ""); keyRef.MatchString(rest) {
		t.Errorf("lib.lua uses a key outside its functions")
	}
	// touched returns what code does to the keys, through the lib
	// functions it calls too.
	touched := func(where, code string) access {
		a := direct(t, where, code, names)
		done := map[string]bool{}
		for todo := []string{code}; len(todo) > 0; {
			c := todo[0]
			todo = todo[1:]
			for name, body := range funcs {
				if !done[name] && regexp.MustCompile(`\b`+name+`\(`).MatchString(c) {
					done[name] = true
					a.add(direct(t, "lib.lua "+name, body, names))
					todo = append(todo, body)
				}
			}
		}
		return a
	}

	scripts, _ := fs.Glob(files, "*.lua")
	checked := 0
	for _, file := range scripts {
		name := strings.TrimSuffix(file, ".lua")
		src := Source(name)
		if name == "lib" || !strings.Contains(src, "-- KEYS: the event key set") {
			continue // scripts with keys of their own list them by KEYS[n]
		}
		checked++
		a := touched(file, comment.ReplaceAllString(src, ""))
		want := "-- KEYS: the event key set (lib.lua)\n--   reads:  " + sorted(a.reads) + "\n--   writes: " + sorted(a.writes)
		m := keysBlock.FindStringSubmatch(src)
		if m == nil || m[1] != sorted(a.reads) || m[2] != sorted(a.writes) {
			t.Errorf("%s: the header's KEYS must say what the script touches:\n%s", file, want)
		}
	}
	if checked < 15 {
		t.Fatalf("checked %d scripts, want the 15+ booking scripts", checked)
	}
}
