package main

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/operators"
)

// The operators' routes (docs/operators.md): signing in and out, the
// caller's own account, and the admins' management of accounts, sessions
// and API tokens, all under /api/admin so that the console's pages sit on
// them. They need the ledger (PostgreSQL); without one they are not
// registered.
func (s *Server) operatorRoutes(api, adm *gin.RouterGroup) {
	if s.Operators == nil {
		return
	}
	// signing in needs no caller, only a same-origin request
	api.POST("/admin/sign-in", s.crossOrigin(), s.signIn)
	adm.POST("/sign-out", s.signOut)
	adm.GET("/me", s.me)
	adm.POST("/me/password", s.changeOwnPassword)
	adm.GET("/audit", s.listAudit)

	adm.GET("/accounts", s.listAccounts)
	adm.POST("/accounts", s.createAccount)
	adm.GET("/accounts/:name", s.getAccount)
	adm.PATCH("/accounts/:name", s.updateAccount)
	adm.POST("/accounts/:name/password", s.resetPassword)
	adm.GET("/accounts/:name/sessions", s.accountSessions)
	adm.GET("/accounts/:name/tokens", s.accountTokens)
	adm.POST("/accounts/:name/tokens", s.issueToken)
	adm.DELETE("/sessions/:id", s.revokeSession)
	adm.DELETE("/tokens/:id", s.revokeToken)
}

// operatorErr answers an error of pkg/operators.
func operatorErr(c *gin.Context, err error) {
	var le *operators.LockedError
	switch {
	case errors.As(err, &le):
		c.Header("Retry-After", strconvSeconds(le.RetryAfter))
		httpapi.Abort(c, http.StatusTooManyRequests, codeSignInLocked,
			"too many failed sign-ins; try again later or ask an admin to reset the password")
	case errors.Is(err, operators.ErrBadCredentials):
		httpapi.Abort(c, http.StatusUnauthorized, codeBadCredentials, err.Error())
	case errors.Is(err, operators.ErrInvalid):
		httpapi.Abort(c, http.StatusBadRequest, httpapi.CodeInvalidArgument, strings.TrimPrefix(err.Error(), "invalid: "))
	case errors.Is(err, operators.ErrExists):
		httpapi.Abort(c, http.StatusConflict, codeAccountExists, err.Error())
	case errors.Is(err, operators.ErrLastAdmin):
		httpapi.Abort(c, http.StatusConflict, codeLastAdmin, err.Error())
	case errors.Is(err, operators.ErrNotFound):
		httpapi.Abort(c, http.StatusNotFound, codeNotFound, "no such account, session or token")
	default:
		bookinghttp.Fail(c, err)
	}
}

// strconvSeconds is d as a Retry-After value: whole seconds, at least 1.
func strconvSeconds(d time.Duration) string {
	return strconv.FormatInt(max(1, int64((d+time.Second-1)/time.Second)), 10)
}

// signInRequest is the body of POST /api/admin/sign-in. Password is never
// logged (it has no String method, and no log line names the body).
type signInRequest struct {
	Account  string `json:"account"`
	Password string `json:"password"`
}

func (r signInRequest) Validate() error {
	switch {
	case strings.TrimSpace(r.Account) == "":
		return errf("account is required")
	case r.Password == "":
		return errf("password is required")
	case len(r.Account) > 200:
		return errf("account must be at most 200 characters")
	case len(r.Password) > operators.MaxPasswordLen:
		return errf("password must be at most 256 characters")
	}
	return nil
}

