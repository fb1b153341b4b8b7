package lua

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// TestNumbersBecomeTextThroughInt holds the library's rule for writing numbers
// (docs/booking-engine.md "How numbers are written"): Lua's own
// conversion of a number to text (.. and tostring print %.14g, which is
// exponent form above 10^14 and loses the digits past 14: a rebuilt
// event's join sequences start near 1.8e15) is never used, and
// string.format only inside lib/base.lua's int(n), the one way a number
// becomes part of a key, field or value.
//
// It parses the library as Redis loads it (lib/'s files, then every script as
// the body of a function; gopher-lua's parser, Lua 5.1 like Redis's) and
// infers what kind of value every expression may hold: strings, numbers,
// nil, tables (with their fields and elements) and functions, following
// locals, upvalues, the parameters of lib/'s functions (from every
// call), their results, and what each Redis command and library function
// answers. An operand of .. (or tostring's argument) must be a string
// (or nil, which fails loudly); one that may be a number, or whose kind
// the inference cannot tell, fails the test: write int(n).
func TestNumbersBecomeTextThroughInt(t *testing.T) {
	src, where := librarySource()
	chunk, err := parse.Parse(strings.NewReader(src), "library")
	if err != nil {
		t.Fatalf("parse the library: %v", err)
	}
	a := newAnalysis()
	a.run(chunk)
	if a.concats < 80 {
		t.Fatalf("checked %d uses of .., want the scripts' 80 and more", a.concats)
	}
	t.Logf("%d uses of .. checked", a.concats)
	for _, p := range a.problems {
		t.Errorf("%s: %s", where(p.line), p.msg)
	}
}

