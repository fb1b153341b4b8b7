package fastserver

import (
	"net/http"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// Identity is httpapi.Authenticate for a fast route: the identity of the
// bearer token, or a 401 written and false.
func Identity(a *auth.Authority, c *Ctx) (auth.Identity, bool) {
	id, err := a.Verify(auth.BearerToken(c.Header("Authorization")))
	if err != nil {
		c.Response.Header.Set("WWW-Authenticate", httpapi.BearerChallenge)
		c.Abort(http.StatusUnauthorized, httpapi.CodeUnauthorized, httpapi.UnauthorizedMessage(err))
		return auth.Identity{}, false
	}
	return id, true
}
