package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// The admin API's door (docs/operators.md, docs/security.md): who is
// calling, whether their role may call the route, and whether a browser
// sent the request from another site.
//
// A caller is one of: a browser session (the cookie of POST
// /api/admin/sign-in), an API token of an account (Authorization: Bearer
// bxo_…), or a bearer JWT with the admin role (the development and
// bootstrap path, off with ADMIN_JWT=false). Sessions and tokens act with
// their account's role at the time of the request; a disabled account's
// stop at once.

// Error codes of the operators' routes.
const (
	codeCrossOrigin    = "cross_origin"
	codeBadCredentials = "bad_credentials"
	codeSignInLocked   = "sign_in_locked"
	codeLastAdmin      = "last_admin"
	codeAccountExists  = "account_exists"
	codeNotFound       = "not_found"
)

const ctxPrincipal = "operators.principal"

// principal is the caller of an admin route (set by authenticate).
func principal(c *gin.Context) operators.Principal {
	v, _ := c.Get(ctxPrincipal)
	p, _ := v.(operators.Principal)
	return p
}

// adminGroup is /api/admin with its door: cross-site requests refused,
// the caller authenticated, the route's role required, and every
// successful change checked for its audit record (operator_audit.go).
func (s *Server) adminGroup(api *gin.RouterGroup) *gin.RouterGroup {
	return api.Group("/admin", s.crossOrigin(), s.authenticate, authorize, s.auditGuard)
}

// crossOrigin refuses a state-changing request that a browser sent from
// another origin (net/http's CrossOriginProtection: Sec-Fetch-Site, else
// Origin against Host), so a page elsewhere cannot make a signed-in
// operator's browser act. Requests without those headers (curl, scripts
// with a token) pass: they carry no ambient credentials. PUBLIC_URL's
// origin is trusted too, for a proxy that rewrites Host.
func (s *Server) crossOrigin() gin.HandlerFunc {
	cop := http.NewCrossOriginProtection()
	if u, err := url.Parse(s.PublicURL); err == nil && u.Scheme != "" && u.Host != "" {
		if err := cop.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			s.Log.Warn("PUBLIC_URL is not a trusted origin for the admin API", zap.String("url", s.PublicURL), zap.Error(err))
		}
	}
	return func(c *gin.Context) {
		if err := cop.Check(c.Request); err != nil {
			httpapi.Abort(c, http.StatusForbidden, codeCrossOrigin, "cross-origin request refused: the admin API takes changes from its own pages only")
			return
		}
		c.Next()
	}
}

// authenticate sets the caller (principal) or answers 401 (403 for a
// valid JWT without the admin role).
func (s *Server) authenticate(c *gin.Context) {
	p, ok := s.caller(c)
	if !ok {
		return
	}
	c.Set(ctxPrincipal, p)
	c.Next()
}

// caller finds the principal of c's bearer credential or session cookie;
// false when it answered.
func (s *Server) caller(c *gin.Context) (operators.Principal, bool) {
	unauthorized := func(msg string) (operators.Principal, bool) {
		c.Header("WWW-Authenticate", `Bearer realm="boxoffice"`)
		httpapi.Abort(c, http.StatusUnauthorized, httpapi.CodeUnauthorized, msg)
		return operators.Principal{}, false
	}
	if bearer := auth.BearerToken(c.GetHeader("Authorization")); bearer != "" {
		if operators.IsToken(bearer) {
			if s.Operators == nil {
				return unauthorized("API tokens need the ledger (DATABASE_URL)")
			}
			p, err := s.Operators.VerifyToken(c.Request.Context(), bearer)
			if errors.Is(err, operators.ErrNotFound) {
				return unauthorized("invalid, expired or revoked API token")
			}
			if err != nil {
				bookinghttp.Fail(c, err)
				return operators.Principal{}, false
			}
			return p, true
		}
		if s.NoAdminJWT {
			return unauthorized("bearer JWTs do not open the admin API here (ADMIN_JWT=false): sign in, or use an API token")
		}
		id, err := s.Auth.Verify(bearer)
		if err != nil {
			return unauthorized("invalid or expired bearer token")
		}
		if !id.Admin() {
			httpapi.Abort(c, http.StatusForbidden, httpapi.CodeForbidden, "the admin role is required")
			return operators.Principal{}, false
		}
		return operators.Principal{Account: "jwt:" + id.UserID, Role: operators.Admin, Via: operators.ViaJWT}, true
	}
	if s.Sessions != nil {
		p, ctx, ok, err := s.Sessions.Resolve(c.Writer, c.Request)
		if err != nil {
			bookinghttp.Fail(c, err)
			return operators.Principal{}, false
		}
		if ok {
			c.Request = c.Request.WithContext(ctx) // the session, for sign-out
			return p, true
		}
	}
	return unauthorized("sign in (POST /api/admin/sign-in), or send Authorization: Bearer <API token>")
}