// TestNumbersCheckFindsNumbers: the check above finds what it is for, in
// each way a number reaches text.
func TestNumbersCheckFindsNumbers(t *testing.T) {
	lib := `local function num(v) return tonumber(v) or 0 end
local INT_FORMAT
local function int(n) return string.format('%d', n) end
local function seq_of(user) return num(redis.call('HGET', 'k', user)) end
local function rec(user) return {user = user, seq = seq_of(user)} end
local function pay(p, status) redis.call('HSET', 'k', 'f', p.user .. '|' .. int(p.seq) .. '|' .. status) end
`
	for _, c := range []struct{ name, code string }{
		{"a sequence", `local seq = seq_of(ARGV[1]) return 'x:' .. seq`},
		{"a time", `local now = tonumber(ARGV[2]) redis.call('HSET', 'k', 'f', ARGV[1] .. '|' .. now)`},
		{"arithmetic", `return ARGV[1] .. (#ARGV + 1)`},
		{"a count", `return 'n=' .. redis.call('ZCARD', 'k')`},
		{"a table's field", `local function f(p) return p.user .. p.seq end return f(rec(ARGV[1]))`},
		{"a list's element", `local l = {} l[#l + 1] = tonumber(ARGV[1]) return 'x' .. l[1]`},
		{"a parameter", `local function f(a) return 'x' .. a end return f(#ARGV)`},
		{"tostring", `return tostring(seq_of(ARGV[1]))`},
		{"string.format", `return string.format('%.0f', seq_of(ARGV[1]))`},
		{"unknown", `return 'x' .. cjson.decode(ARGV[1])`},
	} {
		src := lib + "local function op_x()\n" + c.code + "\nend\n"
		chunk, err := parse.Parse(strings.NewReader(src), c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a := newAnalysis()
		a.run(chunk)
		if len(a.problems) == 0 {
			t.Errorf("%s: no problem found in %q", c.name, c.code)
		}
	}
	ok := lib + "local function op_x()\n" + `local seq = seq_of(ARGV[1])
local s = int(seq)
local v = redis.call('HGET', 'k', ARGV[1]) or ''
pay(rec(ARGV[1]), 'pending')
return 'x:' .. s .. ':' .. ARGV[1] .. v .. int(#ARGV)` + "\nend\n"
	chunk, err := parse.Parse(strings.NewReader(ok), "ok")
	if err != nil {
		t.Fatal(err)
	}
	a := newAnalysis()
	a.run(chunk)
	for _, p := range a.problems {
		t.Errorf("correct code reported: line %d: %s", p.line, p.msg)
	}
}

// librarySource is the library as lua.go builds it, without its first
// line (the #!lua shebang) and the registrations (no number in them):
// lib/'s files, then each script as the body of local function op_<name>.
// where names a line of it as file:line.
func librarySource() (string, func(int) string) {
	type part struct {
		file  string
		first int // the part's first line in the whole
		skip  int // lines before the file's first
	}
	var b strings.Builder
	var parts []part
	line := 1
	add := func(file, head, text string) {
		parts = append(parts, part{file, line, strings.Count(head, "\n")})
		b.WriteString(head)
		b.WriteString(text)
		b.WriteString("\n")
		line += strings.Count(head, "\n") + strings.Count(text, "\n") + 1
	}
	for _, p := range libParts {
		add("lib/"+p+".lua", "", strings.TrimSuffix(Source("lib/"+p), "\n"))
	}
	all, _ := fs.Glob(files, "*.lua")
	for _, f := range all {
		op := strings.TrimSuffix(f, ".lua")
		add(f, "local function op_"+op+"()\n", Source(op)+"\nend")
	}
	return b.String(), func(n int) string {
		for i := len(parts) - 1; i >= 0; i-- {
			if p := parts[i]; n >= p.first {
				return fmt.Sprintf("%s:%d", p.file, n-p.first-p.skip+1)
			}
		}
		return fmt.Sprintf("line %d", n)
	}
}

// kind is what a Lua value may be, a set.
type kind uint8

const (
	kStr kind = 1 << iota
	kNum
	kNil // nil or false (a Redis nil reply is false)
	kBool
	kTable
	kFunc
	kAny // the inference cannot tell
)

func (k kind) String() string {
	var out []string
	for i, n := range []string{"string", "number", "nil", "boolean", "table", "function", "unknown"} {
		if k&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, " or ")
}

// shape is what an expression or variable may hold: its kinds and, for a
// table, what its elements and named fields may hold; for a function, the
// function (one of lib/'s, or a built-in by name).
type shape struct {
	k       kind
	elem    *shape
	fields  map[string]*shape
	fn      *function
	builtin string // a library table ("string") or function ("string.format")
}

func of(k kind) *shape { return &shape{k: k} }

// join widens dst by src; it reports whether dst changed.
func join(dst, src *shape, depth int) bool {
	if src == nil || depth > 4 {
		return false
	}
	changed := false
	if dst.k|src.k != dst.k {
		dst.k |= src.k
		changed = true
	}
	if src.elem != nil {
		if dst.elem == nil {
			dst.elem, changed = &shape{}, true
		}
		changed = join(dst.elem, src.elem, depth+1) || changed
	}
	for _, name := range slices.Sorted(maps.Keys(src.fields)) {
		if dst.fields == nil {
			dst.fields = map[string]*shape{}
		}
		if dst.fields[name] == nil {
			dst.fields[name], changed = &shape{}, true
		}
		changed = join(dst.fields[name], src.fields[name], depth+1) || changed
	}
	if src.fn != nil && dst.fn == nil {
		dst.fn, changed = src.fn, true
	}
	if src.builtin != "" && dst.builtin == "" {
		dst.builtin, changed = src.builtin, true
	}
	return changed
}

// function is one Lua function of the library: its parameters (joined
// from every call) and results (from every return), by position.
type function struct {
	name    string
	params  []*shape
	results []*shape
}

func (f *function) result(i int) *shape {
	for len(f.results) <= i {
		f.results = append(f.results, &shape{})
	}
	return f.results[i]
}

type scope struct {
	vars   map[string]*shape
	parent *scope
}

func (s *scope) lookup(name string) *shape {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v
		}
	}
	return nil
}

type problem struct {
	line int
	msg  string
}

// analysis infers shapes by running over the chunk until nothing widens
// (every variable's shape is the union of all it is assigned anywhere:
// flow-insensitive), then once more to report.
type analysis struct {
	vars     map[any]*shape // a declaration (statement, name index) -> its variable
	funcs    map[*ast.FunctionExpr]*function
	changed  bool
	report   bool
	inFunc   []*function
	problems []problem
	concats  int
}

type declKey struct {
	node any
	i    int
}

