package benchlib

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

func psql(t *testing.T, query string) string {
	t.Helper()
	out, err := exec.Command("psql", "-qXAt", ledgertest.BaseURL(), "-c", query).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", query, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A gateway started by scripts/lib/gateway.sh keeps the events a benchmark
// creates in a ledger schema of its own, never in the development
// ledger's (where `make run` would list them), and the schema is dropped
// when the script exits. KAFKA_PID names its kafka-dev, REDIS_PID the
// Redis server, and set_rate measures SETs per second.
func TestGatewayLedgerIsTheRunsOwn(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql missing: scripts/ensure-infra.sh installs PostgreSQL")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script := `
set -uo pipefail
GW_PORT=18780 KAFKA_PORT=19792
. scripts/lib/gateway.sh
gateway_setup libtest || exit 1
gateway_build mint-token || exit 1
gateway_start DEV_TOKENS=true || exit 1
curl -fsS -o /dev/null -X POST "$GW/api/admin/events" -H "Authorization: Bearer $(token admin0 admin)" \
	-H "Content-Type: application/json" -d "{\"id\":\"libtest$$\",\"rows\":1,\"seats_per_row\":2,\"capacity\":1}" || exit 1
echo "schema=$LEDGER_SCHEMA"
echo "kafka-comm=$(cat /proc/$KAFKA_PID/comm)"
echo "redis-comm=$(cat /proc/$REDIS_PID/comm)"
echo "set-rate=$(set_rate 5 2000)"
echo "event=libtest$$"
echo "in-schema=$(psql -qXAt "$LEDGER_BASE" -c "select count(*) from \"$LEDGER_SCHEMA\".events where id = 'libtest$$'")"
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root
	// the development ledger the tests use, for the script too
	cmd.Env = append(os.Environ(), "DATABASE_URL="+ledgertest.BaseURL())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v\n%s\n%s", err, out, stderr.String())
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	schema, event := got["schema"], got["event"]
	if schema == "" || event == "" {
		t.Fatalf("no schema or event in the script's output:\n%s", out)
	}
	// bench-join-ab reads kafka-dev's CPU through KAFKA_PID
	if got["kafka-comm"] != "kafka-dev" {
		t.Errorf("KAFKA_PID is a %q process, want kafka-dev", got["kafka-comm"])
	}
	// the benchmark scripts read Redis's CPU through REDIS_PID, and
	// set_rate is their SET yardstick
	if got["redis-comm"] != "redis-server" {
		t.Errorf("REDIS_PID is a %q process, want redis-server", got["redis-comm"])
	}
	if r, err := strconv.ParseFloat(got["set-rate"], 64); err != nil || r <= 0 {
		t.Errorf("set_rate 5 2000 = %q, want SETs per second", got["set-rate"])
	}
	if got["in-schema"] != "1" {
		t.Errorf("event %s in the run's schema %s: %q rows, want 1", event, schema, got["in-schema"])
	}
	// a machine where the development stack never ran has no
	// public.events (nothing migrated the public schema): nothing leaked
	if psql(t, "select to_regclass('public.events') is not null") == "t" {
		if n := psql(t, "select count(*) from public.events where id = '"+event+"'"); n != "0" {
			t.Errorf("event %s is in the development ledger (public.events): %s rows", event, n)
		}
	}
	if n := psql(t, "select count(*) from information_schema.schemata where schema_name = '"+schema+"'"); n != "0" {
		t.Errorf("schema %s still there after the script exited", schema)
	}
}

// new_users sizes a join run's users to its duration, so that every join
// of a run at up to 100,000 joins a second is a new user's.
func TestNewUsersCoverTheRun(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]int{"10s": 1_000_000, "1m": 6_000_000, "20": 2_000_000} {
		cmd := exec.Command("bash", "-c", `. scripts/lib/gateway.sh; new_users "$1"`, "bash", d)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("new_users %s: %v", d, err)
		}
		if got, _ := strconv.Atoi(strings.TrimSpace(string(out))); got != want {
			t.Errorf("new_users %s = %q, want %d", d, out, want)
		}
	}
}