// routeRoles are the routes that need more than the default of their
// method (GET and HEAD: viewer; any other: operator), by method and gin
// path. Everything that manages accounts, sessions and tokens is the
// admin's; the audit trail is for operators and admins.
var routeRoles = map[string]operators.Role{
	"GET /api/admin/audit": operators.Operator,
	// signing in needs no caller; an operator's own account: any role
	"POST /api/admin/sign-in":     operators.Viewer,
	"POST /api/admin/sign-out":    operators.Viewer,
	"POST /api/admin/me/password": operators.Viewer,
}

// adminOnly are the path prefixes only admins reach, whatever the method.
var adminOnly = []string{"/api/admin/accounts", "/api/admin/sessions", "/api/admin/tokens"}

// requiredRole is the role a route needs.
func requiredRole(method, path string) operators.Role {
	if r, ok := routeRoles[method+" "+path]; ok {
		return r
	}
	for _, p := range adminOnly {
		if path == p || strings.HasPrefix(path, p+"/") {
			return operators.Admin
		}
	}
	if method == http.MethodGet || method == http.MethodHead {
		return operators.Viewer
	}
	return operators.Operator
}

// authorize answers 403 unless the caller's role may call the route.
func authorize(c *gin.Context) {
	need := requiredRole(c.Request.Method, c.FullPath())
	if !principal(c).Role.Allows(need) {
		httpapi.Abort(c, http.StatusForbidden, httpapi.CodeForbidden, "the "+string(need)+" role is required")
		return
	}
	c.Next()
}

// clientAddr is the client's address: X-Forwarded-For only from a
// trusted proxy (TRUSTED_PROXIES).
func (s *Server) clientAddr(c *gin.Context) netip.Addr {
	host, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		host = c.Request.RemoteAddr
	}
	peer, _ := netip.ParseAddr(host)
	return s.Proxies.ClientIP(peer, c.GetHeader("X-Forwarded-For"))
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// mayCreateEvents reports whether a request's credentials, read from its
// header before its body, may create events (operator or admin): the
// large body limit of POST /api/admin/events is for them only. The
// session or token is looked up in PostgreSQL (bounded by a second).
func (s *Server) mayCreateEvents(h *fasthttp.RequestHeader) bool {
	if bearer := auth.BearerToken(string(h.Peek("Authorization"))); bearer != "" {
		if !operators.IsToken(bearer) {
			id, err := s.Auth.Verify(bearer)
			return err == nil && id.Admin() && !s.NoAdminJWT
		}
		if s.Operators == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		p, err := s.Operators.VerifyToken(ctx, bearer)
		return err == nil && p.Role.Allows(operators.Operator)
	}
	if s.Sessions == nil {
		return false
	}
	cookie := h.Cookie(s.Sessions.CookieName())
	if len(cookie) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, ok, err := s.Sessions.Peek(ctx, string(cookie))
	return err == nil && ok && p.Role.Allows(operators.Operator)
}
