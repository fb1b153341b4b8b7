package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/requestid"
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

func serve(r *gin.Engine, method, path, payload string) (int, Error) {
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(payload)))
	var e Error
	_ = json.Unmarshal(w.Body.Bytes(), &e)
	return w.Code, e
}

func TestBindRecoveryAndRoutes(t *testing.T) {
	r := New(nil, NewMetrics(nil))
	r.POST("/b", func(c *gin.Context) {
		var b body
		if Bind(c, &b) {
			c.JSON(200, b)
		}
	})
	r.GET("/panic", func(*gin.Context) { panic("boom") })
	r.GET("/fail", func(c *gin.Context) { Abort(c, http.StatusConflict, "sold_out", "sold out") })
	for _, tc := range routeCases {
		code, e := serve(r, tc.method, tc.path, tc.payload)
		tc.check(t, code, e)
	}
}

// routeCase is a request and the answer it must get.
type routeCase struct {
	method, path, payload string
	code                  int
	errCode               string
}

// routeCases hold for a gin engine (and for the gateway's fast routes,
// whose tests have the same): /b binds a body, /panic panics, /fail
// answers a sold-out seat, /nope does not
// exist and /b is not a GET.
var routeCases = []routeCase{
	{"POST", "/b", `{"name":"x"}`, 200, ""},
	{"POST", "/b", ``, 400, CodeInvalidBody},
	{"POST", "/b", `{"name":1}`, 400, CodeInvalidBody},
	{"POST", "/b", `{}`, 400, CodeInvalidBody},
	{"POST", "/b", `{"name":"x"}x`, 400, CodeInvalidBody},
	{"POST", "/b", `{"name":"` + strings.Repeat("x", MaxBody) + `"}`, 413, CodeInvalidBody},
	{"GET", "/panic", ``, 500, CodeInternal},
	{"GET", "/fail", ``, 409, "sold_out"},
	{"GET", "/nope", ``, 404, CodeNotFound},
	{"GET", "/b", ``, 405, CodeMethodNotAllowed},
}

// check asserts the status and, for an error, the JSON error body.
func (tc routeCase) check(t *testing.T, code int, e Error) {
	t.Helper()
	if code != tc.code || (tc.errCode != "" && (e.Code != tc.errCode || e.StatusCode != code || e.Path != tc.path || e.Timestamp == "" || e.Error != http.StatusText(code))) {
		t.Errorf("%s %s: %d %+v, want %d %s", tc.method, tc.path, code, e, tc.code, tc.errCode)
	}
}

// The request id (the client's, when well formed, or a new one) is echoed
// and is in the request's context.Context, where publishers pick it up.
func TestRequestIDInContext(t *testing.T) {
	r := New(nil, NewMetrics(nil))
	r.GET("/id", func(c *gin.Context) { c.String(200, requestid.From(c.Request.Context())) })
	for _, tc := range []struct{ sent, want string }{
		{"client-id-1", "client-id-1"},
		{"", ""},                       // a new one
		{"bad id with spaces", ""},     // replaced
		{strings.Repeat("x", 100), ""}, // too long: replaced
	} {
		req := httptest.NewRequest("GET", "/id", nil)
		if tc.sent != "" {
			req.Header.Set(HeaderRequestID, tc.sent)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		echoed, inCtx := w.Header().Get(HeaderRequestID), w.Body.String()
		if echoed == "" || echoed != inCtx || (tc.want != "" && inCtx != tc.want) || (tc.want == "" && inCtx == tc.sent) {
			t.Errorf("sent %q: echoed %q, in context %q", tc.sent, echoed, inCtx)
		}
	}
}

// Write (plain net/http) writes the same JSON error as Abort (gin).
func TestWriteMatchesAbort(t *testing.T) {
	gin.SetMode(gin.TestMode)
	viaGin := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(viaGin)
	c.Request = httptest.NewRequest(http.MethodGet, "/ws?event_id=x", nil)
	Abort(c, http.StatusTooManyRequests, CodeRateLimited, "too many connections")
	plain := httptest.NewRecorder()
	Write(plain, http.StatusTooManyRequests, CodeRateLimited, "too many connections", "/ws")

	var a, b map[string]any
	if err := json.Unmarshal(viaGin.Body.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(plain.Body.Bytes(), &b); err != nil {
		t.Fatalf("%v: %s", err, plain.Body)
	}
	if _, err := time.Parse(time.RFC3339Nano, b["timestamp"].(string)); err != nil {
		t.Errorf("timestamp %q: %v", b["timestamp"], err)
	}
	delete(a, "timestamp")
	delete(b, "timestamp")
	if !reflect.DeepEqual(a, b) || plain.Code != viaGin.Code {
		t.Errorf("Write: %d %v; Abort: %d %v", plain.Code, b, viaGin.Code, a)
	}
	if ct := plain.Header().Get("Content-Type"); ct != viaGin.Header().Get("Content-Type") {
		t.Errorf("Content-Type %q, Abort's %q", ct, viaGin.Header().Get("Content-Type"))
	}
}
