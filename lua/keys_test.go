package lua

import (
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFunctionsTouchTheirDeclaredKeys holds the Lua code to the KEYS
// table of ops.go: a booking function uses exactly the event keys
// declared for it (each K_* it passes to redis.call or bulk, in its file
// or in a library function it calls, transitively), reaches the
// abuse-limit keys (NKEYS) exactly when it is declared with limits, and
// never indexes KEYS by number; a function with keys of its own uses
// KEYS[1..n] for exactly its n declared keys and no K_* name.

var (
	keyLocal = regexp.MustCompile(`(?m)^local K_[A-Z]+(?:,\s*K_[A-Z]+)*\s*$`)
	funcDecl = regexp.MustCompile(`(?ms)^local function (\w+)\(.*?^end$`)
	keyCall  = regexp.MustCompile(`(?:redis\.p?call|bulk)\(\s*'([A-Z]+)'\s*,\s*((?:K_[A-Z]+\s*,\s*)*K_[A-Z]+)`)
	keyRef   = regexp.MustCompile(`\bK_[A-Z]+\b`)
	keyIndex = regexp.MustCompile(`\bKEYS\[(\d+)\]`)
	nkeys    = regexp.MustCompile(`\bNKEYS\b`)
	comment  = regexp.MustCompile(`--.*`)
)

// keyNames maps the library's K_* locals to the event keys they name
// (K_<NAME> is the key named name, as lua.go binds them), and fails
// unless the library declares exactly those.
func keyNames(t *testing.T, lib string) map[string]EventKey {
	declared := map[string]bool{}
	for _, l := range keyLocal.FindAllString(lib, -1) {
		for _, v := range keyRef.FindAllString(l, -1) {
			declared[v] = true
		}
	}
	out := map[string]EventKey{}
	for i, n := range eventKeyNames {
		v := "K_" + strings.ToUpper(n)
		if !declared[v] {
			t.Fatalf("the library declares no %s for key %s", v, n)
		}
		out[v] = EventKey(i)
	}
	if len(declared) != len(out) {
		t.Fatalf("the library declares %d K_ locals, want the %d event keys", len(declared), len(out))
	}
	return out
}

// direct returns the event keys code uses (comments stripped), and fails
// on a K_* reference outside a recognised call.
func direct(t *testing.T, where, code string, names map[string]EventKey) map[EventKey]bool {
	used := map[EventKey]bool{}
	seen := 0
	for _, m := range keyCall.FindAllStringSubmatch(code, -1) {
		for _, k := range keyRef.FindAllString(m[2], -1) {
			seen++
			used[names[k]] = true
		}
	}
	if all := len(keyRef.FindAllString(code, -1)); all != seen {
		t.Errorf("%s: %d K_* references, %d of them in redis.call/bulk: pass keys only to those", where, all, seen)
	}
	return used
}

func keyList(set map[EventKey]bool) string {
	keys := slices.Sorted(maps.Keys(set))
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return "(" + strings.Join(out, ", ") + ")"
}

// usage is what a function's code does with its KEYS, through the
// library functions it calls.
type usage struct {
	event   map[EventKey]bool
	limits  bool         // reaches NKEYS: the keys after the event's
	indexed map[int]bool // KEYS[n] by number
}

// analyser reads the library's code once.
type analyser struct {
	t     *testing.T
	names map[string]EventKey
	funcs map[string]string // library function -> its code
}

func newAnalyser(t *testing.T) *analyser {
	lib := libText(false) // production's: the test clock reads a key of its own
	a := &analyser{t: t, names: keyNames(t, lib), funcs: map[string]string{}}
	code := keyLocal.ReplaceAllString(comment.ReplaceAllString(lib, ""), "")
	for _, m := range funcDecl.FindAllStringSubmatch(code, -1) {
		a.funcs[m[1]] = m[0]
	}
	if rest := funcDecl.ReplaceAllString(code, ""); keyRef.MatchString(rest) || keyIndex.MatchString(rest) {
		t.Errorf("the library uses a key outside its functions")
	}
	return a
}

func (a *analyser) use(where, code string) usage {
	u := usage{event: direct(a.t, where, code, a.names), indexed: map[int]bool{}}
	done := map[string]bool{}
	for todo := []string{code}; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		u.limits = u.limits || nkeys.MatchString(c)
		for _, m := range keyIndex.FindAllStringSubmatch(c, -1) {
			n, _ := strconv.Atoi(m[1])
			u.indexed[n] = true
		}
		for name, body := range a.funcs {
			if !done[name] && regexp.MustCompile(`\b`+name+`\(`).MatchString(c) {
				done[name] = true
				maps.Copy(u.event, direct(a.t, "library function "+name, body, a.names))
				todo = append(todo, body)
			}
		}
	}
	return u
}

