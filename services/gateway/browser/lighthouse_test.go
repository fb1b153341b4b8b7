package browser

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/redistest"
	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// TestLighthouse records Lighthouse's accessibility and best-practices
// scores of the event list and the event page and requires at least 95
// for each. Opt-in (BOXOFFICE_LIGHTHOUSE=1): it installs Lighthouse from
// npm (scripts/ensure-lighthouse.sh) and takes a minute or two; the
// reports go to test-output/lighthouse/.
func TestLighthouse(t *testing.T) {
	if os.Getenv("BOXOFFICE_LIGHTHOUSE") != "1" {
		t.Skip("set BOXOFFICE_LIGHTHOUSE=1 to run Lighthouse (docs/testing.md)")
	}
	root, err := redistest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	chromium := ensureChromium(t, root)
	cli, err := exec.Command(filepath.Join(root, "scripts", "ensure-lighthouse.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/ensure-lighthouse.sh: %v", err)
	}
	out := filepath.Join(root, "test-output", "lighthouse")
	if err := os.MkdirAll(filepath.Join(out, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := stacktest.Start(t, stacktest.Options{LogDir: filepath.Join(out, "logs")})
	s.CreateEvent(t, stacktest.Event{ID: "lh", Name: "Lighthouse Live", Rows: 10, SeatsPerRow: 20, Capacity: 5, HoldSeconds: 300})
	for _, pg := range []struct{ name, path string }{{"list", "/"}, {"event", "/?event_id=lh"}} {
		report := filepath.Join(out, pg.name+".json")
		cmd := exec.Command("node", strings.TrimSpace(string(cli)), s.GatewayURL()+pg.path,
			"--only-categories=accessibility,best-practices", "--output=json", "--output-path="+report,
			"--quiet", "--chrome-flags=--headless=new --no-sandbox --disable-dev-shm-usage")
		cmd.Env = append(os.Environ(), "CHROME_PATH="+chromium)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("lighthouse %s: %v\n%s", pg.name, err, b)
		}
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Categories map[string]struct {
				Score float64 `json:"score"`
			} `json:"categories"`
			Audits map[string]struct {
				Title string   `json:"title"`
				Score *float64 `json:"score"`
			} `json:"audits"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"accessibility", "best-practices"} {
			score := int(r.Categories[c].Score*100 + 0.5)
			t.Logf("lighthouse %s page: %s %d", pg.name, c, score)
			if score < 95 {
				t.Errorf("lighthouse %s page: %s %d, want >= 95", pg.name, c, score)
			}
		}
		for id, a := range r.Audits {
			if a.Score != nil && *a.Score < 1 {
				t.Logf("  %s page: audit %s (%s) scored %.2f", pg.name, id, a.Title, *a.Score)
			}
		}
	}
}
