package notifier

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/coder/websocket"
	"go.uber.org/zap"
)

// Store is what the notifier reads from the booking engine.
type Store interface {
	// Position is the user's current state (sent at connect).
	Position(ctx context.Context, eventID, userID string, limits ...booking.Limit) (booking.Status, error)
	// GetEvent feeds the position broadcast (its counts and whether the
	// sale is paused): one call per event per tick.
	GetEvent(ctx context.Context, eventID string) (booking.Event, error)
	// Touch marks connected users present, one call per event per tick.
	Touch(ctx context.Context, eventID string, userIDs ...string) error
}

// Authenticator turns a bearer token into the user id it names.
type Authenticator func(token string) (userID string, err error)

// Config tunes a Server. Zero values take the defaults of withDefaults.
type Config struct {
	// PositionInterval is the position broadcast tick (default 2 s).
	PositionInterval time.Duration
	// PresenceInterval is how often connected users are touched as present
	// (default 15 s); keep it well below the events' abandonment timeout.
	PresenceInterval time.Duration
	// PingInterval and PingTimeout: a connection that does not answer a
	// ping within the timeout is closed (defaults 20 s and 10 s).
	PingInterval, PingTimeout time.Duration
	// WriteTimeout bounds one message write (default 10 s).
	WriteTimeout time.Duration
	// SendQueue is the per-connection queue; a client that falls this many
	// messages behind is dropped (default 32).
	SendQueue int
	// MaxConnections refuses upgrades beyond this many connections with 503
	// (0: no limit; the notifier's main defaults it to
	// DefaultMaxConnections, from the file limit).
	MaxConnections int
	// MaxPerUser refuses a user's upgrades beyond this many connections to
	// one event with 429 (0: DefaultMaxPerUser; negative: no limit).
	MaxPerUser int
	// MaxPerIP refuses upgrades beyond this many connections from one
	// client address with 429 (0: DefaultMaxPerIP; negative: no limit).
	MaxPerIP int
	// OriginPatterns are the allowed Origin host patterns for the upgrade
	// (coder/websocket's AcceptOptions.OriginPatterns). Default "*": the
	// connection is authenticated by an explicit token, never by cookies,
	// so a cross-origin page gains nothing.
	OriginPatterns []string
}

func (c Config) withDefaults() Config {
	if c.PositionInterval <= 0 {
		c.PositionInterval = 2 * time.Second
	}
	if c.PresenceInterval <= 0 {
		c.PresenceInterval = 15 * time.Second
	}
	if c.PingInterval <= 0 {
		c.PingInterval = 20 * time.Second
	}
	if c.PingTimeout <= 0 {
		c.PingTimeout = 10 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.SendQueue <= 0 {
		c.SendQueue = 32
	}
	if len(c.OriginPatterns) == 0 {
		c.OriginPatterns = []string{"*"}
	}
	if c.MaxPerUser == 0 {
		c.MaxPerUser = DefaultMaxPerUser
	}
	if c.MaxPerIP == 0 {
		c.MaxPerIP = DefaultMaxPerIP
	}
	return c
}

// Subprotocol is offered by clients that pass the token as a
// "bearer.<jwt>" subprotocol; the server selects it so the token is not
// echoed back. It is the only subprotocol the server ever selects: a
// client that offers only "bearer.<jwt>" gets none (never its token).
const Subprotocol = "boxoffice.v1"

// Server is one notifier instance.
type Server struct {
	cfg   Config
	store Store
	auth  Authenticator
	hub   *Hub
	m     *Metrics
	log   *zap.Logger
	now   func() time.Time

	base       context.Context // parent of every connection
	cancelBase context.CancelCauseFunc
}

// NewServer returns a Server; Run starts its loops, Handler serves /ws.
func NewServer(cfg Config, store Store, auth Authenticator, m *Metrics, log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	s := &Server{cfg: cfg.withDefaults(), store: store, auth: auth, hub: NewHub(m), m: m, log: log, now: time.Now}
	s.base, s.cancelBase = context.WithCancelCause(context.Background())
	return s
}

// Hub returns the server's connection index.
func (s *Server) Hub() *Hub { return s.hub }

// Shutdown closes every connection with 1001 (going away) so that clients
// reconnect elsewhere. The HTTP server's own Shutdown does not track
// hijacked connections.
func (s *Server) Shutdown() { s.cancelBase(errShutdown) }

// Handler returns the HTTP handler: GET /ws; any other path is a 404,
// another method a 405, both in the JSON error format (the health checks
// are on the admin listener).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", s.serveWS)
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, r, http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, "method not allowed on this endpoint")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusNotFound, httpapi.CodeNotFound, "no such endpoint")
	})
	return mux
}