func TestFunctionsTouchTheirDeclaredKeys(t *testing.T) {
	a := newAnalyser(t)
	checked := 0
	for _, f := range functions {
		u := a.use(f.name+".lua", comment.ReplaceAllString(Source(f.name), ""))
		if len(f.own) > 0 {
			want := map[int]bool{}
			for i := range f.own {
				want[i+1] = true
			}
			if !maps.Equal(u.indexed, want) || len(u.event) > 0 || u.limits {
				t.Errorf("%s: uses KEYS%v, event keys %s, limits %v; ops.go declares %d keys of its own %v",
					f.name, slices.Sorted(maps.Keys(u.indexed)), keyList(u.event), u.limits, len(f.own), f.own)
			}
			continue
		}
		checked++
		declared := map[EventKey]bool{}
		for _, k := range f.event {
			declared[k] = true
		}
		if !maps.Equal(u.event, declared) {
			t.Errorf("%s: touches %s, ops.go declares %s", f.name, keyList(u.event), keyList(declared))
		}
		if u.limits != f.limits {
			t.Errorf("%s: reaches the abuse-limit keys: %v, ops.go says limits: %v", f.name, u.limits, f.limits)
		}
		if len(u.indexed) > 0 {
			t.Errorf("%s: indexes KEYS by number %v: name event keys K_*", f.name, slices.Sorted(maps.Keys(u.indexed)))
		}
	}
	if checked < 15 {
		t.Fatalf("checked %d booking functions, want the 15+", checked)
	}
}

// TestKeysCheckFindsMistakes: the analysis above sees a key used through
// a library function, a limit key, and a key by number.
func TestKeysCheckFindsMistakes(t *testing.T) {
	a := newAnalyser(t)
	u := a.use("x", "local s = user_state(ARGV[1]) return limited(2, 0)")
	if got := keyList(u.event); got != "(waiting, state)" || !u.limits {
		t.Errorf("user_state and limited: keys %s, limits %v", got, u.limits)
	}
	u = a.use("x", "return redis.call('GET', KEYS[3])")
	if fmt.Sprint(slices.Sorted(maps.Keys(u.indexed))) != "[3]" {
		t.Errorf("KEYS[3]: indexed %v", u.indexed)
	}
}

// TestFunctionsTable: every operation's file is one entry of ops.go,
// every entry a file, and every file of lib/ a part of the library.
func TestFunctionsTable(t *testing.T) {
	scripts, _ := fs.Glob(files, "*.lua")
	var names []string
	for _, f := range functions {
		names = append(names, f.name+".lua")
	}
	slices.Sort(names)
	if !slices.Equal(names, scripts) {
		t.Errorf("ops.go declares %v, the files are %v", names, scripts)
	}
	parts, _ := fs.Glob(files, "lib/*.lua")
	var want []string
	for _, p := range libParts {
		want = append(want, "lib/"+p+".lua")
	}
	slices.Sort(want)
	if !slices.Equal(parts, want) {
		t.Errorf("libParts %v, the files of lib/ are %v", want, parts)
	}
}

// keysLine is the line of a script's header that names its KEYS, as
// ops.go declares them.
func keysLine(f declaration) string {
	var names []string
	if len(f.own) > 0 {
		for i, n := range f.own {
			names = append(names, fmt.Sprintf("%d %s", i+1, n))
		}
		return "-- KEYS: " + strings.Join(names, ", ") + " (ops.go)"
	}
	for _, k := range f.event {
		names = append(names, k.String())
	}
	line := "-- KEYS: " + strings.Join(names, ", ")
	if f.limits {
		line += ", then one per limit"
	}
	return line + " (ops.go)"
}

// TestHeadersNameTheirKeys: a script's header names the keys ops.go
// declares for it (the header is documentation: the table is what the
// function is given).
func TestHeadersNameTheirKeys(t *testing.T) {
	for _, f := range functions {
		want := keysLine(f)
		if !slices.Contains(strings.Split(Source(f.name), "\n"), want) {
			t.Errorf("%s.lua: the header must have the line\n%s", f.name, want)
		}
	}
}