func newAnalysis() *analysis {
	return &analysis{vars: map[any]*shape{}, funcs: map[*ast.FunctionExpr]*function{}}
}

func (a *analysis) run(chunk []ast.Stmt) {
	for range 50 {
		a.changed = false
		a.block(chunk, &scope{vars: map[string]*shape{}})
		if !a.changed {
			break
		}
	}
	a.report = true
	a.block(chunk, &scope{vars: map[string]*shape{}})
}

func (a *analysis) widen(dst, src *shape) {
	if join(dst, src, 0) {
		a.changed = true
	}
}

func (a *analysis) problem(line int, format string, args ...any) {
	if a.report {
		a.problems = append(a.problems, problem{line, fmt.Sprintf(format, args...)})
	}
}

// declare makes the variable of declaration (node, i) in sc.
func (a *analysis) declare(sc *scope, node any, i int, name string) *shape {
	k := declKey{node, i}
	v := a.vars[k]
	if v == nil {
		v = &shape{}
		a.vars[k] = v
	}
	sc.vars[name] = v
	return v
}

func (a *analysis) block(stmts []ast.Stmt, parent *scope) {
	sc := &scope{vars: map[string]*shape{}, parent: parent}
	for _, st := range stmts {
		a.stmt(st, sc)
	}
}

func (a *analysis) stmt(st ast.Stmt, sc *scope) {
	switch s := st.(type) {
	case *ast.LocalAssignStmt:
		if len(s.Names) == 1 && len(s.Exprs) == 1 {
			if _, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
				// local function f: f is in scope in its own body
				v := a.declare(sc, s, 0, s.Names[0])
				a.widen(v, a.function(s.Exprs[0].(*ast.FunctionExpr), s.Names[0], sc))
				return
			}
		}
		vals := a.exprs(s.Exprs, sc, len(s.Names))
		for i, name := range s.Names {
			v := a.declare(sc, s, i, name)
			a.widen(v, vals[i])
			if len(s.Exprs) == 0 && (name == "KEYS" || name == "ARGV" || name == "NKEYS") {
				// the library's: the registration sets them to the call's
				a.widen(v, global(name))
			}
		}
	case *ast.AssignStmt:
		vals := a.exprs(s.Rhs, sc, len(s.Lhs))
		for i, lhs := range s.Lhs {
			a.assign(lhs, vals[i], sc)
		}
	case *ast.FuncCallStmt:
		a.expr(s.Expr, sc)
	case *ast.DoBlockStmt:
		a.block(s.Stmts, sc)
	case *ast.WhileStmt:
		a.expr(s.Condition, sc)
		a.block(s.Stmts, sc)
	case *ast.RepeatStmt:
		inner := &scope{vars: map[string]*shape{}, parent: sc}
		for _, x := range s.Stmts {
			a.stmt(x, inner)
		}
		a.expr(s.Condition, inner)
	case *ast.IfStmt:
		a.expr(s.Condition, sc)
		a.block(s.Then, sc)
		a.block(s.Else, sc)
	case *ast.NumberForStmt:
		a.expr(s.Init, sc)
		a.expr(s.Limit, sc)
		if s.Step != nil {
			a.expr(s.Step, sc)
		}
		inner := &scope{vars: map[string]*shape{}, parent: sc}
		a.widen(a.declare(inner, s, 0, s.Name), of(kNum))
		a.block(s.Stmts, inner)
	case *ast.GenericForStmt:
		inner := &scope{vars: map[string]*shape{}, parent: sc}
		vals := a.iterate(s.Exprs, sc, len(s.Names))
		for i, name := range s.Names {
			a.widen(a.declare(inner, s, i, name), vals[i])
		}
		a.block(s.Stmts, inner)
	case *ast.FuncDefStmt:
		// function a.b() / function g(): a global, not used by the scripts
		a.problem(s.Line(), "a global function: declare functions local")
		a.function(s.Func, "global", sc)
	case *ast.ReturnStmt:
		if n := len(a.inFunc); n > 0 {
			f := a.inFunc[n-1]
			vals := a.exprs(s.Exprs, sc, len(s.Exprs))
			for i, v := range vals {
				a.widen(f.result(i), v)
			}
		} else {
			a.exprs(s.Exprs, sc, 0)
		}
	case *ast.BreakStmt:
	default:
		a.problem(st.Line(), "statement %T not understood by the check", st)
	}
}

