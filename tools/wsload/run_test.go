package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// run.sh, small: more connections from one source address than the
// notifier's default per-IP limit (MAX_CONNECTIONS_PER_IP, 500), which a
// load test from one machine must lift, and one release round in which
// every admitted user hears your_turn.
func TestRunScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a notifier and 600 WebSockets")
	}
	script, err := filepath.Abs("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "-n", "600", "-sources", "127.0.0.1", "-release", "10", "-rounds", "1", "-settle", "0s")
	cmd.Env = append(cmd.Environ(), "NOTIFIER_PORT=18982", "NOTIFIER_ADMIN=19983")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^connections held: 600\b`).Match(out) {
		t.Errorf("not 600 connections held:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^your_turn latency over 10 admissions in 1 rounds of 10 \(missing 0\)`).Match(out) {
		t.Errorf("not every admitted user heard your_turn:\n%s", out)
	}
}
