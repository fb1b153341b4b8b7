package httpapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/auth"
)

// The transport side of pkg/auth: reading the bearer token of a gin
// request (the gateway's fasthttp routes share BearerChallenge and
// UnauthorizedMessage), answering 401/403 in the error format, and
// handing the verified identity to handlers, which take the user id only
// from there, never from a request body, so a user can act only as
// themselves.

const ctxIdentity = "auth.identity"

// Authenticate requires a valid bearer token (401 otherwise) and stores
// the identity for Identity.
func Authenticate(a *auth.Authority) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := a.Verify(auth.BearerToken(c.GetHeader("Authorization")))
		if err != nil {
			c.Header("WWW-Authenticate", BearerChallenge)
			Abort(c, http.StatusUnauthorized, CodeUnauthorized, UnauthorizedMessage(err))
			return
		}
		c.Set(ctxIdentity, id)
		c.Next()
	}
}

// BearerChallenge is the WWW-Authenticate header of every 401.
const BearerChallenge = `Bearer realm="boxoffice"`

// UnauthorizedMessage is the 401 message for a Verify error.
func UnauthorizedMessage(err error) string {
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
