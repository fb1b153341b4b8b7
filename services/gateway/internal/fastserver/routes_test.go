package fastserver

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/httpapi/contracttest"
)

type body struct {
	Name string `json:"name"`
}

func (b body) Validate() error {
	if b.Name == "" {
		return errors.New("name is required")
	}
	return nil
}

// routeCase is a request and the answer it must get.
type routeCase struct {
	method, path, payload string
	code                  int
	errCode               string
}

// routeCases hold for fast routes as for a gin engine (pkg/httpapi's
// TestBindRecoveryAndRoutes): /b binds a body, /panic panics, /fail fails
// with a sold-out seat, /nope does not exist and /b is not a GET.
var routeCases = []routeCase{
	{"POST", "/b", `{"name":"x"}`, 200, ""},
	{"POST", "/b", ``, 400, httpapi.CodeInvalidBody},
	{"POST", "/b", `{"name":1}`, 400, httpapi.CodeInvalidBody},
	{"POST", "/b", `{}`, 400, httpapi.CodeInvalidBody},
	{"POST", "/b", `{"name":"x"}x`, 400, httpapi.CodeInvalidBody},
	{"POST", "/b", `{"name":"` + strings.Repeat("x", httpapi.MaxBody) + `"}`, 413, httpapi.CodeInvalidBody},
	{"GET", "/panic", ``, 500, httpapi.CodeInternal},
	{"GET", "/fail", ``, 409, "sold_out"},
	{"GET", "/nope", ``, 404, httpapi.CodeNotFound},
	{"GET", "/b", ``, 405, httpapi.CodeMethodNotAllowed},
}

// check asserts the status and, for an error, the JSON error body.
func (tc routeCase) check(t *testing.T, code int, e httpapi.Error) {
	t.Helper()
	if code != tc.code || (tc.errCode != "" && (e.Code != tc.errCode || e.StatusCode != code || e.Path != tc.path || e.Timestamp == "" || e.Error != http.StatusText(code))) {
		t.Errorf("%s %s: %d %+v, want %d %s", tc.method, tc.path, code, e, tc.code, tc.errCode)
	}
}

// One header limit on the fasthttp server as on net/http's (pkg/httpapi's
// TestHeaderLimitOnEveryServer): exactly 16 KiB of request line and
// headers is read, a byte more is a 431 in the JSON error format naming
// the path, however the path or the connection got there.
func TestHeaderLimitOnEveryServer(t *testing.T) {
	ct := contracttest.Load(t)
	addr := startFast(t, NewServer(fastFixture(nil), 1<<20))
	ct.HeaderLimit(addr, "/b")
	ct.HeaderLimit(addr, "/api/events/e%201")
	// a request line over the limit: its path as far as it came
	resp, body := contracttest.Exchange(t, addr, "GET /c?q="+strings.Repeat("q", 20<<10)+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("long request line: %d %s", resp.StatusCode, body)
	}
	ct.CheckErrorAnswer("long request line", resp, body, "/c")
	ct.Report()
}

// The second request of a keep-alive connection, sent after the answer
// to the first (whose body does not end a line), is named in its own 431.
func TestHeaderLimitNamesTheRequestOfTheConnection(t *testing.T) {
	ct := contracttest.Load(t)
	addr := startFast(t, NewServer(fastFixture(nil), 1<<20))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	_, _ = io.WriteString(conn, "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n{\"name\":\"x\"}")
	first, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, first.Body)
	first.Body.Close()
	go func() { _, _ = io.WriteString(conn, contracttest.Head("/second", contracttest.MaxHeaderBytes+1)) }()
	second, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Body.Close()
	body, _ := io.ReadAll(second.Body)
	if second.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("second request: %d %s", second.StatusCode, body)
	}
	ct.CheckErrorAnswer("second request", second, body, "/second")
	ct.Report()
}

// Every JSON answer says X-Content-Type-Options: nosniff: a fast route's,
// its errors, and the gin engine's routes and errors behind the bridge.
func TestJSONAnswersSayNoSniff(t *testing.T) {
	h := fastFixture(nil)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/b", `{"name":"x"}`}, {"POST", "/b", `[]`}, {"GET", "/fail", ""}, {"GET", "/b", ""},
		{"GET", "/slow", ""}, {"GET", "/nope", ""}, {"GET", "/panic", ""},
	} {
		w := httptest.NewRecorder()
		ServeRequest(h, w, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if ct, ns := w.Header().Get("Content-Type"), w.Header().Get("X-Content-Type-Options"); !strings.HasPrefix(ct, "application/json") || ns != "nosniff" {
			t.Errorf("%s %s → %d: Content-Type %q, X-Content-Type-Options %q", tc.method, tc.path, w.Code, ct, ns)
		}
	}
}
