package web

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/chance"
)

func newEngine() *gin.Engine {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	RegisterWith(r, Options{NotifierURL: "ws://notify.test:9/ws"})
	return r
}

func get(r http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

func TestRegisterServesPages(t *testing.T) {
	r := newEngine()
	cases := []struct{ path, ctype, contains string }{
		{"/", "text/html", `<script src="/static/app.js?v=`},
		{"/", "text/html", `<meta name="description"`},
		{"/config.js", "text/javascript", `"notifierURL":"ws://notify.test:9/ws"`},
		{"/static/app.js", "javascript", "new WebSocket("},
		{"/static/style.css", "text/css", ".seatmap"},
		{"/favicon.svg", "image/svg+xml", "<svg"},
		{"/favicon.ico", "image/svg+xml", "<svg"},
	}
	for _, tc := range cases {
		w := get(r, tc.path)
		body, _ := io.ReadAll(w.Body)
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), tc.ctype) || !strings.Contains(string(body), tc.contains) {
			t.Errorf("GET %s: %d %q, body contains %q: %v", tc.path, w.Code, w.Header().Get("Content-Type"), tc.contains, strings.Contains(string(body), tc.contains))
		}
	}
	if w := get(r, "/static/nope.js"); w.Code != http.StatusNotFound {
		t.Errorf("missing asset: %d, want 404", w.Code)
	}
}

// The page must run under a Content-Security-Policy without
// 'unsafe-inline': no inline script, no inline handlers or styles.
func TestIndexHasNoInlineScriptOrHandlers(t *testing.T) {
	body := get(newEngine(), "/").Body.String()
	for _, re := range []string{`<script(?:\s[^>]*)?>\s*[^<\s]`, `\son[a-z]+\s*=`, `\sstyle\s*=`} {
		if m := regexp.MustCompile(re).FindString(body); m != "" {
			t.Errorf("index.html has %q (matches %s)", m, re)
		}
	}
	if !strings.Contains(body, `<script src="/config.js" defer>`) {
		t.Error("config.js must be a deferred external script (not render-blocking)")
	}
}

func TestStaticCachingAndCompression(t *testing.T) {
	r := newEngine()
	body := get(r, "/").Body.String()
	m := regexp.MustCompile(`"(/static/app\.js\?v=[0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("index.html does not version app.js:\n%s", body)
	}
	w := get(r, m[1], "Accept-Encoding", "br, gzip")
	if cc := w.Header().Get("Cache-Control"); !strings.Contains(cc, "immutable") {
		t.Errorf("static Cache-Control %q, want immutable", cc)
	}
	if w.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(w.Header().Get("Vary"), "Accept-Encoding") {
		t.Fatalf("static file not gzipped: %v", w.Header())
	}
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Contains(plain, []byte("new WebSocket(")) {
		t.Error("gzipped app.js does not decode to app.js")
	}
	etag := w.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if w := get(r, m[1], "If-None-Match", etag); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("If-None-Match: %d with %d bytes, want 304 and no body", w.Code, w.Body.Len())
	}
	if w := get(r, m[1], "Accept-Encoding", "gzip;q=0, identity"); w.Header().Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 still compressed")
	}
	w = get(r, "/", "Accept-Encoding", "gzip")
	if w.Header().Get("Cache-Control") != "no-cache" || w.Header().Get("ETag") == "" || w.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("index headers %v, want no-cache, an ETag and gzip", w.Header())
	}
	if w := get(r, "/", "If-None-Match", `W/"x", `+w.Header().Get("ETag")); w.Code != http.StatusNotModified {
		t.Errorf("index revalidation: %d, want 304", w.Code)
	}
}

// TestYourTurnWhilePaying runs static/app.js under Node with a stub DOM
// (testdata/your_turn.js): a your_turn repeated by the outbox, or one of an
// older join, must not take a user who is paying back to the seat panel,
// while a new join's turn still shows it. Skipped without node.
func TestYourTurnWhilePaying(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	out, err := exec.Command(node, "testdata/your_turn.js", "static/app.js").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestChanceAgreesWithGo runs the page's chance of a ticket (static/app.js's
// chanceOf and chanceWords, under Node: testdata/chance.js) on estimates
// from pkg/chance over random counts: the page shows what the exact
// position would say, in the same words. Skipped without node.
func TestChanceAgreesWithGo(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	type tc struct {
		P      chance.Params `json:"p"`
		Ahead  int64         `json:"ahead"`
		Chance float64       `json:"chance"`
		Words  string        `json:"words"`
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var cases []tc
	for range 20_000 {
		total := rng.Int64N(5000) + 1
		sold := rng.Int64N(total + 1)
		p := chance.Estimate(chance.Counts{Total: total, Sold: sold, Held: rng.Int64N(total - sold + 1),
			Active: rng.Int64N(300), Served: sold + rng.Int64N(20_000), MaxPerOrder: rng.IntN(6)})
		ahead := rng.Int64N(3 * total)
		c := p.Chance(ahead)
		cases = append(cases, tc{p, ahead, c, chance.Words(c)})
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "testdata/chance.js", "static/app.js")
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok") {
		t.Fatalf("%v\n%s", err, out)
	}
}
