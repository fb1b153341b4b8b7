package main

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// The admission pass (pkg/pass): the join of an admitted user and the
// position of a user in the room carry "pass", a JWT signed with the
// current PASS_KEYS key; GET /.well-known/jwks.json publishes every
// configured key (current and previous) for origins and CDN workers to
// verify it offline (docs/admission-pass.md). A waiting user's join
// carries "receipt", whose root is signed with the same key (receipts.go).

// fastPass signs the pass into *dst; false when it answered (an error).
// now is the reply's time (Redis's clock, as the deadline), the pass's iat.
func (s *Server) fastPass(c *fastserver.Ctx, eventID, user string, seq int64, now, deadline time.Time, dst *string) bool {
	if s.Pass == nil || deadline.IsZero() {
		return true
	}
	p, err := s.Pass.Sign(eventID, user, seq, now, deadline)
	if err != nil {
		c.Logger().Error("sign admission pass", zap.Error(err))
		c.Abort(http.StatusInternalServerError, httpapi.CodeInternal, "could not sign the admission pass")
		return false
	}
	*dst = p
	return true
}

// jwks: GET /.well-known/jwks.json, the pass's public keys (an empty set
// without PASS_KEYS), cacheable for 5 minutes; hence a rotation first
// publishes the new key behind the current one, and only after the
// caches expired makes it current (docs/admission-pass.md).
func (s *Server) jwks() gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := s.PassKeys.JWKS()
		if err != nil {
			httpapi.Abort(c, http.StatusInternalServerError, httpapi.CodeInternal, "key set unavailable")
			return
		}
		c.Header("Cache-Control", "public, max-age=300")
		c.Data(http.StatusOK, "application/jwk-set+json", body)
	}
}
