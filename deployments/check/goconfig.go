package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// EnvVar is one environment variable a service's Config reads, as its
// struct tag declares it. Both tag styles are understood: `env:"X"
// default:"d" required:"true"` and caarlos0/env's `env:"X,required"
// envDefault:"d"`; `secret:"true"` marks a value to mask.
type EnvVar struct {
	Default  *string `json:"default"` // nil: none
	Required bool    `json:"required"`
	Secret   bool    `json:"secret"`
	Field    string  `json:"-"` // the struct field, for messages
}

// pkgFiles is one parsed Go package (its non-test files).
type pkgFiles struct {
	dir   string
	files []*ast.File
}

func parseDir(dir string) (*pkgFiles, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &pkgFiles{dir: dir}
	fset := token.NewFileSet()
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.files = append(p.files, f)
	}
	return p, nil
}

// isMain reports whether the package is a main package.
func (p *pkgFiles) isMain() bool {
	return len(p.files) > 0 && p.files[0].Name.Name == "main"
}

// specs yields every spec of the package's tok declarations (token.TYPE,
// token.CONST) with the file that declares it.
func (p *pkgFiles) specs(tok token.Token) iter.Seq2[*ast.File, ast.Spec] {
	return func(yield func(*ast.File, ast.Spec) bool) {
		for _, f := range p.files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != tok {
					continue
				}
				for _, s := range g.Specs {
					if !yield(f, s) {
						return
					}
				}
			}
		}
	}
}

// structType finds the struct type declared as name, and its file.
func (p *pkgFiles) structType(name string) (*ast.StructType, *ast.File) {
	for f, s := range p.specs(token.TYPE) {
		ts := s.(*ast.TypeSpec)
		if st, ok := ts.Type.(*ast.StructType); ok && ts.Name.Name == name {
			return st, f
		}
	}
	return nil, nil
}

// importDir maps a selector's package name in file f to a directory of the
// repository (only this repository's packages are followed).
func importDir(root string, f *ast.File, pkgName string) string {
	const mod = "github.com/boxoffice/boxoffice/"
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := filepath.Base(path)
		if im.Name != nil {
			name = im.Name.Name
		}
		if name == pkgName && strings.HasPrefix(path, mod) {
			return filepath.Join(root, strings.TrimPrefix(path, mod))
		}
	}
	return ""
}

// configVars collects the env-tagged fields of struct name in p, walking
// into struct fields without an env tag (embedded or named, of this
// package or another package of the repository), as the loader does.
func configVars(root string, p *pkgFiles, name, prefix string, out map[string]EnvVar) error {
	st, file := p.structType(name)
	if st == nil {
		return fmt.Errorf("%s: no struct type %s", p.dir, name)
	}
	for _, fld := range st.Fields.List {
		var tag reflect.StructTag
		if fld.Tag != nil {
			s, _ := strconv.Unquote(fld.Tag.Value)
			tag = reflect.StructTag(s)
		}
		fieldName := ""
		if len(fld.Names) > 0 {
			fieldName = fld.Names[0].Name
		}
		env, hasEnv := tag.Lookup("env")
		if !hasEnv {
			typ := fld.Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			sub := prefix + tag.Get("envPrefix")
			switch t := typ.(type) {
			case *ast.Ident:
				if st, _ := p.structType(t.Name); st != nil {
					if err := configVars(root, p, t.Name, sub, out); err != nil {
						return err
					}
				}
			case *ast.SelectorExpr:
				x, ok := t.X.(*ast.Ident)
				if !ok || file == nil {
					continue
				}
				dir := importDir(root, file, x.Name)
				if dir == "" {
					continue
				}
				q, err := parseDir(dir)
				if err != nil {
					return err
				}
				if st, _ := q.structType(t.Sel.Name); st != nil {
					if err := configVars(root, q, t.Sel.Name, sub, out); err != nil {
						return err
					}
				}
			}
			continue
		}
		parts := strings.Split(env, ",")
		v := EnvVar{Field: fieldName, Secret: tag.Get("secret") == "true", Required: tag.Get("required") == "true"}
		for _, o := range parts[1:] {
			if o == "required" || o == "notEmpty" {
				v.Required = true
			}
		}
		if d, ok := tag.Lookup("default"); ok {
			v.Default = &d
		} else if d, ok := tag.Lookup("envDefault"); ok {
			v.Default = &d
		}
		if _, dup := out[prefix+parts[0]]; !dup {
			out[prefix+parts[0]] = v
		}
	}
	return nil
}

