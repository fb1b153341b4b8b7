package httpapi

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/auth"
)

func TestAuthenticate(t *testing.T) {
	a, _ := auth.New([]byte("0123456789abcdef0123456789abcdef"))
	r := New(nil, nil)
	r.GET("/me", Authenticate(a), func(c *gin.Context) { c.String(200, Identity(c).UserID) })
	r.GET("/admin", Authenticate(a), RequireAdmin(), func(c *gin.Context) { c.String(200, "ok") })
	user, _ := a.Issue("bob", "", time.Hour)
	admin, _ := a.Issue("root", auth.RoleAdmin, time.Hour)
	cases := []struct {
		path, header string
		want         int
	}{
		{"/me", "", 401},
		{"/me", "Bearer", 401},
		{"/me", "Basic " + user, 401},
		{"/me", "Bearer nonsense", 401},
		{"/me", "Bearer " + user, 200},
		{"/me", "bearer " + user, 200},
		{"/admin", "Bearer " + user, 403},
		{"/admin", "Bearer " + admin, 200},
		{"/admin", "", 401},
	}
	for _, tc := range cases {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", tc.path, nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		r.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("%s %q: status %d, want %d", tc.path, tc.header, w.Code, tc.want)
		}
		if w.Code >= 400 && !strings.Contains(w.Body.String(), fmt.Sprintf(`"statusCode":%d`, w.Code)) {
			t.Errorf("%s: body not in the error format: %s", tc.path, w.Body)
		}
	}
}