// signIn: POST /api/admin/sign-in — checks the password, starts a session
// and sets its cookie. 401 bad_credentials for a wrong name or password
// (or a disabled account), 429 sign_in_locked with Retry-After past the
// lockout.
func (s *Server) signIn(c *gin.Context) {
	var req signInRequest
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	ip := s.clientAddr(c)
	log := httpapi.Logger(c).With(zap.String("account", operators.NormalizeName(req.Account)), zap.String("remote_addr", addrString(ip)))
	a, err := s.Operators.SignIn(c.Request.Context(), req.Account, req.Password, ip)
	if err != nil {
		var le *operators.LockedError
		if errors.Is(err, operators.ErrBadCredentials) || errors.As(err, &le) {
			log.Warn("operator sign-in refused", zap.Error(err))
		}
		operatorErr(c, err)
		return
	}
	ses, err := s.Sessions.Start(c.Request.Context(), c.Writer, a, addrString(ip), c.GetHeader("User-Agent"))
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	log.Info("operator signed in", zap.String("session_id", ses.ID))
	c.JSON(http.StatusOK, gin.H{"account": a.Name, "role": a.Role, "session": ses})
}

// signOut: POST /api/admin/sign-out — ends the caller's session (its
// cookie is worth nothing afterwards). A token or JWT caller has no
// session: nothing happens.
func (s *Server) signOut(c *gin.Context) {
	p := principal(c)
	if p.Via == operators.ViaSession {
		if err := s.Sessions.End(c.Request.Context(), c.Writer, p.Account); err != nil {
			bookinghttp.Fail(c, err)
			return
		}
		httpapi.Logger(c).Info("operator signed out", zap.String("account", p.Account), zap.String("session_id", p.SessionID))
	}
	c.Status(http.StatusNoContent)
}

// me: GET /api/admin/me — the caller: account, role, how signed in.
func (s *Server) me(c *gin.Context) {
	p := principal(c)
	body := gin.H{"account": p.Account, "role": p.Role, "via": p.Via}
	if p.SessionID != "" {
		body["session_id"] = p.SessionID
	}
	if p.TokenID != "" {
		body["token_id"] = p.TokenID
	}
	c.JSON(http.StatusOK, body)
}

// passwordChange is the body of POST /api/admin/me/password.
type passwordChange struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

func (r passwordChange) Validate() error {
	switch {
	case r.CurrentPassword == "":
		return errf("current_password is required")
	case len(r.CurrentPassword) > operators.MaxPasswordLen:
		return errf("current_password must be at most 256 characters")
	case operators.CheckPassword(r.NewPassword) != nil:
		return errf(fmt.Sprintf("new_password must be %d to %d characters", operators.MinPasswordLen, operators.MaxPasswordLen))
	}
	return nil
}

// changeOwnPassword: POST /api/admin/me/password — the caller's new
// password, confirmed by the current one; every other session of the
// account ends.
func (s *Server) changeOwnPassword(c *gin.Context) {
	p := principal(c)
	if p.Via == operators.ViaJWT {
		httpapi.Abort(c, http.StatusForbidden, httpapi.CodeForbidden, "a bearer JWT has no account and no password")
		return
	}
	var req passwordChange
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	ctx := c.Request.Context()
	if err := s.Operators.CheckAccountPassword(ctx, p.Account, req.CurrentPassword); err != nil {
		operatorErr(c, err)
		return
	}
	a, err := s.Operators.SetPassword(ctx, p.Account, req.NewPassword, p.Account, p.SessionID)
	if err != nil {
		operatorErr(c, err)
		return
	}
	if !s.audit(c, operators.ActionAccountPassword, "", a.Name, nil, gin.H{"password_changed_at": a.PasswordChangedAt}) {
		return
	}
	c.Status(http.StatusNoContent)
}

// listAccounts: GET /api/admin/accounts (admin).
func (s *Server) listAccounts(c *gin.Context) {
	as, err := s.Operators.Accounts(c.Request.Context())
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if as == nil {
		as = []operators.Account{}
	}
	c.JSON(http.StatusOK, gin.H{"accounts": as})
}

// getAccount: GET /api/admin/accounts/{name} (admin).
func (s *Server) getAccount(c *gin.Context) {
	a, err := s.Operators.Account(c.Request.Context(), c.Param("name"))
	if err != nil {
		operatorErr(c, err)
		return
	}
	c.JSON(http.StatusOK, a)
}

// newAccount is the body of POST /api/admin/accounts.
type newAccount struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password"`
}

