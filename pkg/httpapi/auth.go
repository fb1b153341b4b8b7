package httpapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/auth"
)

// The transport side of pkg/auth: reading the bearer token of a gin or
// fasthttp request, answering 401/403 in the error format, and handing the
// verified identity to handlers, which take the user id only from there,
// never from a request body, so a user can act only as themselves.

const ctxIdentity = "auth.identity"

// Authenticate requires a valid bearer token (401 otherwise) and stores
// the identity for Identity.
func Authenticate(a *auth.Authority) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := a.Verify(auth.BearerToken(c.GetHeader("Authorization")))
		if err != nil {
			c.Header("WWW-Authenticate", challenge)
			Abort(c, http.StatusUnauthorized, CodeUnauthorized, unauthorized(err))
			return
		}
		c.Set(ctxIdentity, id)
		c.Next()
	}
}

// FastIdentity is Authenticate for a fast route (FastRoute): the identity
// of the bearer token, or a 401 written and false.
func FastIdentity(a *auth.Authority, c *FastCtx) (auth.Identity, bool) {
	id, err := a.Verify(auth.BearerToken(c.Header("Authorization")))
	if err != nil {
		c.Response.Header.Set("WWW-Authenticate", challenge)
		c.Abort(http.StatusUnauthorized, CodeUnauthorized, unauthorized(err))
		return auth.Identity{}, false
	}
	return id, true
}

const challenge = `Bearer realm="boxoffice"`

// unauthorized is the 401 message for a Verify error.
func unauthorized(err error) string {
	if errors.Is(err, auth.ErrNoToken) {
		return "missing bearer token (Authorization: Bearer <JWT>)"
	}
	return "invalid or expired bearer token"
}

// RequireAdmin answers 403 unless the identity (set by Authenticate) is
// admin.
func RequireAdmin() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !Identity(c).Admin() {
			Abort(c, http.StatusForbidden, CodeForbidden, "the admin role is required")
			return
		}
		c.Next()
	}
}

// Identity returns the identity stored by Authenticate (zero when absent).
func Identity(c *gin.Context) auth.Identity {
	v, _ := c.Get(ctxIdentity)
	id, _ := v.(auth.Identity)
	return id
}