// assign widens what lhs names by v.
func (a *analysis) assign(lhs ast.Expr, v *shape, sc *scope) {
	switch l := lhs.(type) {
	case *ast.IdentExpr:
		if dst := sc.lookup(l.Value); dst != nil {
			a.widen(dst, v)
		}
		// (a global: KEYS, ARGV and NKEYS are set by the registration)
	case *ast.AttrGetExpr:
		t := a.expr(l.Object, sc)
		// the table is a variable's (or a field's) shape: widen it there
		if key, ok := l.Key.(*ast.StringExpr); ok {
			a.widen(t, &shape{k: kTable, fields: map[string]*shape{key.Value: v}})
		} else {
			a.expr(l.Key, sc)
			a.widen(t, &shape{k: kTable, elem: v})
		}
	}
}

// function analyses a function's body in sc and returns its value.
func (a *analysis) function(fe *ast.FunctionExpr, name string, sc *scope) *shape {
	f := a.funcs[fe]
	if f == nil {
		f = &function{name: name}
		for range fe.ParList.Names {
			f.params = append(f.params, &shape{})
		}
		a.funcs[fe] = f
	}
	inner := &scope{vars: map[string]*shape{}, parent: sc}
	for i, p := range fe.ParList.Names {
		inner.vars[p] = f.params[i]
	}
	if fe.ParList.HasVargs {
		inner.vars["..."] = of(kAny)
	}
	a.inFunc = append(a.inFunc, f)
	a.block(fe.Stmts, inner)
	a.inFunc = a.inFunc[:len(a.inFunc)-1]
	return &shape{k: kFunc, fn: f}
}

// exprs evaluates a list of expressions to at least n values: the last
// one, a call, gives all its results (Lua's multiple results).
func (a *analysis) exprs(list []ast.Expr, sc *scope, n int) []*shape {
	var out []*shape
	for i, e := range list {
		if i == len(list)-1 {
			if call, ok := e.(*ast.FuncCallExpr); ok {
				out = append(out, a.call(call, sc)...)
				break
			}
		}
		out = append(out, a.expr(e, sc))
	}
	for len(out) < n {
		out = append(out, of(kNil))
	}
	return out
}

// iterate is what the names of a generic for get from its iterator.
func (a *analysis) iterate(list []ast.Expr, sc *scope, n int) []*shape {
	out := make([]*shape, n)
	for i := range out {
		out[i] = of(kAny)
	}
	if len(list) == 1 {
		if call, ok := list[0].(*ast.FuncCallExpr); ok {
			fn := a.expr(call.Func, sc)
			args := a.exprs(call.Args, sc, len(call.Args))
			switch fn.builtin {
			case "ipairs", "pairs":
				out[0] = of(kNum)
				if fn.builtin == "pairs" {
					out[0] = of(kAny)
				}
				if n > 1 && len(args) > 0 && args[0].elem != nil {
					out[1] = args[0].elem
				}
				return out
			case "string.gmatch":
				for i := range out {
					out[i] = of(kStr)
				}
				return out
			}
		}
	}
	a.exprs(list, sc, 0)
	return out
}

