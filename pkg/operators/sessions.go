package operators

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
)

// Session is a browser session as an operator or admin sees it: never its
// cookie, which only the browser holds (the store keeps its SHA-256).
type Session struct {
	ID         string     `json:"id"`
	Account    string     `json:"account"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	LastSeenAt time.Time  `json:"last_seen_at"`
	RemoteAddr string     `json:"remote_addr"`
	UserAgent  string     `json:"user_agent"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	RevokedBy  string     `json:"revoked_by,omitempty"`
}

// SessionConfig configures the session cookie.
type SessionConfig struct {
	// Lifetime is the longest a session lasts from sign-in (default 12h);
	// IdleTimeout ends one unused for that long (default 1h).
	Lifetime    time.Duration
	IdleTimeout time.Duration
	// Secure marks the cookie Secure and names it with the __Host- prefix
	// (the browser then sends it only over HTTPS, to this host alone): set
	// it whenever browsers reach the gateway over TLS.
	Secure bool
}

// CookieName is the session cookie's name without Secure; SecureCookieName
// with it.
const (
	CookieName       = "boxoffice_operator"
	SecureCookieName = "__Host-boxoffice_operator"
)

// Sessions signs operators in and out of browser sessions: a cookie
// (HttpOnly, SameSite=Strict, Secure when configured, not kept when the
// browser closes) whose token the session manager (scs) keeps hashed in
// PostgreSQL, and a row of operator_sessions that names the account and
// can be revoked. A request's session counts only while both exist, the
// row is neither revoked nor expired, and the account is enabled.
type Sessions struct {
	store *Store
	m     *scs.SessionManager
	pg    *pgxstore.PostgresStore
}

// NewSessions returns the session manager of store's accounts. Close it.
func NewSessions(store *Store, cfg SessionConfig) *Sessions {
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = 12 * time.Hour
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = time.Hour
	}
	pg := pgxstore.NewWithCleanupInterval(store.pool, 10*time.Minute)
	m := scs.New()
	m.Store = pg
	m.HashTokenInStore = true
	m.Lifetime, m.IdleTimeout = cfg.Lifetime, cfg.IdleTimeout
	m.Cookie.Name = CookieName
	if cfg.Secure {
		m.Cookie.Name = SecureCookieName
	}
	m.Cookie.HttpOnly = true
	m.Cookie.SameSite = http.SameSiteStrictMode
	m.Cookie.Secure = cfg.Secure
	m.Cookie.Path = "/"
	m.Cookie.Persist = false
	return &Sessions{store: store, m: m, pg: pg}
}

// Close stops the expired sessions' cleanup.
func (ss *Sessions) Close() { ss.pg.StopCleanup() }

// CookieName is the session cookie's name.
func (ss *Sessions) CookieName() string { return ss.m.Cookie.Name }

const sidKey = "sid"

