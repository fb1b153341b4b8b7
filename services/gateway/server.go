package main

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/chance"
	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/messages"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/pass"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/popularity"
	"github.com/boxoffice/boxoffice/pkg/ratelimit"
	"github.com/boxoffice/boxoffice/pkg/receipt"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// announcer publishes the side effects of admissions and releases
// (*admission.Announcer): every method returns after the broker confirmed.
type announcer interface {
	Announce(ctx context.Context, eventID string, entries []booking.OutboxEntry) error
	ReleaseSlot(ctx context.Context, eventID, reason, dedupe string) error
	Notify(ctx context.Context, n messages.Notification) error
	AnnounceWaitlist(ctx context.Context, eventID string) error
}

// relay announces outbox entries in the background (*admission.Relay); it
// returns false when it left them to the safety net's sweep.
type relay interface {
	Add(eventID string, entries ...booking.OutboxEntry) bool
}

// producer writes Kafka events with acks=all (*events.KafkaProducer).
type producer interface {
	Publish(ctx context.Context, evs ...events.Event) error
}

// Server is the gateway's HTTP API. Every field but Log and Metrics is
// required.
type Server struct {
	Store       *booking.Store
	Redis       redis.Cmdable // the popularity ranking
	Prefix      string
	Announcer   announcer
	Relay       relay // publishes the booking_request of a queued join after the answer
	Kafka       producer
	Provider    payment.Provider
	Auth        *auth.Authority
	DevTokens   bool
	DevTokenTTL time.Duration
	PublicURL   string
	TicketPrice int64
	Log         *zap.Logger
	Metrics     *httpapi.Metrics
	// Web registers the web pages (GET / and static files) when set.
	Web func(r *gin.Engine)
	// Ledger is the system of record (order_handlers.go): admin writes go
	// there first, payment ids are recorded there, orders are read from
	// there. Nil only in tests of the Redis path (the order routes are
	// then not registered).
	Ledger *ledger.Ledger
	// Currency is recorded with each payment (default ledger.DefaultCurrency).
	Currency string
	// BoxOfficeMetrics gets the box-office sweep's backlog (nil: none).
	BoxOfficeMetrics *ledger.BoxOfficeMetrics
	// Refunds makes refunds with the payment provider (the sandbox client).
	Refunds payment.Refunder
	// SeatMapMaxAge is how old a served seat map may be (0: 1s; seatmap.go).
	SeatMapMaxAge time.Duration

	// Limits are the abuse limits (abuse.go; nil: none), Proxies the
	// peers whose X-Forwarded-For names the client (TRUSTED_PROXIES).
	Limits  ratelimit.Config
	Proxies ratelimit.Proxies
	// Pass signs admission passes (nil: none); PassKeys are published at
	// GET /.well-known/jwks.json (pass.go).
	Pass     *pass.Signer
	PassKeys pass.Keys
	// Challenger issues and verifies the join challenge of events with
	// challenge "pow" (challenge.go; nil: such joins answer 503).
	Challenger *Challenger
	// CodeKey is the HMAC key of access codes' digests (codes.go; nil:
	// joins with a code answer 503).
	CodeKey []byte

	challenges challengeCache

	// Operators are the operator accounts, API tokens and the audit trail,
	// Sessions the browser sessions, AuditPublisher publishes the trail's
	// operator_action facts (operator_*.go). Nil without the ledger: the
	// admin API then takes a bearer JWT with the admin role only and
	// records nothing.
	Operators      *operators.Store
	Sessions       *operators.Sessions
	AuditPublisher *operators.Publisher
	// NoAdminJWT refuses bearer JWTs on the admin API (ADMIN_JWT=false):
	// only sessions and API tokens of accounts open it.
	NoAdminJWT bool
	// unaudited counts admin changes answered without an audit record
	// (auditGuard).
	unaudited atomic.Int64
	// breakerDeclared: this process's payment provider breaker declared
	// the provider degraded (provider.go onBreaker)
	breakerDeclared atomic.Bool

	// ProgressMaxAge is how old a served progress document may be (0: 1s;
	// progress.go).
	ProgressMaxAge time.Duration

	// EventListMaxAge is how old a served event list or ranking may be
	// (0: 1s; event_list.go).
	EventListMaxAge time.Duration

	seatMaps     seatMapCache
	progressDocs snapshotCache[chance.Params]
	orderSizes   orderSizes // seats per order, for the chance of a ticket
	// the event list and the ranking (event_list.go)
	eventIndex   snapshotCache[[]string]
	eventEntries snapshotCache[listedEvent]
	eventPages   snapshotCache[listPage]
	ranking      snapshotCache[[]popularity.Entry]
	popularPages snapshotCache[listPage]
	// the console's live documents (console_live.go)
	liveDocs snapshotCache[struct{}]
	// the admission log's chains (fairness_handlers.go)
	fairOnce sync.Once
	fairLog  *fairness.Log
	// join receipts (receipts.go): the batcher and each event's draw
	// commitment
	receiptsOnce sync.Once
	receipts     *receipt.Batcher
	drawCommits  snapshotCache[string]
	// each event's public phase schedule, from the ledger (event_handlers.go)
	schedules snapshotCache[[]publicPhase]
}