// expr evaluates e to its first value.
func (a *analysis) expr(e ast.Expr, sc *scope) *shape {
	switch x := e.(type) {
	case *ast.NilExpr, *ast.FalseExpr:
		return of(kNil)
	case *ast.TrueExpr:
		return of(kBool)
	case *ast.NumberExpr:
		return of(kNum)
	case *ast.StringExpr:
		return of(kStr)
	case *ast.Comma3Expr:
		return of(kAny)
	case *ast.IdentExpr:
		if v := sc.lookup(x.Value); v != nil {
			return v
		}
		return global(x.Value)
	case *ast.AttrGetExpr:
		obj := a.expr(x.Object, sc)
		if key, ok := x.Key.(*ast.StringExpr); ok {
			if obj.builtin != "" && obj.k == kTable {
				return &shape{k: kFunc, builtin: obj.builtin + "." + key.Value}
			}
			if f := obj.fields[key.Value]; f != nil {
				return f
			}
			if obj.k&kAny != 0 {
				return of(kAny)
			}
			return &shape{} // never assigned: the check below reports it
		}
		a.expr(x.Key, sc)
		if obj.elem != nil {
			return obj.elem
		}
		if obj.k&kAny != 0 {
			return of(kAny)
		}
		return &shape{} // nothing stored yet (the fixpoint widens it)
	case *ast.TableExpr:
		t := &shape{k: kTable}
		for _, f := range x.Fields {
			if key, ok := f.Key.(*ast.StringExpr); ok {
				if t.fields == nil {
					t.fields = map[string]*shape{}
				}
				t.fields[key.Value] = a.expr(f.Value, sc)
				continue
			}
			if f.Key != nil {
				a.expr(f.Key, sc)
			}
			if t.elem == nil {
				t.elem = &shape{}
			}
			join(t.elem, a.expr(f.Value, sc), 0)
		}
		return t
	case *ast.FuncCallExpr:
		return a.call(x, sc)[0]
	case *ast.LogicalOpExpr:
		l, r := a.expr(x.Lhs, sc), a.expr(x.Rhs, sc)
		out := &shape{}
		if x.Operator == "or" {
			// a or b: a when it is not nil or false, else b
			join(out, l, 0)
			out.k &^= kNil
			if l.k&kBool != 0 {
				out.k &^= kBool
				out.k |= kBool
			}
			join(out, r, 0)
			return out
		}
		// a and b: a when it is nil or false, else b
		join(out, r, 0)
		out.k |= l.k & (kNil | kBool)
		return out
	case *ast.RelationalOpExpr:
		a.expr(x.Lhs, sc)
		a.expr(x.Rhs, sc)
		return of(kBool)
	case *ast.ArithmeticOpExpr:
		a.expr(x.Lhs, sc)
		a.expr(x.Rhs, sc)
		return of(kNum)
	case *ast.UnaryMinusOpExpr:
		a.expr(x.Expr, sc)
		return of(kNum)
	case *ast.UnaryLenOpExpr:
		a.expr(x.Expr, sc)
		return of(kNum)
	case *ast.UnaryNotOpExpr:
		a.expr(x.Expr, sc)
		return of(kBool)
	case *ast.StringConcatOpExpr:
		if a.report {
			a.concats++
		}
		for _, side := range []ast.Expr{x.Lhs, x.Rhs} {
			v := a.expr(side, sc)
			if !textual(v) {
				a.problem(side.Line(), "%s joined with .. may be %s: Lua writes a number with %%.14g (1.795811857885e+15); write int(n)",
					describe(side), v.k)
			}
		}
		return of(kStr)
	case *ast.FunctionExpr:
		return a.function(x, "anonymous", sc)
	}
	a.problem(e.Line(), "expression %T not understood by the check", e)
	return of(kAny)
}

// textual: a value .. may join without a number's conversion: a string,
// or nil/false (which fail loudly instead of writing a wrong number).
func textual(v *shape) bool { return v.k != 0 && v.k&^(kStr|kNil) == 0 }

// describe is a short text of e for a message.
func describe(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.IdentExpr:
		return "'" + x.Value + "'"
	case *ast.AttrGetExpr:
		if k, ok := x.Key.(*ast.StringExpr); ok {
			return describe(x.Object) + "." + k.Value
		}
		return describe(x.Object) + "[...]"
	case *ast.FuncCallExpr:
		return "the result of " + describe(x.Func)
	}
	return fmt.Sprintf("an expression (%T)", e)
}

// global is the shape of a name no local declares.
func global(name string) *shape {
	switch name {
	case "ARGV", "KEYS":
		return &shape{k: kTable, elem: of(kStr)}
	case "NKEYS":
		return of(kNum)
	case "string", "math", "table", "redis", "cjson", "bit", "struct", "cmsgpack", "os":
		return &shape{k: kTable, builtin: name}
	case "tonumber", "tostring", "type", "ipairs", "pairs", "unpack", "select", "error", "assert",
		"next", "pcall", "rawget", "rawset", "setmetatable", "getmetatable":
		return &shape{k: kFunc, builtin: name}
	}
	return of(kAny)
}