func (r newAccount) Validate() error {
	if err := operators.CheckName(operators.NormalizeName(r.Name)); err != nil {
		return err
	}
	if _, err := operators.ParseRole(r.Role); err != nil {
		return err
	}
	return operators.CheckPassword(r.Password)
}

// createAccount: POST /api/admin/accounts (admin) — 201 with the account;
// 409 account_exists.
func (s *Server) createAccount(c *gin.Context) {
	var req newAccount
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	role, err := operators.ParseRole(req.Role)
	if err != nil {
		operatorErr(c, err)
		return
	}
	p := principal(c)
	a, err := s.Operators.CreateAccount(c.Request.Context(), req.Name, role, req.Password, p.Account)
	if err != nil {
		operatorErr(c, err)
		return
	}
	if !s.audit(c, operators.ActionAccountCreate, "", a.Name, nil, gin.H{"role": a.Role, "disabled": false}) {
		return
	}
	c.JSON(http.StatusCreated, a)
}

// accountChange is the body of PATCH /api/admin/accounts/{name}.
type accountChange struct {
	Role     *string `json:"role"`
	Disabled *bool   `json:"disabled"`
}

func (r accountChange) Validate() error {
	if r.Role == nil && r.Disabled == nil {
		return errf(`nothing to change: give "role" or "disabled"`)
	}
	if r.Role != nil {
		if _, err := operators.ParseRole(*r.Role); err != nil {
			return err
		}
	}
	return nil
}

// updateAccount: PATCH /api/admin/accounts/{name} (admin) — role and
// disabled; disabling ends the account's sessions and tokens at once. 409
// last_admin for the last enabled admin.
func (s *Server) updateAccount(c *gin.Context) {
	var req accountChange
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	var ch operators.AccountChange
	if req.Role != nil {
		r, err := operators.ParseRole(*req.Role)
		if err != nil {
			operatorErr(c, err)
			return
		}
		ch.Role = &r
	}
	ch.Disabled = req.Disabled
	before, after, err := s.Operators.UpdateAccount(c.Request.Context(), c.Param("name"), ch, principal(c).Account)
	if err != nil {
		operatorErr(c, err)
		return
	}
	if !s.audit(c, operators.ActionAccountUpdate, "", after.Name, gin.H{"role": before.Role, "disabled": before.Disabled},
		gin.H{"role": after.Role, "disabled": after.Disabled}) {
		return
	}
	c.JSON(http.StatusOK, after)
}

// passwordReset is the body of POST /api/admin/accounts/{name}/password.
type passwordReset struct {
	Password string `json:"password"`
}

func (r passwordReset) Validate() error { return operators.CheckPassword(r.Password) }

// resetPassword: POST /api/admin/accounts/{name}/password (admin) — a new
// password; the account's sessions end and a lockout is lifted.
func (s *Server) resetPassword(c *gin.Context) {
	var req passwordReset
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	p := principal(c)
	keep := ""
	if operators.NormalizeName(c.Param("name")) == p.Account {
		keep = p.SessionID // an admin resetting their own keeps this session
	}
	a, err := s.Operators.SetPassword(c.Request.Context(), c.Param("name"), req.Password, p.Account, keep)
	if err != nil {
		operatorErr(c, err)
		return
	}
	if !s.audit(c, operators.ActionAccountPassword, "", a.Name, nil, gin.H{"password_changed_at": a.PasswordChangedAt}) {
		return
	}
	c.JSON(http.StatusOK, a)
}

// accountSessions: GET /api/admin/accounts/{name}/sessions (admin) — the
// account's open sessions, newest first.
func (s *Server) accountSessions(c *gin.Context) {
	ctx := c.Request.Context()
	if _, err := s.Operators.Account(ctx, c.Param("name")); err != nil {
		operatorErr(c, err)
		return
	}
	ss, err := s.Operators.Sessions(ctx, c.Param("name"))
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if ss == nil {
		ss = []operators.Session{}
	}
	c.JSON(http.StatusOK, gin.H{"sessions": ss})
}