// FastHandler is the gateway's HTTP handler: join and position, which
// every waiting user calls, and the anonymous snapshots (snapshot.go)
// natively on fasthttp; every other route on the gin engine (Handler).
func (s *Server) FastHandler() fasthttp.RequestHandler {
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	s.eventPages.limit = maxEventPages
	return fastserver.New(s.Log, s.Metrics, s.Handler(),
		fastserver.Route{Method: http.MethodPost, Path: "/api/booking/request", Handle: s.join},
		fastserver.Route{Method: http.MethodGet, Path: "/api/booking/position", Handle: s.position},
		fastserver.Route{Method: http.MethodGet, Path: "/api/seats/available", Handle: s.seatsAvailable},
		fastserver.Route{Method: http.MethodGet, Path: "/api/events/{id}/progress", Handle: s.progress},
		fastserver.Route{Method: http.MethodGet, Path: "/api/events", Handle: s.listEvents},
		fastserver.Route{Method: http.MethodGet, Path: "/api/events/popular", Handle: s.popularEvents},
		// streams (SSE): gin buffers whole answers (console_live.go)
		fastserver.Route{Method: http.MethodGet, Path: "/api/admin/events/{id}/live", Handle: s.eventLive},
	)
}

// Handler returns the gin engine with every route but FastHandler's.
func (s *Server) Handler() http.Handler {
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	r := httpapi.New(s.Log, s.Metrics)
	r.GET("/.well-known/jwks.json", s.jwks())
	api := r.Group("/api")
	if s.DevTokens {
		api.POST("/auth/dev-token", s.devToken)
	}
	api.GET("/events/:id", s.getEvent)
	api.GET("/events/:id/challenge", s.challenge)
	api.GET("/events/:id/draw", s.getDraw)             // fairness_handlers.go
	api.GET("/events/:id/admissions", s.getAdmissions) // fairness_handlers.go

	b := api.Group("/booking", httpapi.Authenticate(s.Auth))
	b.POST("/select-seat", s.selectSeat)
	b.POST("/select-best", s.selectBest) // best_available.go
	b.POST("/payment/initiate", s.initiatePayment)
	b.POST("/cancel", s.cancel)
	s.waitlistRoutes(api) // waitlist_handlers.go

	adm := s.adminGroup(api) // operator_auth.go: sessions, tokens, roles
	s.operatorRoutes(api, adm)
	adm.POST("/events", s.createEvent)
	adm.PATCH("/events/:id", s.updateEvent)
	adm.GET("/events/:id", s.getEvent)
	adm.PUT("/provider", s.setProvider)            // provider.go
	adm.PUT("/events/:id/waitlist", s.setWaitlist) // waitlist_handlers.go
	adm.PUT("/events/:id/beacon", s.setBeacon)     // fairness_handlers.go
	s.ledgerRoutes(api, adm)
	s.consoleRoutes(adm) // console_orders.go
	s.reportRoutes(adm)
	s.seatMarksRoutes(adm)         // seat_marks.go
	s.codesRoutes(adm)             // codes.go
	s.registrationRoutes(api, adm) // registration.go

	if s.Web != nil {
		s.Web(r)
	}
	return r
}

// eventRequest is the body of join, payment initiate and cancel; Code
// is the join's access code (codes.go), which the others ignore.
type eventRequest struct {
	EventID string `json:"event_id"`
	Code    string `json:"code,omitempty"`
}

func (r eventRequest) Validate() error { return checkEventID(r.EventID) }

func checkEventID(id string) error {
	if id == "" {
		return errf("event_id is required")
	}
	if !ids.ValidEvent(id) {
		return errf("event_id must be " + ids.EventRule)
	}
	return nil
}

// eventIDParam trims and checks an ?event_id= value.
func eventIDParam(raw string) (string, error) {
	id := strings.TrimSpace(raw)
	return id, checkEventID(id)
}

type validationError string

func (e validationError) Error() string { return string(e) }

func errf(s string) error { return validationError(s) }

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func rfc3339OrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
