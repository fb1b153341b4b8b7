package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v4"

	"github.com/boxoffice/boxoffice/pkg/events"
)

// problems collects the findings of a check, each "where: what".
type problems []string

func (p *problems) add(where, format string, a ...any) {
	*p = append(*p, where+": "+fmt.Sprintf(format, a...))
}

// workspace is go.work's go version and module directories (relative to
// the repository root), read with `go work edit -json`.
func workspace(root string) (goVersion string, modules []string, err error) {
	cmd := exec.Command("go", "work", "edit", "-json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("go work edit -json: %w", err)
	}
	var w struct {
		Go  string
		Use []struct{ DiskPath string }
	}
	if err := json.Unmarshal(out, &w); err != nil {
		return "", nil, err
	}
	for _, u := range w.Use {
		modules = append(modules, filepath.ToSlash(filepath.Clean(u.DiskPath)))
	}
	return w.Go, modules, nil
}

// loadCompose loads a compose file with compose-go, interpolating with the
// file's own defaults only (the check must not depend on the caller's
// environment or a .env file); relative paths stay relative to root.
func loadCompose(root, path string) (*types.Project, error) {
	o, err := cli.NewProjectOptions([]string{path}, cli.WithWorkingDirectory(root), cli.WithResolvedPaths(false))
	if err != nil {
		return nil, err
	}
	return o.LoadProject(context.Background())
}

// built is a compose service built from a Go service's code.
type built struct {
	svc        string // directory under services/
	dockerfile string
	adminPort  string // of its effective ADMIN_ADDR
}

// composeResult is what the compose check learnt, for the checks that
// follow it (Prometheus, the image builds).
type composeResult struct {
	project     *types.Project
	built       map[string]built // by compose service name
	dockerfiles map[string]*dockerfile
}