// call evaluates a call to all its results (at least one).
func (a *analysis) call(c *ast.FuncCallExpr, sc *scope) []*shape {
	if c.Receiver != nil { // obj:method(...): not used by the scripts
		a.expr(c.Receiver, sc)
		a.exprs(c.Args, sc, 0)
		return []*shape{of(kAny)}
	}
	fn := a.expr(c.Func, sc)
	args := a.exprs(c.Args, sc, len(c.Args))
	if fn.fn != nil {
		f := fn.fn
		for i, p := range f.params {
			v := of(kNil)
			if i < len(args) {
				v = args[i]
			}
			a.widen(p, v)
		}
		if len(f.results) == 0 {
			return []*shape{{}} // no result seen yet (the fixpoint widens it)
		}
		return f.results
	}
	if fn.builtin == "" {
		if fn.k&kAny == 0 {
			a.problem(c.Line(), "a call of %s, which is %s", describe(c.Func), fn.k)
		}
		return []*shape{of(kAny)}
	}
	arg := func(i int) *shape {
		if i < len(args) {
			return args[i]
		}
		return of(kNil)
	}
	inInt := len(a.inFunc) > 0 && a.inFunc[len(a.inFunc)-1].name == "int"
	switch fn.builtin {
	case "tonumber":
		return []*shape{of(kNum | kNil)}
	case "tostring":
		if !textual(arg(0)) {
			a.problem(c.Line(), "tostring of %s, which may be %s: Lua writes a number with %%.14g; write int(n)", describe(c.Args[0]), arg(0).k)
		}
		return []*shape{of(kStr)}
	case "string.format":
		if !inInt {
			a.problem(c.Line(), "string.format outside lib/base.lua's int: numbers become text through int(n) only")
		}
		return []*shape{of(kStr)}
	case "type", "string.sub", "string.rep", "string.lower", "string.upper", "string.char", "table.concat",
		"redis.sha1hex", "cjson.encode":
		return []*shape{of(kStr)}
	case "string.gsub":
		return []*shape{of(kStr), of(kNum)}
	case "string.match":
		return []*shape{of(kStr | kNil), of(kStr | kNil), of(kStr | kNil), of(kStr | kNil), of(kStr | kNil), of(kStr | kNil)}
	case "string.find":
		return []*shape{of(kNum | kNil), of(kNum | kNil)}
	case "string.byte", "string.len":
		return []*shape{of(kNum)}
	case "error", "redis.log", "redis.register_function", "redis.setresp", "redis.set_repl", "redis.replicate_commands":
		return []*shape{of(kNil)}
	case "redis.call", "redis.pcall":
		cmd := ""
		if len(c.Args) > 0 {
			if s, ok := c.Args[0].(*ast.StringExpr); ok {
				cmd = strings.ToUpper(s.Value)
			}
		}
		return []*shape{reply(cmd)}
	}
	if strings.HasPrefix(fn.builtin, "math.") {
		return []*shape{of(kNum)}
	}
	return []*shape{of(kAny)}
}

// reply is the shape of a Redis command's reply in Lua: an integer reply
// a number, a bulk string a string (a nil reply false), an array a table
// of strings.
func reply(cmd string) *shape {
	switch cmd {
	case "INCR", "INCRBY", "DECR", "DECRBY", "HINCRBY", "HLEN", "HSET", "HSETNX", "HDEL", "HEXISTS", "EXISTS",
		"DEL", "UNLINK", "ZCARD", "ZCOUNT", "ZADD", "ZREM", "LLEN", "RPUSH", "LPUSH", "SETRANGE", "SADD", "SREM",
		"SCARD", "EXPIRE", "PEXPIRE", "STRLEN", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK":
		return of(kNum)
	case "ZRANK", "LPOS":
		return of(kNum | kNil)
	case "GET", "HGET", "ZSCORE", "ZINCRBY", "LINDEX", "GETRANGE":
		return of(kStr | kNil)
	case "SET":
		return of(kTable | kNil)
	case "HGETALL", "HMGET", "MGET", "ZRANGE", "ZRANGEBYSCORE", "ZREVRANGE", "ZPOPMIN", "ZPOPMAX", "LRANGE",
		"ZMSCORE", "HKEYS", "HVALS", "SMEMBERS":
		return &shape{k: kTable, elem: of(kStr | kNil)}
	}
	return of(kAny)
}
