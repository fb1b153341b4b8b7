// Command check holds the offline checks of docker-compose.yml and
// deployments/ against the code (run as its tests: `go test
// ./deployments/check`, which `make lint` runs through
// scripts/lint-deploy.sh; no Docker engine is needed). They check that:
//
//   - the compose file loads with the compose spec's own library
//     (compose-go: schema, interpolation, references); every depends_on
//     names a service with a valid condition, and service_healthy needs a
//     healthcheck on the target; files it mounts from the repository exist;
//     an infrastructure service has an image and a healthcheck;
//   - every build context and Dockerfile exists; SERVICE names services/<S>
//     holding a main package; the Dockerfile is multi-stage, copies go.work
//     and every module of go.work (and only paths that exist), builds with
//     CGO_ENABLED=0 and -trimpath, ends on a non-root user, and its Go image
//     is at least go.work's go version;
//   - every environment variable a Go service is given is read by its
//     Config (env tags, read from the source with go/ast, with the structs
//     it embeds, LOG_LEVEL/LOG_FORMAT under service.Main), and every
//     required variable without a default is set;
//   - the gateway's abuse limits (RATE_*) are not turned off (0);
//   - every published port of a Go service is its HTTP_ADDR or ADMIN_ADDR
//     port; its healthcheck runs /healthcheck (no shell) on /healthz or
//     /readyz of its admin port;
//   - kafka-init's KAFKA_TOPICS is exactly pkg/events AllTopics; every Go
//     service but kafka-dev is in the compose file;
//   - pkg/stacktest's Specs (the one list of services, ports and start
//     order behind `make run` and the stack tests) names every Go service
//     but kafka-dev, with each service's default ADMIN_ADDR and HTTP_ADDR;
//   - deployments/prometheus/prometheus.yml scrapes every Go service on
//     its admin port, its rule files are mounted from the repository, and
//     `promtool check config` / `promtool check rules` (Debian's prometheus
//     package) accept them, and the alert rules pass their unit tests
//     (deployments/prometheus/alerts_test.yml, `promtool test rules`);
//   - every boxoffice_* / http_* metric an alert rule queries is defined
//     in the Go code;
//   - every boxoffice_* / http_* metric the Grafana dashboards query is
//     defined in the Go code;
//   - with BOXOFFICE_DEPLOY_BUILD=1: each service binary and /healthcheck
//     build with the Dockerfile's own `go build` lines, from the workspace
//     root, and are static.
//
// As a command it prints what the checks know of the services' variables:
//
//	go run ./deployments/check -env-table   # README's configuration table
//	go run ./deployments/check -env-json    # deployments/helm's test reads this
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	root := flag.String("root", ".", "repository root")
	table := flag.Bool("env-table", false, "print the configuration table (markdown)")
	asJSON := flag.Bool("env-json", false, "print each service's variables as JSON")
	flag.Parse()
	vars, err := allServiceEnv(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", " ")
		if err := enc.Encode(vars); err != nil {
			fmt.Fprintln(os.Stderr, "check:", err)
			os.Exit(1)
		}
	case *table:
		printEnvTable(vars)
	default:
		fmt.Fprintln(os.Stderr, "check: the checks are this package's tests (go test ./deployments/check); flags: -env-table, -env-json")
		os.Exit(2)
	}
}

// allServiceEnv is serviceEnv of every Go service but kafka-dev.
func allServiceEnv(root string) (map[string]map[string]EnvVar, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	svcs, err := goServices(root)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]EnvVar{}
	for _, s := range svcs {
		if s == "kafka-dev" {
			continue
		}
		if out[s], err = serviceEnv(root, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// printEnvTable prints one row per variable: its default (per service when
// they differ; a secret's default marked "(dev)") and who reads it.
func printEnvTable(vars map[string]map[string]EnvVar) {
	type row struct {
		defaults map[string]string
		services []string
	}
	rows := map[string]*row{}
	for _, svc := range slices.Sorted(maps.Keys(vars)) {
		for k, v := range vars[svc] {
			r := rows[k]
			if r == nil {
				r = &row{defaults: map[string]string{}}
				rows[k] = r
			}
			r.services = append(r.services, svc)
			d := ""
			if v.Default != nil {
				d = *v.Default
				if v.Secret && d != "" {
					d += " (dev)"
				}
			}
			r.defaults[svc] = d
		}
	}
	fmt.Println("| variable | default | services |")
	fmt.Println("|---|---|---|")
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		r := rows[k]
		distinct := slices.Compact(slices.Sorted(maps.Values(r.defaults)))
		d := "—"
		switch {
		case len(distinct) > 1:
			var parts []string
			for _, s := range r.services {
				parts = append(parts, fmt.Sprintf("%s: `%s`", s, r.defaults[s]))
			}
			d = strings.Join(parts, ", ")
		case distinct[0] != "":
			d = "`" + distinct[0] + "`"
		}
		fmt.Printf("| `%s` | %s | %s |\n", k, d, strings.Join(r.services, ", "))
	}
}