// checkCompose checks the compose file at path (relative to root or
// absolute) against the repository: see the package comment for the list.
func checkCompose(root, path string) (*composeResult, problems) {
	var errs problems
	cf := filepath.Base(path)
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	proj, err := loadCompose(root, path)
	if err != nil {
		errs.add(cf, "does not load: %v", err)
		return nil, errs
	}
	if len(proj.Services) == 0 {
		errs.add(cf, "no services")
		return nil, errs
	}
	goVersion, modules, err := workspace(root)
	if err != nil {
		errs.add("go.work", "%v", err)
		return nil, errs
	}
	goSvcs, err := goServices(root)
	if err != nil {
		errs.add("services", "%v", err)
		return nil, errs
	}
	res := &composeResult{project: proj, built: map[string]built{}, dockerfiles: map[string]*dockerfile{}}

	for _, name := range slices.Sorted(maps.Keys(proj.Services)) {
		s := proj.Services[name]
		where := cf + ": " + name
		for d, dep := range s.DependsOn {
			target, ok := proj.Services[d]
			if !ok {
				errs.add(where, "depends_on %s: no such service", d)
				continue
			}
			switch dep.Condition {
			case "", types.ServiceConditionStarted, types.ServiceConditionCompletedSuccessfully:
			case types.ServiceConditionHealthy:
				if target.HealthCheck == nil || target.HealthCheck.Disable {
					errs.add(where, "depends_on %s with service_healthy, but %s has no healthcheck", d, d)
				}
			default:
				errs.add(where, "depends_on %s: unknown condition %s", d, dep.Condition)
			}
		}
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			src := v.Source
			if !filepath.IsAbs(src) {
				src = filepath.Join(root, src)
			}
			if _, err := os.Stat(src); err != nil {
				errs.add(where, "volume source %s does not exist", v.Source)
			}
		}
		if s.Build == nil {
			if s.Image == "" {
				errs.add(where, "neither build nor image")
			}
			if s.HealthCheck == nil && s.Restart != types.RestartPolicyNo {
				errs.add(where, "infrastructure service without a healthcheck")
			}
			continue
		}
		ctx := s.Build.Context
		if !filepath.IsAbs(ctx) {
			ctx = filepath.Join(root, ctx)
		}
		if st, err := os.Stat(ctx); err != nil || !st.IsDir() {
			errs.add(where, "build context %s does not exist", s.Build.Context)
			continue
		}
		df := filepath.Join(ctx, cmp.Or(s.Build.Dockerfile, "Dockerfile"))
		if _, seen := res.dockerfiles[df]; !seen {
			d, err := readDockerfile(df)
			if err != nil {
				errs.add(where, "Dockerfile: %v", err)
				continue
			}
			res.dockerfiles[df] = d
			rel, _ := filepath.Rel(root, df)
			for _, e := range d.check(root, goVersion, modules) {
				errs.add(rel, "%s", e)
			}
		}
		svc := ""
		if a := s.Build.Args["SERVICE"]; a != nil {
			svc = *a
		}
		switch {
		case svc == "":
			errs.add(where, "build has no SERVICE arg")
			continue
		case !isDir(filepath.Join(root, "services", svc)):
			errs.add(where, "SERVICE=%s: services/%s does not exist", svc, svc)
			continue
		case !slices.Contains(goSvcs, svc):
			errs.add(where, "SERVICE=%s: services/%s holds no main package", svc, svc)
			continue
		}
		vars, err := serviceEnv(root, svc)
		if err != nil {
			errs.add(where, "services/%s: %v", svc, err)
			continue
		}
		env := map[string]string{}
		for k, v := range s.Environment {
			if v != nil {
				env[k] = *v
			} else {
				env[k] = ""
			}
		}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			if _, ok := vars[k]; !ok {
				errs.add(where, "environment %s is not read by services/%s (its Config has no env:%q)", k, svc, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			if v := vars[k]; v.Required && (v.Default == nil || *v.Default == "") && env[k] == "" {
				errs.add(where, "%s is required by services/%s and not set", k, svc)
			}
		}
		effective := func(k string) string {
			if env[k] != "" {
				return env[k]
			}
			if v, ok := vars[k]; ok && v.Default != nil {
				return *v.Default
			}
			return ""
		}
		// The gateway's abuse limits stay on (docs/security.md, "The
		// default abuse limits"): the stack may size them, not turn them off.
		for _, k := range []string{"RATE_JOINS_PER_MINUTE_PER_IP", "RATE_REQUESTS_PER_SECOND_PER_USER"} {
			if _, ok := vars[k]; ok {
				if n, err := strconv.Atoi(strings.TrimSpace(effective(k))); err == nil && n <= 0 {
					errs.add(where, "%s=%s turns an abuse limit off", k, effective(k))
				}
			}
		}
		admin, http := portOf(effective("ADMIN_ADDR")), portOf(effective("HTTP_ADDR"))
		for _, p := range s.Ports {
			t := fmt.Sprint(p.Target)
			if t != admin && t != http {
				errs.add(where, "publishes container port %s, but the service listens on %q (ADMIN_ADDR) and %q (HTTP_ADDR)", t, admin, http)
			}
		}
		// Development tokens let anyone who reaches the port mint an admin
		// token: such a service is published on loopback only (README,
		// "Ports"; PUBLISH_HOST opens it once DEV_TOKENS is off).
		if dev, _ := strconv.ParseBool(strings.TrimSpace(effective("DEV_TOKENS"))); dev {
			for _, p := range s.Ports {
				if ip := strings.Trim(p.HostIP, "[]"); ip == "" || ip == "0.0.0.0" || ip == "::" {
					errs.add(where, "publishes port %s on every interface while DEV_TOKENS is on (bind it to 127.0.0.1)", p.Published)
				}
			}
		}
		checkHealthcheck(&errs, where, s.HealthCheck, admin)
		res.built[name] = built{svc: svc, dockerfile: df, adminPort: admin}
	}

	// Kafka topics: kafka-init creates exactly pkg/events' topics.
	if init, ok := proj.Services["kafka-init"]; !ok {
		errs.add(cf, "no kafka-init service creating the topics")
	} else {
		var got []string
		if v := init.Environment["KAFKA_TOPICS"]; v != nil {
			for _, t := range strings.Split(*v, ",") {
				if t = strings.TrimSpace(t); t != "" {
					got = append(got, t)
				}
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(events.AllTopics))) {
			errs.add(cf+": kafka-init", "KAFKA_TOPICS %v != pkg/events AllTopics %v", got, events.AllTopics)
		}
	}
	// Every Go service (kafka-dev is for development only) is deployed.
	inCompose := map[string]bool{}
	for _, b := range res.built {
		inCompose[b.svc] = true
	}
	for _, g := range goSvcs {
		if g != "kafka-dev" && !inCompose[g] {
			errs.add(cf, "services/%s is not in the compose file", g)
		}
	}
	return res, errs
}

var healthURL = regexp.MustCompile(`https?://[^/\s:]+:(\d+)(/\S*)`)