// revokeSession: DELETE /api/admin/sessions/{id} (admin) — the session
// ends at its next request. Again: 200, nothing changes.
func (s *Server) revokeSession(c *gin.Context) {
	ctx := c.Request.Context()
	prev, err := s.Operators.Session(ctx, c.Param("id"))
	if err != nil {
		operatorErr(c, err)
		return
	}
	ses, err := s.Operators.RevokeSession(ctx, prev.ID, principal(c).Account)
	if err != nil {
		operatorErr(c, err)
		return
	}
	if prev.RevokedAt != nil {
		noChange(c)
	} else if !s.audit(c, operators.ActionSessionRevoke, "", ses.Account, gin.H{"session_id": ses.ID, "revoked": false},
		gin.H{"session_id": ses.ID, "revoked": true}) {
		return
	}
	c.JSON(http.StatusOK, ses)
}

// accountTokens: GET /api/admin/accounts/{name}/tokens (admin) — every
// token of the account, revoked ones too, never a secret.
func (s *Server) accountTokens(c *gin.Context) {
	ctx := c.Request.Context()
	if _, err := s.Operators.Account(ctx, c.Param("name")); err != nil {
		operatorErr(c, err)
		return
	}
	ts, err := s.Operators.Tokens(ctx, c.Param("name"))
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if ts == nil {
		ts = []operators.Token{}
	}
	c.JSON(http.StatusOK, gin.H{"tokens": ts})
}

// newToken is the body of POST /api/admin/accounts/{name}/tokens.
type newToken struct {
	Name       string `json:"name"`
	TTLSeconds int64  `json:"ttl_seconds"`
}

// maxTokenTTL bounds a token's lifetime: two years.
const maxTokenTTL = 2 * 365 * 24 * time.Hour

func (r newToken) Validate() error {
	if n := strings.TrimSpace(r.Name); n == "" || len(n) > operators.MaxTokenNameLen || strings.ContainsFunc(n, unicode.IsControl) {
		return errf("name must be 1-100 characters without control characters")
	}
	if r.TTLSeconds < 0 || time.Duration(r.TTLSeconds)*time.Second > maxTokenTTL {
		return errf("ttl_seconds must be 0 (until revoked) to 63072000 (two years)")
	}
	return nil
}

// issueToken: POST /api/admin/accounts/{name}/tokens (admin) — 201 with
// the token and its secret, shown this once.
func (s *Server) issueToken(c *gin.Context) {
	var req newToken
	if !httpapi.BindStrict(c, &req, httpapi.MaxBody) {
		return
	}
	t, secret, err := s.Operators.IssueToken(c.Request.Context(), c.Param("name"), req.Name, principal(c).Account,
		time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		operatorErr(c, err)
		return
	}
	if !s.audit(c, operators.ActionTokenIssue, "", t.Account, nil, gin.H{"token_id": t.ID, "name": t.Name, "expires_at": t.ExpiresAt}) {
		return
	}
	c.JSON(http.StatusCreated, gin.H{"token": t, "secret": secret})
}

// revokeToken: DELETE /api/admin/tokens/{id} (admin) — refused at once
// from now on. Again: 200, nothing changes.
func (s *Server) revokeToken(c *gin.Context) {
	ctx := c.Request.Context()
	prev, err := s.Operators.Token(ctx, c.Param("id"))
	if err != nil {
		operatorErr(c, err)
		return
	}
	t, err := s.Operators.RevokeToken(ctx, prev.ID, principal(c).Account)
	if err != nil {
		operatorErr(c, err)
		return
	}
	if prev.RevokedAt != nil {
		noChange(c)
	} else if !s.audit(c, operators.ActionTokenRevoke, "", t.Account, gin.H{"token_id": t.ID, "name": t.Name, "revoked": false},
		gin.H{"token_id": t.ID, "name": t.Name, "revoked": true}) {
		return
	}
	c.JSON(http.StatusOK, t)
}
