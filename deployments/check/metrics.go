package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// definedMetrics is the set of metric names the Go code (non-test files of
// lua, pkg, services and tools) can register. Names are built in a few
// ways, each read from the syntax: a full name in a string literal; the
// Namespace, Subsystem and Name of a prometheus *Opts literal (a Name that
// is not a literal is taken to be any string literal of the file: the
// helper's callers pass it); a literal prefix joined to any literal of
// the file ("boxoffice_event_" + name); and pkg/promx's factories, whose
// literal subsystem (promx.New(reg, "amqp")) names
// boxoffice_<subsystem>_<any literal of the file>.
func definedMetrics(root string) (map[string]bool, error) {
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, top := range []string{"lua", "pkg", "services", "tools"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			if !importsPrometheus(f) {
				return nil
			}
			fileMetrics(f, names)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}

func importsPrometheus(f *ast.File) bool {
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		if strings.HasPrefix(p, "github.com/prometheus/client_golang/") || p == "github.com/boxoffice/boxoffice/pkg/promx" {
			return true
		}
	}
	return false
}

func fileMetrics(f *ast.File, names map[string]bool) {
	lit := func(e ast.Expr) (string, bool) {
		b, ok := e.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(b.Value)
		return s, err == nil
	}
	var lits []string
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := lit(asExpr(n)); ok && metricName.MatchString(s) {
			lits = append(lits, s)
			names[s] = true
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CompositeLit:
			var ns, sub, name string
			nameLit := true
			hasName := false
			for _, el := range x.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				k, ok := kv.Key.(*ast.Ident)
				if !ok {
					continue
				}
				v, isLit := lit(kv.Value)
				switch k.Name {
				case "Namespace":
					ns = v
				case "Subsystem":
					sub = v
				case "Name":
					hasName, name, nameLit = true, v, isLit
				}
			}
			if !hasName || (ns == "" && sub == "") {
				return true
			}
			if nameLit {
				names[prometheus.BuildFQName(ns, sub, name)] = true
			} else {
				for _, l := range lits {
					names[prometheus.BuildFQName(ns, sub, l)] = true
				}
			}
		case *ast.CallExpr:
			if sub, ok := promxSubsystem(x, lit); ok {
				for _, l := range lits {
					names[prometheus.BuildFQName("boxoffice", sub, l)] = true
				}
			}
		case *ast.BinaryExpr:
			if p, ok := lit(x.X); ok && x.Op == token.ADD && strings.HasSuffix(p, "_") {
				for _, l := range lits {
					names[p+l] = true
				}
			}
		}
		return true
	})
}

// promxSubsystem is the literal subsystem of a call promx.New(reg, "sub")
// or promx.Shared(reg, "sub").
func promxSubsystem(call *ast.CallExpr, lit func(ast.Expr) (string, bool)) (string, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || len(call.Args) != 2 || (sel.Sel.Name != "New" && sel.Sel.Name != "Shared") {
		return "", false
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "promx" {
		return "", false
	}
	return lit(call.Args[1])
}

func asExpr(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}
