package main

import (
	"debug/elf"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func report(t *testing.T, errs problems) {
	t.Helper()
	for _, e := range errs {
		t.Error(e)
	}
}

// TestCompose: docker-compose.yml, the Dockerfile, Prometheus and the
// Grafana dashboards agree with the code (the package comment lists every
// check).
func TestCompose(t *testing.T) {
	root := repoRoot(t)
	res, errs := checkCompose(root, "docker-compose.yml")
	report(t, errs)
	if res == nil {
		return
	}
	rules, errs := checkPrometheus(root, res)
	report(t, errs)
	promtool(t, append([]string{"check", "config", "--syntax-only"}, filepath.Join(root, "deployments/prometheus/prometheus.yml")))
	if len(rules) == 0 {
		t.Error("prometheus.yml names no rule file")
	} else {
		promtool(t, append([]string{"check", "rules"}, rules...))
		report(t, checkRuleMetrics(root, rules))
	}
	// The alert rules' unit tests (promtool's own format).
	promtool(t, []string{"test", "rules", filepath.Join(root, "deployments/prometheus/alerts_test.yml")})
	report(t, checkDashboards(root))
}

func promtool(t *testing.T, args []string) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Fatal("promtool not found: scripts/ensure-tool.sh promtool prometheus (make lint runs it)")
	}
	if out, err := exec.Command("promtool", args...).CombinedOutput(); err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestComposeFindsProblems: each kind of mistake in a compose file is
// reported (testdata/broken-compose.yml makes one of each).
func TestComposeFindsProblems(t *testing.T) {
	root := repoRoot(t)
	_, errs := checkCompose(root, "deployments/check/testdata/broken-compose.yml")
	want := []string{
		"gateway: environment NOT_A_SETTING is not read by services/gateway",
		"gateway: publishes container port 7000",
		"gateway: healthcheck probes port 9999, admin port is 9101",
		"gateway: RATE_REQUESTS_PER_SECOND_PER_USER=0 turns an abuse limit off",
		"gateway: publishes port 8080 on every interface while DEV_TOKENS is on",
		"payment-webhook: WEBHOOK_SECRET is required by services/payment-webhook and not set",
		"payment-webhook: healthcheck needs a shell",
		"payment-webhook: volume source ./deployments/no-such-file does not exist",
		"notifier: SERVICE=no-such-service: services/no-such-service does not exist",
		"redis: infrastructure service without a healthcheck",
		"popularity: depends_on redis with service_healthy, but redis has no healthcheck",
		"kafka-init: KAFKA_TOPICS [booking_request] != pkg/events AllTopics",
		"services/slot-released-consumer is not in the compose file",
	}
	for _, w := range want {
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, w) }) {
			t.Errorf("no problem %q reported; got:\n%s", w, strings.Join(errs, "\n"))
		}
	}
	// A file that does not load (a depends_on naming no service) says so.
	_, errs = checkCompose(root, "deployments/check/testdata/unloadable-compose.yml")
	if len(errs) != 1 || !strings.Contains(errs[0], "does not load") {
		t.Errorf("unloadable compose file: %q", errs)
	}
}

// TestSpecsMatchServices: stacktest.Specs, the one list of services and
// ports behind `make run` and the stack tests, names every Go service (but
// kafka-dev) once, each with its default ADMIN_ADDR and HTTP_ADDR.
func TestSpecsMatchServices(t *testing.T) {
	root := repoRoot(t)
	svcs, err := goServices(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stacktest.Specs {
		names = append(names, s.Name)
		vars, err := serviceEnv(root, s.Name)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		def := func(k string) string {
			if v, ok := vars[k]; ok && v.Default != nil {
				return portOf(*v.Default)
			}
			return ""
		}
		if got := def("ADMIN_ADDR"); got != fmt.Sprint(s.AdminPort) {
			t.Errorf("%s: default ADMIN_ADDR port %q, stacktest.Specs says %d", s.Name, got, s.AdminPort)
		}
		want := ""
		if s.HTTPPort != 0 {
			want = fmt.Sprint(s.HTTPPort)
		}
		if got := def("HTTP_ADDR"); got != want {
			t.Errorf("%s: default HTTP_ADDR port %q, stacktest.Specs says %q", s.Name, got, want)
		}
	}
	svcs = slices.DeleteFunc(svcs, func(s string) bool { return s == stacktest.KafkaDev })
	if !slices.Equal(slices.Sorted(slices.Values(names)), svcs) {
		t.Errorf("stacktest.Specs names %v, services/ holds %v", names, svcs)
	}
}

// TestServiceEnvFindsEmbeddedAndCodeDefaults: the Config reader sees
// service.Common's variables through the embedding, and ADMIN_ADDR's
// default set in code.
func TestServiceEnvFindsEmbeddedAndCodeDefaults(t *testing.T) {
	vars, err := serviceEnv(repoRoot(t), "gateway")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"REDIS_ADDR", "AMQP_URL", "LOG_LEVEL", "JWT_SECRET", "ADMIN_ADDR", "HTTP_ADDR"} {
		if _, ok := vars[k]; !ok {
			t.Errorf("gateway: %s not found", k)
		}
	}
	if v := vars["ADMIN_ADDR"]; v.Default == nil || *v.Default != "127.0.0.1:9101" || v.Required {
		t.Errorf("gateway ADMIN_ADDR: %+v", v)
	}
	if v := vars["AMQP_URL"]; !v.Secret {
		t.Errorf("AMQP_URL is not secret: %+v", v)
	}
}