// checkHealthcheck: a Go service's healthcheck runs /healthcheck (the
// image has no shell) on /healthz or /readyz of its admin port.
func checkHealthcheck(errs *problems, where string, hc *types.HealthCheckConfig, adminPort string) {
	if hc == nil || hc.Disable {
		errs.add(where, "no healthcheck")
		return
	}
	test := strings.Join(hc.Test, " ")
	m := healthURL.FindStringSubmatch(test)
	switch {
	case m == nil:
		errs.add(where, "healthcheck does not probe an http URL: %s", test)
	case m[2] != "/healthz" && m[2] != "/readyz":
		errs.add(where, "healthcheck probes %s, want /healthz or /readyz", m[2])
	case adminPort != "" && m[1] != adminPort:
		errs.add(where, "healthcheck probes port %s, admin port is %s", m[1], adminPort)
	}
	if len(hc.Test) > 0 && hc.Test[0] == "CMD-SHELL" {
		errs.add(where, `healthcheck needs a shell; the distroless image has none (use ["CMD", "/healthcheck", URL])`)
	}
}

// checkPrometheus: prometheus.yml scrapes every built service on its admin
// port, and every rule file it names is mounted from the repository.
func checkPrometheus(root string, res *composeResult) (ruleFiles []string, errs problems) {
	const rel = "deployments/prometheus/prometheus.yml"
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		errs.add(rel, "%v", err)
		return nil, errs
	}
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		errs.add(rel, "%v", err)
		return nil, errs
	}
	targets := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, t := range st.Targets {
				targets[t] = true
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(res.built)) {
		if want := net.JoinHostPort(name, res.built[name].adminPort); !targets[want] {
			errs.add(rel, "does not scrape %s", want)
		}
	}
	// The rule files: mounted into the prometheus service from the repo.
	mounts := map[string]string{}
	for _, s := range res.project.Services {
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				mounts[v.Target] = v.Source
			}
		}
	}
	for _, r := range cfg.RuleFiles {
		src, ok := mounts[r]
		if !ok {
			errs.add(rel, "rule file %s is not mounted from the repository by the compose file", r)
			continue
		}
		if !filepath.IsAbs(src) {
			src = filepath.Join(root, src)
		}
		ruleFiles = append(ruleFiles, src)
	}
	return ruleFiles, errs
}

// metricRef finds the boxoffice_* and http_* metrics of a PromQL expression.
var metricRef = regexp.MustCompile(`\b((?:boxoffice|http)_[a-zA-Z0-9_]+)`)

// checkDashboards: every boxoffice_* and http_* metric a Grafana dashboard
// queries is defined in the Go code.
func checkDashboards(root string) problems {
	var errs problems
	defined, err := definedMetrics(root)
	if err != nil {
		errs.add("go code", "%v", err)
		return errs
	}
	paths, _ := filepath.Glob(filepath.Join(root, "deployments/grafana/dashboards/*.json"))
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			errs.add(rel, "%v", err)
			continue
		}
		var dash any
		if err := json.Unmarshal(b, &dash); err != nil {
			errs.add(rel, "invalid JSON: %v", err)
			continue
		}
		seen := map[string]bool{}
		for _, e := range queries(dash) {
			for _, n := range undefinedMetrics(e, defined) {
				if !seen[n] {
					seen[n] = true
					errs.add(rel, "metric %s is not defined in the Go code", n)
				}
			}
		}
	}
	return errs
}

// histogramSeries is the suffix of a histogram's series.
var histogramSeries = regexp.MustCompile(`_(bucket|sum|count)$`)

// undefinedMetrics are the boxoffice_* and http_* metrics of a PromQL
// expression that the Go code does not define (a histogram's _bucket,
// _sum and _count count as the histogram).
func undefinedMetrics(expr string, defined map[string]bool) []string {
	var out []string
	for _, m := range metricRef.FindAllStringSubmatch(expr, -1) {
		if n := m[1]; !defined[n] && !defined[histogramSeries.ReplaceAllString(n, "")] {
			out = append(out, n)
		}
	}
	return out
}

// checkRuleMetrics: every boxoffice_* and http_* metric an alert rule of
// files queries is defined in the Go code.
func checkRuleMetrics(root string, files []string) problems {
	var errs problems
	defined, err := definedMetrics(root)
	if err != nil {
		errs.add("go code", "%v", err)
		return errs
	}
	for _, p := range files {
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			errs.add(rel, "%v", err)
			continue
		}
		var rules struct {
			Groups []struct {
				Rules []struct {
					Alert, Record, Expr string
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal(b, &rules); err != nil {
			errs.add(rel, "%v", err)
			continue
		}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				for _, n := range undefinedMetrics(r.Expr, defined) {
					errs.add(rel, "%s%s: metric %s is not defined in the Go code", r.Alert, r.Record, n)
				}
			}
		}
	}
	return errs
}

// queries are the "expr" and "query" strings anywhere in a dashboard.
func queries(x any) []string {
	var out []string
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && (k == "expr" || k == "query") {
				out = append(out, s)
			}
			out = append(out, queries(e)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, queries(e)...)
		}
	}
	return out
}

func portOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[i+1:]
	}
	return addr
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