// Start begins a session of account a (after SignIn) and writes its cookie
// to w. remoteAddr and userAgent are shown in the session lists.
func (ss *Sessions) Start(ctx context.Context, w http.ResponseWriter, a Account, remoteAddr, userAgent string) (Session, error) {
	sctx, err := ss.m.Load(ctx, "") // a new session: a token never seen before
	if err != nil {
		return Session{}, wrap("start session", err)
	}
	if len(userAgent) > 256 {
		userAgent = userAgent[:256]
	}
	id := "ses_" + rand.Text()
	var s Session
	err = scanSessionRow(ss.store.pool.QueryRow(ctx, `INSERT INTO operator_sessions (id, account, expires_at, remote_addr, user_agent)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+sessionColumns, id, a.Name, ss.store.now().Add(ss.m.Lifetime), remoteAddr, userAgent), &s)
	if err != nil {
		return Session{}, wrap("start session", err)
	}
	ss.m.Put(sctx, sidKey, id)
	tok, exp, err := ss.m.Commit(sctx)
	if err != nil {
		return Session{}, wrap("start session", err)
	}
	ss.m.WriteSessionCookie(sctx, w, tok, exp)
	return s, nil
}

// Resolve returns the principal of r's session cookie, if any, with a
// context that holds the session (for End). A session whose row was
// revoked, expired, or whose account is disabled is destroyed, and its
// cookie cleared in w: ok is false. While the session lasts, each request
// extends its idle timeout (the cookie is written again).
func (ss *Sessions) Resolve(w http.ResponseWriter, r *http.Request) (p Principal, ctx context.Context, ok bool, err error) {
	c, cerr := r.Cookie(ss.m.Cookie.Name)
	if cerr != nil || c.Value == "" {
		return Principal{}, r.Context(), false, nil
	}
	ctx, err = ss.m.Load(r.Context(), c.Value)
	if err != nil {
		return Principal{}, r.Context(), false, wrap("load session", err)
	}
	sid := ss.m.GetString(ctx, sidKey)
	if sid == "" { // unknown or expired token: scs made an empty session
		ss.m.WriteSessionCookie(ctx, w, "", time.Time{})
		return Principal{}, ctx, false, nil
	}
	err = ss.store.pool.QueryRow(ctx, `UPDATE operator_sessions s SET last_seen_at = now()
		FROM operator_accounts a
		WHERE s.id = $1 AND a.name = s.account AND s.revoked_at IS NULL AND s.expires_at > $2 AND a.disabled_at IS NULL
		RETURNING a.name, a.role`, sid, ss.store.now()).Scan(&p.Account, &p.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := ss.m.Destroy(ctx); err != nil {
			return Principal{}, ctx, false, wrap("end session", err)
		}
		ss.m.WriteSessionCookie(ctx, w, "", time.Time{})
		return Principal{}, ctx, false, nil
	}
	if err != nil {
		return Principal{}, ctx, false, wrap("session", err)
	}
	p.Via, p.SessionID = ViaSession, sid
	tok, exp, err := ss.m.Commit(ctx) // the idle timeout starts again
	if err != nil {
		return Principal{}, ctx, false, wrap("session", err)
	}
	ss.m.WriteSessionCookie(ctx, w, tok, exp)
	return p, ctx, true, nil
}

// Peek returns the principal of a session cookie's value without
// touching the session (no idle extension): for a decision made before a
// request's body is read (the gateway's body limit).
func (ss *Sessions) Peek(ctx context.Context, cookie string) (Principal, bool, error) {
	sctx, err := ss.m.Load(ctx, cookie)
	if err != nil {
		return Principal{}, false, wrap("load session", err)
	}
	sid := ss.m.GetString(sctx, sidKey)
	if sid == "" {
		return Principal{}, false, nil
	}
	p := Principal{Via: ViaSession, SessionID: sid}
	err = ss.store.pool.QueryRow(ctx, `SELECT a.name, a.role FROM operator_sessions s JOIN operator_accounts a ON a.name = s.account
		WHERE s.id = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND a.disabled_at IS NULL`, sid, ss.store.now()).Scan(&p.Account, &p.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, false, nil
	}
	if err != nil {
		return Principal{}, false, wrap("session", err)
	}
	return p, true, nil
}

// End signs the session in ctx (from Resolve) out: its row is revoked,
// the stored session deleted and the cookie cleared, so the cookie is
// worth nothing even if it was copied.
func (ss *Sessions) End(ctx context.Context, w http.ResponseWriter, by string) error {
	sid := ss.m.GetString(ctx, sidKey)
	if sid != "" {
		if _, err := ss.store.RevokeSession(ctx, sid, by); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	if err := ss.m.Destroy(ctx); err != nil {
		return wrap("end session", err)
	}
	// the cookie Resolve wrote for this request gives way to the clearing
	h := w.Header()
	h["Set-Cookie"] = slices.DeleteFunc(h["Set-Cookie"], func(c string) bool { return strings.HasPrefix(c, ss.m.Cookie.Name+"=") })
	h.Del("Cache-Control")
	ss.m.WriteSessionCookie(ctx, w, "", time.Time{})
	return nil
}

const sessionColumns = `id, account, created_at, expires_at, last_seen_at, remote_addr, user_agent, revoked_at, revoked_by`

func scanSessionRow(row pgx.Row, s *Session) error {
	var by *string
	err := row.Scan(&s.ID, &s.Account, &s.CreatedAt, &s.ExpiresAt, &s.LastSeenAt, &s.RemoteAddr, &s.UserAgent, &s.RevokedAt, &by)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if by != nil {
		s.RevokedBy = *by
	}
	return err
}

// Sessions lists account's sessions that are open (neither revoked nor
// expired), newest first.
func (s *Store) Sessions(ctx context.Context, account string) ([]Session, error) {
	if !known(NormalizeName(account)) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+sessionColumns+` FROM operator_sessions
		WHERE account = $1 AND revoked_at IS NULL AND expires_at > $2 ORDER BY created_at DESC`, NormalizeName(account), s.now())
	if err != nil {
		return nil, wrap("sessions", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) {
		var x Session
		return x, scanSessionRow(r, &x)
	})
	return out, wrap("sessions", err)
}

// Session returns one session row.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	if !validID(id) {
		return Session{}, ErrNotFound
	}
	var x Session
	err := scanSessionRow(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM operator_sessions WHERE id = $1`, id), &x)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Session{}, wrap("session", err)
	}
	return x, err
}

// RevokeSession ends session id at its next request; revoking one already
// revoked changes nothing and returns it as it is.
func (s *Store) RevokeSession(ctx context.Context, id, by string) (Session, error) {
	if !validID(id) {
		return Session{}, ErrNotFound
	}
	var x Session
	err := scanSessionRow(s.pool.QueryRow(ctx, `UPDATE operator_sessions SET revoked_at = coalesce(revoked_at, now()),
		revoked_by = coalesce(revoked_by, $2) WHERE id = $1 RETURNING `+sessionColumns, id, by), &x)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Session{}, wrap("revoke session", err)
	}
	return x, err
}
