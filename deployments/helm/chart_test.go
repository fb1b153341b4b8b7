// Package helm holds the test of the Helm chart in boxoffice/: it lints and
// renders the chart with Helm's own Go packages (the same code as `helm
// lint` and `helm template`) and checks the rendered environment of every
// Deployment against the variables each service reads. It is its own Go
// module, outside go.work, so that Helm's Kubernetes dependencies never
// enter the services' builds; `make lint` runs it with GOWORK=off.
package helm

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"
)

const chartDir = "boxoffice"

// serviceVars is what deployments/check (the compose check) knows of each
// service's variables: its Config's env tags, service.Common's when
// embedded, LOG_* under service.Main.
func serviceVars(t *testing.T) map[string]map[string]struct {
	Default  *string
	Required bool
	Secret   bool
} {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// deployments/check is a module of the workspace (this one is not):
	// run it in workspace mode.
	cmd := exec.Command("go", "run", "./deployments/check", "-env-json")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(root, "go.work"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./deployments/check -env-json: %v", err)
	}
	var vars map[string]map[string]struct {
		Default  *string
		Required bool
		Secret   bool
	}
	if err := json.Unmarshal(out, &vars); err != nil {
		t.Fatal(err)
	}
	return vars
}

func TestChartLints(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults": nil,
		"everything on": {
			"existingSecret": "bo-secrets", "kafkaTLSSecret": "kafka-tls",
			"services": map[string]any{"payment-sandbox": map[string]any{"enabled": true}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			res := lint.AllWithKubeVersion(chartDir, vals, "boxoffice", nil)
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				} else {
					t.Logf("helm lint: %s", m)
				}
			}
		})
	}
}

type container struct {
	Name string
	Env  []struct {
		Name      string
		Value     *string
		ValueFrom *struct {
			SecretKeyRef     *struct{ Name, Key string }
			ResourceFieldRef *struct{ Resource, Divisor string }
		}
	}
	Ports []struct {
		Name          string
		ContainerPort int
	}
	ReadinessProbe *struct {
		HTTPGet *struct {
			Path string
			Port any
		} `json:"httpGet"`
	}
	LivenessProbe *struct {
		HTTPGet *struct {
			Path string
			Port any
		} `json:"httpGet"`
	}
	Resources *struct{ Requests map[string]string }
}

type object struct {
	Kind     string
	Metadata struct {
		Name   string
		Labels map[string]string
	}
	Spec struct {
		Template struct {
			Spec struct{ Containers []container }
		}
		ScaleTargetRef *struct{ Name string } `json:"scaleTargetRef"`
	}
}

// render renders the chart with vals into its Kubernetes objects.
func render(t *testing.T, vals map[string]any) []object {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "bo", Namespace: "boxoffice", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var objs []object
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, doc := range bytes.Split([]byte(files[n]), []byte("\n---")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			var o object
			if err := yaml.UnmarshalStrict(doc, &o, yaml.DisallowUnknownFields); err != nil {
				// strict only for what we model: fall back to lenient
				if err := yaml.Unmarshal(doc, &o); err != nil {
					t.Fatalf("%s: %v\n%s", n, err, doc)
				}
			}
			if o.Kind != "" {
				objs = append(objs, o)
			}
		}
	}
	return objs
}

