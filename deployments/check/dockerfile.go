package main

import (
	"fmt"
	"go/version"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// dockerfile is a Dockerfile's instructions: comment lines dropped,
// continuation lines joined, each split into its keyword (upper case) and
// arguments.
type dockerfile struct {
	path  string
	lines []instruction
}

type instruction struct {
	cmd, args string
}

func readDockerfile(path string) (*dockerfile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := &dockerfile{path: path}
	joined := regexp.MustCompile(`\\\r?\n`).ReplaceAllString(string(b), " ")
	for _, l := range strings.Split(joined, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		cmd, args, _ := strings.Cut(l, " ")
		d.lines = append(d.lines, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
	}
	return d, nil
}

var argRef = regexp.MustCompile(`\$\{(\w+)\}`)

// check reports what is wrong with the Dockerfile: it must be a multi-stage
// build whose Go image is at least go.work's go version, copy go.work and
// every module of the workspace (and only paths that exist), build with
// CGO_ENABLED=0 and -trimpath, and end on a non-root user.
func (d *dockerfile) check(root, goVersion string, modules []string) []string {
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	args := map[string]string{}
	var froms []int
	var copied []string
	for i, l := range d.lines {
		switch l.cmd {
		case "ARG":
			if k, v, ok := strings.Cut(l.args, "="); ok {
				if _, seen := args[k]; !seen {
					args[k] = v
				}
			}
		case "FROM":
			froms = append(froms, i)
			img := argRef.ReplaceAllStringFunc(strings.Fields(l.args)[0], func(m string) string { return args[m[2:len(m)-1]] })
			if v, ok := strings.CutPrefix(img, "golang:"); ok {
				v, _, _ = strings.Cut(v, "-")
				if versionLess(v, goVersion) {
					fail("builder %s is older than go.work's go %s", img, goVersion)
				}
			}
		case "COPY":
			if strings.Contains(l.args, "--from=") {
				continue
			}
			var parts []string
			for _, p := range strings.Fields(l.args) {
				if !strings.HasPrefix(p, "--") {
					parts = append(parts, p)
				}
			}
			for _, src := range parts[:max(len(parts)-1, 0)] {
				copied = append(copied, strings.TrimSuffix(src, "/"))
				if m, _ := filepath.Glob(filepath.Join(root, src)); len(m) == 0 && !strings.HasSuffix(src, "*") {
					fail("COPY source %s does not exist", src)
				}
			}
		}
	}
	if len(froms) < 2 {
		fail("not a multi-stage build")
	}
	if len(froms) > 0 {
		final := d.lines[froms[len(froms)-1]:]
		base := strings.Fields(final[0].args)[0]
		var users []string
		for _, l := range final {
			if l.cmd == "USER" {
				users = append(users, l.args)
			}
		}
		if len(users) == 0 && !strings.Contains(base, "nonroot") {
			fail("final stage sets no USER (must not run as root)")
		}
		for _, u := range users {
			if n, _, _ := strings.Cut(u, ":"); n == "root" || n == "0" {
				fail("final stage runs as %s", u)
			}
		}
	}
	for _, m := range modules {
		in := false
		for _, c := range copied {
			in = in || m == c || strings.HasPrefix(m, c+"/")
		}
		if !in {
			fail("workspace module %s (go.work) is not copied into the build", m)
		}
	}
	if !slices.Contains(copied, "go.work") {
		fail("go.work is not copied")
	}
	builds := d.goBuilds()
	if len(builds) == 0 {
		fail("no RUN ... go build line")
	}
	for _, b := range builds {
		if !strings.Contains(b, "CGO_ENABLED=0") || !strings.Contains(b, "-trimpath") {
			fail("go build must use CGO_ENABLED=0 and -trimpath: %s", b)
		}
	}
	return errs
}

// goBuilds are the Dockerfile's `RUN ... go build` command lines, without
// their --mount flags.
func (d *dockerfile) goBuilds() []string {
	var out []string
	mount := regexp.MustCompile(`--mount=\S+\s*`)
	for _, l := range d.lines {
		if l.cmd == "RUN" && strings.Contains(" "+l.args+" ", " go build ") {
			out = append(out, strings.TrimSpace(mount.ReplaceAllString(l.args, "")))
		}
	}
	return out
}

// versionLess compares the language versions (major.minor) of two Go
// versions ("1.26", "1.26.0").
func versionLess(a, b string) bool {
	return version.Compare(version.Lang("go"+a), version.Lang("go"+b)) < 0
}