// token returns the bearer token of an upgrade request: the token query
// parameter, a "bearer.<jwt>" subprotocol, or an Authorization header
// (non-browser clients), and the subprotocol to select.
func token(r *http.Request) (tok, proto string) {
	var offered []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			offered = append(offered, strings.TrimSpace(p))
		}
	}
	for _, p := range offered {
		if t, ok := strings.CutPrefix(p, "bearer."); ok && tok == "" {
			tok = t
		}
	}
	for _, p := range offered {
		if p == Subprotocol {
			proto = p
		}
	}
	if t := r.URL.Query().Get("token"); t != "" {
		tok = t
	}
	if tok == "" {
		if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			tok = strings.TrimSpace(t)
		}
	}
	return tok, proto
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	tok, proto := token(r)
	if tok == "" {
		writeError(w, r, http.StatusUnauthorized, "unauthorized", "missing bearer token")
		return
	}
	user, err := s.auth(tok)
	if err != nil || !ids.Valid(user) {
		writeError(w, r, http.StatusUnauthorized, "unauthorized", "invalid or expired token")
		return
	}
	event := r.URL.Query().Get("event_id")
	if !ids.ValidEvent(event) {
		writeError(w, r, http.StatusBadRequest, "invalid_request", "event_id is required")
		return
	}
	// Register before reading the state, so that a notification published
	// after the read is queued rather than missed (it may then repeat what
	// the state says; every message is idempotent for the client). The
	// caps are checked and the connection counted in one step (limits.go).
	c := newClient(s.base, event, user, &s.cfg, s.m, s.hub)
	c.ip = clientIP(r)
	if why := s.hub.addCapped(c, s.cfg.MaxConnections, s.cfg.MaxPerUser, s.cfg.MaxPerIP); why != "" {
		c.cancel()
		s.m.Refused.WithLabelValues(string(why)).Inc()
		if why == refusedTotal {
			writeError(w, r, http.StatusServiceUnavailable, "too_many_connections", "notifier is at its connection limit")
		} else {
			writeError(w, r, http.StatusTooManyRequests, "too_many_connections",
				"too many connections "+map[refusal]string{refusedPerUser: "for this user and event", refusedPerIP: "from this address"}[why])
		}
		return
	}
	registered := true
	defer func() {
		if registered {
			s.hub.remove(c)
			c.cancel()
			c.discard() // what was queued before the upgrade failed
		}
	}()
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	st, perr := s.store.Position(ctx, event, user)
	cancel()
	if nf := (*booking.NotFoundError)(nil); errors.As(perr, &nf) {
		st = nf.Status // not joined: sold out still shows
	}
	if errors.Is(perr, booking.ErrEventNotFound) {
		writeError(w, r, http.StatusNotFound, "event_not_found", "event not found")
		return
	}
	first, err := initialMessage(event, st, perr, s.now())
	if err != nil {
		s.log.Warn("read user state", zap.String("event_id", event), zap.Error(err))
		writeError(w, r, http.StatusServiceUnavailable, "unavailable", "state store unavailable")
		return
	}

	opts := &websocket.AcceptOptions{OriginPatterns: s.cfg.OriginPatterns}
	if proto != "" {
		opts.Subprotocols = []string{proto}
	}
	// The server's read and write timeouts (service.NewHTTPServer) are
	// deadlines on the connection; a WebSocket lives for hours and has its
	// own ping timeout and per-write deadline. net/http's Hijack clears
	// them as well today; clearing them here keeps that true whatever the
	// server (TestWebSocketOutlivesServerTimeouts).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(smallBuffers{w}, r, opts)
	if err != nil { // Accept wrote the error response
		return
	}
	conn.SetReadLimit(4096)
	// Nothing is expected from the client; reading answers pings and close.
	// The reader is the connection's only goroutine while it is idle.
	readCtx := conn.CloseRead(c.ctx)
	context.AfterFunc(readCtx, c.cancel)
	s.m.Accepted.Inc()
	// The handler returns so that its goroutine (with a stack grown by the
	// handshake and the store call) and the request are freed; writers are
	// started on demand by the client.
	registered = false
	c.start(conn, first, func(err error) {
		s.hub.remove(c)
		if errors.Is(err, errSlowClient) {
			s.log.Info("slow client dropped", zap.String("event_id", event), zap.String("user_id", user))
		}
	})
}

// Buffer sizes of a hijacked connection. net/http hands the hijacker 4 KiB
// for each direction; the notifier reads only control frames and writes
// messages of a few hundred bytes, and keeps tens of thousands of
// connections, so it swaps them for the small ones below. A larger message
// is written straight through.
const (
	hijackReadBuffer  = 256
	hijackWriteBuffer = 512
)

// smallBuffers is a ResponseWriter whose Hijack returns small bufio buffers.
type smallBuffers struct{ http.ResponseWriter }

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("response writer cannot hijack")
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		conn.Close()
		return nil, nil, err
	}
	var rd io.Reader = conn
	if n := brw.Reader.Buffered(); n > 0 { // bytes the client sent early
		b, _ := brw.Reader.Peek(n)
		rd = io.MultiReader(bytes.NewReader(bytes.Clone(b)), conn)
	}
	return conn, bufio.NewReadWriter(bufio.NewReaderSize(rd, hijackReadBuffer), bufio.NewWriterSize(conn, hijackWriteBuffer)), nil
}

// writeError writes the project's JSON error (httpapi.Write), with the
// Bearer challenge on a 401.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="boxoffice"`)
	}
	httpapi.Write(w, status, code, msg, r.URL.Path)
}