// TestImagesBuild builds every service binary (and /healthcheck) with the
// Dockerfile's own `go build` lines, from the workspace root, and checks
// each is static. It takes minutes on a small machine, so only
// BOXOFFICE_DEPLOY_BUILD=1 runs it (scripts/lint-deploy.sh sets it).
func TestImagesBuild(t *testing.T) {
	if os.Getenv("BOXOFFICE_DEPLOY_BUILD") != "1" {
		t.Skip("set BOXOFFICE_DEPLOY_BUILD=1 (scripts/lint-deploy.sh does)")
	}
	root := repoRoot(t)
	res, errs := checkCompose(root, "docker-compose.yml")
	if res == nil || len(errs) > 0 {
		t.Fatalf("the compose file has problems: %q", errs)
	}
	out := t.TempDir()
	type job struct{ svc, cmd string }
	var jobs []job
	seen := map[string]bool{}
	for _, b := range res.built {
		for _, cmd := range res.dockerfiles[b.dockerfile].goBuilds() {
			perService := strings.Contains(cmd, "${SERVICE}") || strings.Contains(cmd, "$SERVICE")
			prefix := out + "/"
			if perService {
				prefix = out + "/" + b.svc + "."
			}
			c := strings.ReplaceAll(cmd, "/out/", prefix)
			if !seen[c] {
				seen[c] = true
				jobs = append(jobs, job{b.svc, c})
			}
		}
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"GOFLAGS", "GOWORK", "GOOS", "GOARCH", "CGO_ENABLED"}, k)
	})
	// One after the other: the first build compiles what the others then
	// find in the build cache (parallel builds would compile it each).
	for _, j := range jobs {
		cmd := exec.Command("bash", "-c", j.cmd)
		cmd.Dir, cmd.Env = root, append(slices.Clone(env), "SERVICE="+j.svc)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("build %s: `%s`: %v\n%s", j.svc, j.cmd, err, b)
			continue
		}
		bin := strings.Fields(strings.SplitN(j.cmd, " -o ", 2)[1])[0]
		if err := static(bin); err != nil {
			t.Errorf("build %s: %v", j.svc, err)
		}
	}
}

// static fails when the ELF binary at path has an interpreter (is
// dynamically linked).
func static(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (has an ELF interpreter)", path)
		}
	}
	return nil
}

// TestDefinedMetricsReadsPromxFactories: a metric made with pkg/promx is
// boxoffice_<subsystem>_<name>, the subsystem a literal argument of
// promx.New or promx.Shared.
func TestDefinedMetricsReadsPromxFactories(t *testing.T) {
	src := `package x

import "github.com/boxoffice/boxoffice/pkg/promx"

func m() {
	f := promx.New(nil, "demo")
	f.CounterVec("things_total", "Things handled, by kind.", "kind")
	promx.Shared(nil, "other").Gauge("level", "Level.")
}`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fileMetrics(f, names)
	for _, want := range []string{"boxoffice_demo_things_total", "boxoffice_other_level"} {
		if !names[want] {
			t.Errorf("%s not found in %v", want, names)
		}
	}
	if !importsPrometheus(f) {
		t.Error("a file importing pkg/promx is not read")
	}
}