// serviceEnv is every variable services/<svc> reads: its Config's tags
// (with the structs it embeds), LOG_LEVEL and LOG_FORMAT when it runs under
// service.Main, and the default a service gives a field in code (a field
// set before loading, e.g. its own ADMIN_ADDR) in place of a tag default.
func serviceEnv(root, svc string) (map[string]EnvVar, error) {
	p, err := parseDir(filepath.Join(root, "services", svc))
	if err != nil {
		return nil, err
	}
	out := map[string]EnvVar{}
	if err := configVars(root, p, "Config", "", out); err != nil {
		return nil, err
	}
	if p.calls("service", "Main") {
		for k, d := range map[string]string{"LOG_LEVEL": "info", "LOG_FORMAT": "json"} {
			if _, ok := out[k]; !ok {
				out[k] = EnvVar{Default: &d, Field: "(service.Main)"}
			}
		}
	}
	for k, v := range out {
		if v.Default != nil || v.Field == "" {
			continue
		}
		if d, ok := p.codeDefault(v.Field); ok {
			v.Default, v.Required = &d, false
			out[k] = v
		}
	}
	return out, nil
}

// calls reports whether the package calls pkg.fn.
func (p *pkgFiles) calls(pkg, fn string) bool {
	found := false
	for _, f := range p.files {
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == fn {
					if x, ok := s.X.(*ast.Ident); ok && x.Name == pkg {
						found = true
					}
				}
			}
			return !found
		})
	}
	return found
}

// codeDefault finds a composite literal of the package setting field (as
// `Field: value`) to a value it can resolve: a string literal, a constant
// of the package, or a concatenation of those (a service's main presets
// its own ADMIN_ADDR this way: Common{AdminAddr: defaultAdminAddr}).
func (p *pkgFiles) codeDefault(field string) (string, bool) {
	var val string
	var ok bool
	for _, f := range p.files {
		ast.Inspect(f, func(n ast.Node) bool {
			kv, isKV := n.(*ast.KeyValueExpr)
			if !isKV || ok {
				return !ok
			}
			if k, isIdent := kv.Key.(*ast.Ident); isIdent && k.Name == field {
				val, ok = p.resolve(kv.Value)
			}
			return !ok
		})
	}
	return val, ok
}

// resolve evaluates a string expression: literals, constants of the
// package and concatenations.
func (p *pkgFiles) resolve(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, err := strconv.Unquote(x.Value)
			return s, err == nil
		}
	case *ast.Ident:
		if c := p.constValue(x.Name); c != nil {
			return p.resolve(c)
		}
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			a, ok1 := p.resolve(x.X)
			b, ok2 := p.resolve(x.Y)
			return a + b, ok1 && ok2
		}
	}
	return "", false
}

// constValue is the expression of the package-level constant name.
func (p *pkgFiles) constValue(name string) ast.Expr {
	for _, s := range p.specs(token.CONST) {
		vs := s.(*ast.ValueSpec)
		for i, n := range vs.Names {
			if n.Name == name && i < len(vs.Values) {
				return vs.Values[i]
			}
		}
	}
	return nil
}

// goServices lists the directories under services/ holding a main package.
func goServices(root string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, "services"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p, err := parseDir(filepath.Join(root, "services", e.Name()))
		if err != nil {
			return nil, err
		}
		if p.isMain() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}
