package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

func TestRegisterServesPages(t *testing.T) {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	RegisterWith(r, Options{NotifierURL: "ws://notify.test:9/ws"})
	cases := []struct{ path, ctype, contains string }{
		{"/", "text/html", `<script src="/static/app.js"`},
		{"/config.js", "text/javascript", `"notifierURL":"ws://notify.test:9/ws"`},
		{"/static/app.js", "javascript", "new WebSocket("},
		{"/static/style.css", "text/css", ".seatmap"},
	}
	for _, tc := range cases {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest("GET", tc.path, nil))
		body, _ := io.ReadAll(w.Body)
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), tc.ctype) || !strings.Contains(string(body), tc.contains) {
			t.Errorf("GET %s: %d %q, body contains %q: %v", tc.path, w.Code, w.Header().Get("Content-Type"), tc.contains, strings.Contains(string(body), tc.contains))
		}
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("GET", "/static/nope.js", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("missing asset: %d, want 404", w.Code)
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