// Every variable the chart sets on a Deployment is one its service reads
// (the check the compose file gets), every required one without a default
// is set, and every variable any service reads is a value of the chart.
func TestChartEnvMatchesServices(t *testing.T) {
	vars := serviceVars(t)
	all := map[string]any{"services": map[string]any{"payment-sandbox": map[string]any{"enabled": true}}}
	objs := render(t, all)
	// the gateway, scaled by its HPA, runs on its CPU request; the others
	// keep Go's default
	gomaxprocs := map[string]string{"gateway": "request"}
	deployments := map[string]bool{}
	for _, o := range objs {
		if o.Kind != "Deployment" {
			continue
		}
		svc := o.Metadata.Labels["app.kubernetes.io/name"]
		deployments[svc] = true
		reads, ok := vars[svc]
		if !ok {
			t.Errorf("Deployment %s: no service %q under services/", o.Metadata.Name, svc)
			continue
		}
		if len(o.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("Deployment %s: %d containers", o.Metadata.Name, len(o.Spec.Template.Spec.Containers))
		}
		c := o.Spec.Template.Spec.Containers[0]
		set := map[string]bool{}
		for _, e := range c.Env {
			if set[e.Name] {
				t.Errorf("%s: %s set twice", svc, e.Name)
			}
			set[e.Name] = true
			if e.Name == "GOMAXPROCS" { // the Go runtime's, not the service's
				continue
			}
			v, ok := reads[e.Name]
			if !ok {
				t.Errorf("%s: the chart sets %s, which the service does not read", svc, e.Name)
				continue
			}
			if v.Secret && e.ValueFrom == nil {
				t.Errorf("%s: secret %s set as a plain value, not from the Secret", svc, e.Name)
			}
		}
		for name, v := range reads {
			if v.Required && v.Default == nil && !set[name] {
				t.Errorf("%s: required %s is not set by the chart", svc, name)
			}
		}
		var adminPort int
		for _, p := range c.Ports {
			if p.Name == "admin" {
				adminPort = p.ContainerPort
			}
		}
		if adminPort == 0 || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
			c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("%s: want readiness /readyz and liveness /healthz on the admin port", svc)
		}
		if c.Resources == nil || c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
			t.Errorf("%s: no resource requests", svc)
		}
		checkGOMAXPROCS(t, svc, c, gomaxprocs[svc])
	}
	for svc := range vars {
		if !deployments[svc] {
			t.Errorf("service %s has no Deployment in the chart", svc)
		}
	}

	// Every variable a service reads is a value (config, the service's
	// env, secrets, or ADMIN_ADDR/HTTP_ADDR from its ports).
	valuesFile, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config, _ := valuesFile["config"].(map[string]any)
	secrets, _ := valuesFile["secrets"].(map[string]any)
	services, _ := valuesFile["services"].(map[string]any)
	for svc, reads := range vars {
		sv, _ := services[svc].(map[string]any)
		env, _ := sv["env"].(map[string]any)
		common, _ := sv["common"].(bool)
		var missing []string
		for name := range reads {
			_, inEnv := env[name]
			_, inConfig := config[name]
			_, inSecrets := secrets[name]
			if inEnv || (common && inConfig) || inSecrets || name == "ADMIN_ADDR" || name == "HTTP_ADDR" {
				continue
			}
			missing = append(missing, name)
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("%s reads %v, which deployments/helm/boxoffice/values.yaml has no value for", svc, missing)
		}
	}
}

// The gateway and the notifier scale with an HPA; every enabled service has
// a PodDisruptionBudget; the Secret is created unless existingSecret names
// one.
func TestChartObjects(t *testing.T) {
	count := func(objs []object, kind string) (names []string) {
		for _, o := range objs {
			if o.Kind == kind {
				names = append(names, o.Metadata.Name)
			}
		}
		sort.Strings(names)
		return names
	}
	objs := render(t, nil)
	if got, want := count(objs, "HorizontalPodAutoscaler"), []string{"bo-gateway", "bo-notifier"}; !slices.Equal(got, want) {
		t.Errorf("HPAs %v, want %v", got, want)
	}
	if got, want := len(count(objs, "PodDisruptionBudget")), len(count(objs, "Deployment")); got != want || want != 6 {
		t.Errorf("%d PDBs for %d Deployments, want 6 each (payment-sandbox off)", got, want)
	}
	if got := count(objs, "Secret"); len(got) != 1 {
		t.Errorf("Secrets %v, want one", got)
	}
	if got := count(render(t, map[string]any{"existingSecret": "mine"}), "Secret"); len(got) != 0 {
		t.Errorf("with existingSecret the chart still creates %v", got)
	}
}

// checkGOMAXPROCS checks a container's GOMAXPROCS against want: "request"
// (from its CPU request, rounded up), a number, or "" (not set: Go's
// default).
func checkGOMAXPROCS(t *testing.T, svc string, c container, want string) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name != "GOMAXPROCS" {
			continue
		}
		switch {
		case want == "":
			t.Errorf("%s: GOMAXPROCS set, want Go's default", svc)
		case want == "request":
			if r := e.ValueFrom; r == nil || r.ResourceFieldRef == nil ||
				r.ResourceFieldRef.Resource != "requests.cpu" || r.ResourceFieldRef.Divisor != "1" {
				t.Errorf("%s: GOMAXPROCS is not the CPU request rounded up (resourceFieldRef requests.cpu, divisor 1)", svc)
			}
		case e.Value == nil || *e.Value != want:
			t.Errorf("%s: GOMAXPROCS %v, want %s", svc, e.Value, want)
		}
		return
	}
	if want != "" {
		t.Errorf("%s: no GOMAXPROCS, want %s", svc, want)
	}
}

// A service's gomaxprocs value may also be a number.
func TestChartGOMAXPROCSNumber(t *testing.T) {
	objs := render(t, map[string]any{"services": map[string]any{"timeout-consumer": map[string]any{"gomaxprocs": 2}}})
	found := false
	for _, o := range objs {
		if o.Kind == "Deployment" && o.Metadata.Labels["app.kubernetes.io/name"] == "timeout-consumer" {
			found = true
			checkGOMAXPROCS(t, "timeout-consumer", o.Spec.Template.Spec.Containers[0], "2")
		}
	}
	if !found {
		t.Fatal("no timeout-consumer Deployment")
	}
}
