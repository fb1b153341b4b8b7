package fastserver

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// A fast route with a {name} segment matches one non-empty segment and
// hands it to the handler; an exact route of the same shape wins; other
// shapes (empty, nested, another suffix) reach the engine, and another
// method is a 405.
func TestFastPatternRoutes(t *testing.T) {
	engine := httpapi.New(nil, nil)
	engine.NoRoute(func(c *gin.Context) { c.String(200, "engine") })
	h := New(nil, nil, engine,
		Route{Method: "GET", Path: "/api/events/{id}/progress", Handle: func(c *Ctx) {
			c.WriteJSON(200, []byte(`"`+c.Param()+`"`))
		}},
		Route{Method: "GET", Path: "/api/events/popular/progress", Handle: func(c *Ctx) {
			c.WriteJSON(200, []byte(`"exact"`))
		}},
	)
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/api/events/e1/progress", 200, `"e1"`},
		{"GET", "/api/events/popular/progress", 200, `"exact"`},
		{"GET", "/api/events//progress", 200, "engine"},
		{"GET", "/api/events/a/b/progress", 200, "engine"},
		{"GET", "/api/events/e1/progress2", 200, "engine"},
		{"GET", "/api/events/e1", 200, "engine"},
		{"POST", "/api/events/e1/progress", 405, ""},
	} {
		w := doFast(h, tc.method, tc.path, "")
		if w.Code != tc.code || (tc.body != "" && w.Body.String() != tc.body) {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, w.Code, w.Body, tc.code, tc.body)
		}
	}
}
