// Command gateway is boxoffice's public HTTP API (gin): joining an event's
// waiting room, the queue position with an ETA, picking a seat, starting a
// payment with the payment provider, cancelling, the seat map, the event
// list and ranking, the admin API, and (for development) dev tokens. Its
// paths are a public contract (docs/openapi.yaml). Every state change
// runs one Lua script of the booking engine. A join answers once Redis has it: its booking_request
// is in the outbox and the background relay publishes it to Kafka (the
// safety net sweeps what the relay misses). The other Kafka events
// (payment_initiated, booking_cancelled) and RabbitMQ messages
// (slot-released on a cancel from the room, the announcement of an
// immediate admission) are confirmed before the 2xx; a failed publish
// answers 503 and the client retries the idempotent operation.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/obs"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/payment"
	"github.com/boxoffice/boxoffice/pkg/platform"
	"github.com/boxoffice/boxoffice/pkg/ratelimit"
	"github.com/boxoffice/boxoffice/pkg/retry"
	"github.com/boxoffice/boxoffice/pkg/service"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
	"github.com/boxoffice/boxoffice/services/gateway/web"
)

const name = "gateway"

// defaultAdminAddr is the admin listener when ADMIN_ADDR is not set: on
// loopback only, since it has no authentication (see service.Common).
const defaultAdminAddr = "127.0.0.1:9101"

// Config is the gateway's configuration (environment variables).
type Config struct {
	service.Common
	HTTPAddr string `env:"HTTP_ADDR" default:":8080"`
	// JWTSecret signs and verifies bearer tokens (HS256, >= 16 bytes).
	JWTSecret string `env:"JWT_SECRET" required:"true" secret:"true"`
	// DevTokens enables POST /api/auth/dev-token (development only).
	DevTokens   bool          `env:"DEV_TOKENS" default:"false"`
	DevTokenTTL time.Duration `env:"DEV_TOKEN_TTL" default:"24h"`
	// PaymentProviderURL is the sandbox payment provider's base URL.
	PaymentProviderURL string `env:"PAYMENT_PROVIDER_URL" default:"http://127.0.0.1:8083"`
	SandboxAPIKey      string `env:"SANDBOX_API_KEY" default:"sandbox-dev-key" secret:"true"`
	// ProviderBreakerFailures is how many provider calls failing in a row
	// open its circuit breaker (calls then fail fast);
	// ProviderBreakerOpen how long it stays open before probe calls go
	// through; ProviderBreakerProbes how many must succeed to close it.
	ProviderBreakerFailures int           `env:"PROVIDER_BREAKER_FAILURES" default:"5"`
	ProviderBreakerOpen     time.Duration `env:"PROVIDER_BREAKER_OPEN" default:"30s"`
	ProviderBreakerProbes   int           `env:"PROVIDER_BREAKER_PROBES" default:"3"`
	// ProviderBreakerDeclares: the breaker opening declares the provider
	// degraded for the deployment (hold clocks stop, admissions pause) and
	// closing again recovers it (docs/runbook.md "Payment provider outage").
	ProviderBreakerDeclares bool `env:"PROVIDER_BREAKER_DECLARES" default:"true"`
	// ProviderConfirmTimeout: a payment started this long ago whose
	// webhook has not come, with none since, while the provider says the
	// money moved or does not answer, declares the provider degraded;
	// PROVIDER_BREAKER_PROBES answered probes recover it
	// (provider_confirm.go; 0: off).
	ProviderConfirmTimeout time.Duration `env:"PROVIDER_CONFIRM_TIMEOUT" default:"2m"`
	// PublicURL is where users reach the gateway (the provider's return URL).
	PublicURL string `env:"PUBLIC_URL" default:"http://127.0.0.1:8080"`
	// TicketPrice is the amount charged per seat, in cents.
	TicketPrice int64 `env:"TICKET_PRICE_CENTS" default:"5000"`
	// TicketCurrency is the ISO 4217 code recorded with every payment.
	TicketCurrency string `env:"TICKET_CURRENCY" default:"EUR"`
	// DatabaseURL is the ledger's PostgreSQL (pkg/ledger).
	DatabaseURL string `env:"DATABASE_URL" default:"postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable" secret:"true"`
	// RateJoinsPerMinutePerIP and RateRequestsPerSecondPerUser are the
	// abuse limits (abuse.go; 0 = off), shared by every instance in Redis,
	// on by default: docs/security.md, "The default abuse limits", says
	// why these numbers (a venue's shared NAT, a fan's own pace).
	RateJoinsPerMinutePerIP      int `env:"RATE_JOINS_PER_MINUTE_PER_IP" default:"120"`
	RateRequestsPerSecondPerUser int `env:"RATE_REQUESTS_PER_SECOND_PER_USER" default:"10"`
	// TrustedProxies are the CIDRs of the proxies whose X-Forwarded-For
	// names the client (none: the TCP peer is the client).
	TrustedProxies []string `env:"TRUSTED_PROXIES"`
	// ChallengeHMACKey signs the join challenges of events with challenge
	// "pow" (challenge.go); every gateway must have the same. Empty: a key
	// derived from JWT_SECRET.
	ChallengeHMACKey string `env:"CHALLENGE_HMAC_KEY" secret:"true"`
	// ChallengeMaxNumber is the challenge's work: a browser computes half
	// this many SHA-256 hashes on average.
	ChallengeMaxNumber int64 `env:"CHALLENGE_MAX_NUMBER" default:"100000"`
	// ChallengeTTL is how long a challenge may be solved and used.
	ChallengeTTL time.Duration `env:"CHALLENGE_TTL" default:"5m"`
	// AccessCodeHMACKey keys the digests of access codes (codes.go) that
	// the ledger and Redis keep; every gateway must have the same, and a
	// changed key makes every code unknown. Empty: a key derived from
	// JWT_SECRET.
	AccessCodeHMACKey string `env:"ACCESS_CODE_HMAC_KEY" secret:"true"`
	// RateCodeTriesPerMinutePerIP bounds the joins with an access code
	// from one client address (0 = off).
	RateCodeTriesPerMinutePerIP int `env:"RATE_CODE_TRIES_PER_MINUTE_PER_IP" default:"10"`

	// The operators' accounts, sessions and audit trail (docs/operators.md).
	// AdminJWT lets a bearer JWT with the admin role open the admin API
	// (development and bootstrap; turn it off once an admin account exists).
	AdminJWT bool `env:"ADMIN_JWT" default:"true"`
	// OperatorCookieSecure marks the session cookie Secure: "auto" when
	// PUBLIC_URL is https, "true" or "false".
	OperatorCookieSecure string        `env:"OPERATOR_COOKIE_SECURE" default:"auto"`
	OperatorSession      time.Duration `env:"OPERATOR_SESSION_LIFETIME" default:"12h"`
	OperatorSessionIdle  time.Duration `env:"OPERATOR_SESSION_IDLE" default:"1h"`
	// OperatorLockoutAttempts wrong passwords within OperatorLockoutWindow
	// lock an account for the window; OperatorSignInsPerIP failed sign-ins
	// from one address within the window refuse it until the window ends.
	OperatorLockoutAttempts int           `env:"OPERATOR_LOCKOUT_ATTEMPTS" default:"5"`
	OperatorLockoutWindow   time.Duration `env:"OPERATOR_LOCKOUT_WINDOW" default:"15m"`
	OperatorSignInsPerIP    int           `env:"OPERATOR_SIGNIN_FAILURES_PER_IP" default:"20"`
	// AuditSweepInterval is how often operator_action facts that were not
	// published with their action are published.
	AuditSweepInterval time.Duration `env:"AUDIT_SWEEP_INTERVAL" default:"5s"`
	// CancelSweepInterval is how often cancellations of sold tickets
	// left unfinished (seats not released, a refund pending, a fact not
	// published) are carried on (ledger.Canceller), and the facts of
	// seat mark changes Kafka did not take are published
	// (ledger.MarkPublisher), box-office sales sold in Redis whose order
	// did not reach the ledger are recorded (ledger.BoxOfficeSweeper), and
	// the event_created and event_updated facts a request left are
	// published (ledger.EventFactPublisher).
	CancelSweepInterval time.Duration `env:"CANCEL_SWEEP_INTERVAL" default:"5s"`
}

// cookieSecure is whether the session cookie is Secure.
func (c Config) cookieSecure() bool {
	switch c.OperatorCookieSecure {
	case "true":
		return true
	case "false":
		return false
	}
	return strings.HasPrefix(strings.ToLower(c.PublicURL), "https://")
}

// Validate checks what Load cannot (service.LoadFrom calls it).
func (c Config) Validate() error {
	var errs []error
	if c.RateJoinsPerMinutePerIP < 0 || c.RateRequestsPerSecondPerUser < 0 {
		errs = append(errs, errors.New("RATE_JOINS_PER_MINUTE_PER_IP, RATE_REQUESTS_PER_SECOND_PER_USER: must be >= 0"))
	}
	if c.TicketPrice < 0 {
		errs = append(errs, errors.New("TICKET_PRICE_CENTS: must be >= 0"))
	}
	if c.RateCodeTriesPerMinutePerIP < 0 {
		errs = append(errs, errors.New("RATE_CODE_TRIES_PER_MINUTE_PER_IP: must be >= 0"))
	}
	if c.AccessCodeHMACKey != "" && len(c.AccessCodeHMACKey) < 16 {
		errs = append(errs, errors.New("ACCESS_CODE_HMAC_KEY: must be at least 16 bytes"))
	}
	if c.ProviderBreakerFailures < 1 || c.ProviderBreakerProbes < 1 || c.ProviderBreakerOpen <= 0 {
		errs = append(errs, errors.New("PROVIDER_BREAKER_FAILURES, PROVIDER_BREAKER_PROBES: must be >= 1; PROVIDER_BREAKER_OPEN: must be positive"))
	}
	if c.ProviderConfirmTimeout < 0 {
		errs = append(errs, errors.New("PROVIDER_CONFIRM_TIMEOUT: must be >= 0"))
	}
	if c.OperatorCookieSecure != "auto" && c.OperatorCookieSecure != "true" && c.OperatorCookieSecure != "false" {
		errs = append(errs, errors.New(`OPERATOR_COOKIE_SECURE: must be "auto", "true" or "false"`))
	}
	if c.OperatorSession <= 0 || c.OperatorSessionIdle <= 0 || c.OperatorLockoutWindow <= 0 || c.AuditSweepInterval <= 0 ||
		c.CancelSweepInterval <= 0 {
		errs = append(errs, errors.New("OPERATOR_SESSION_LIFETIME, OPERATOR_SESSION_IDLE, OPERATOR_LOCKOUT_WINDOW, AUDIT_SWEEP_INTERVAL, CANCEL_SWEEP_INTERVAL: must be > 0"))
	}
	if c.OperatorLockoutAttempts < 1 || c.OperatorSignInsPerIP < 1 {
		errs = append(errs, errors.New("OPERATOR_LOCKOUT_ATTEMPTS, OPERATOR_SIGNIN_FAILURES_PER_IP: must be >= 1"))
	}
	return errors.Join(append(errs, c.Common.Validate())...)
}

// abuseLimits is the abuse-limit policy of the configuration.
func (c Config) abuseLimits() ratelimit.Config {
	return ratelimit.Config{
		JoinsPerMinutePerIP:      c.RateJoinsPerMinutePerIP,
		RequestsPerSecondPerUser: c.RateRequestsPerSecondPerUser,
		CodeTriesPerMinutePerIP:  c.RateCodeTriesPerMinutePerIP,
	}
}

// newConfig is the Config before loading: the defaults the service gives
// in code rather than in a tag (its own ADMIN_ADDR).
func newConfig() *Config { return &Config{Common: service.Common{AdminAddr: defaultAdminAddr}} }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "operators" {
		os.Exit(operatorsCommand(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	service.Main(name, newConfig(), run)
}

func run(ctx context.Context, cfg *Config, log *zap.Logger) error {
	authority, err := auth.New([]byte(cfg.JWTSecret))
	if err != nil {
		return fmt.Errorf("config: JWT_SECRET: %w", err)
	}

	d, err := platform.Dial(ctx, name, cfg.Common, log, platform.Ledger(cfg.DatabaseURL))
	if err != nil {
		return err
	}
	defer d.Close()
	httpapi.AdminErrors(d.Admin)
	// per-event queue, room and seat gauges, read from Redis on each scrape
	d.Admin.Registry().MustRegister(obs.NewEventCollector(d.Store))

	proxies, err := ratelimit.ParseProxies(cfg.TrustedProxies)
	if err != nil {
		return fmt.Errorf("config: TRUSTED_PROXIES: %w", err)
	}
	limits := cfg.abuseLimits()

	challenger, err := newChallengerFrom(*cfg, d.Redis)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}

	relay := admission.NewRelay(d.Announcer)
	sandbox := &payment.SandboxClient{BaseURL: cfg.PaymentProviderURL, APIKey: cfg.SandboxAPIKey}
	// every call to the provider goes through one breaker (provider.go)
	var srv *Server
	breaker := payment.NewBreaker(sandbox, sandbox, payment.BreakerSettings{
		Failures: uint32(cfg.ProviderBreakerFailures), Open: cfg.ProviderBreakerOpen, Probes: uint32(cfg.ProviderBreakerProbes),
		OnChange: func(open bool) {
			log.Warn("payment provider breaker", zap.Bool("open", open))
			if cfg.ProviderBreakerDeclares && srv != nil {
				srv.onBreaker(open)
			}
		}})
	srv = &Server{
		Store:       d.Store,
		Redis:       d.Redis,
		Prefix:      cfg.RedisPrefix,
		Announcer:   d.Announcer,
		Relay:       relay,
		Kafka:       d.Kafka,
		Provider:    breaker,
		Refunds:     breaker,
		Auth:        authority,
		DevTokens:   cfg.DevTokens,
		DevTokenTTL: cfg.DevTokenTTL,
		PublicURL:   cfg.PublicURL,
		TicketPrice: cfg.TicketPrice,
		Currency:    cfg.TicketCurrency,
		Ledger:      d.Ledger,
		Log:         log,
		Metrics:     httpapi.NewMetrics(d.Admin.Registry()),
		Web:         web.Register,
		Limits:      limits,
		Proxies:     proxies,
		Pass:        d.Pass,
		PassKeys:    d.PassKeys,
		Challenger:  challenger,
		CodeKey:     cfg.codeKey(),
	}
	if cfg.DevTokens {
		log.Warn("DEV_TOKENS is on: anyone can mint tokens at POST /api/auth/dev-token; never enable it in production")
	}
	// the operators: accounts, sessions, tokens, the audit trail
	srv.Operators = operators.New(d.Ledger.Pool(), d.Redis, cfg.RedisPrefix, operators.WithLockout(operators.Lockout{
		Attempts: cfg.OperatorLockoutAttempts, Window: cfg.OperatorLockoutWindow, PerIP: cfg.OperatorSignInsPerIP}))
	srv.Sessions = operators.NewSessions(srv.Operators, operators.SessionConfig{Lifetime: cfg.OperatorSession,
		IdleTimeout: cfg.OperatorSessionIdle, Secure: cfg.cookieSecure()})
	defer srv.Sessions.Close()
	srv.AuditPublisher = &operators.Publisher{Store: srv.Operators, Kafka: d.Kafka, Log: log,
		Metrics: operators.NewMetrics(d.Admin.Registry())}
	srv.NoAdminJWT = !cfg.AdminJWT
	srv.BoxOfficeMetrics = ledger.NewBoxOfficeMetrics(d.Admin.Registry())
	if cfg.AdminJWT {
		log.Info("ADMIN_JWT is on: a bearer JWT with the admin role opens the admin API (set ADMIN_JWT=false once admin accounts exist)")
	}
	httpSrv := srv.FastServer()
	confirms := func(context.Context) error { return nil }
	if cfg.ProviderConfirmTimeout > 0 {
		w := srv.confirmWatch(d.Ledger, sandbox.Status, cfg.ProviderConfirmTimeout, cfg.ProviderBreakerProbes, breaker.Open)
		confirms = func(ctx context.Context) error {
			return retry.Every(ctx, confirmInterval(cfg.ProviderConfirmTimeout), log, "payment provider confirmations", w.Check)
		}
	}
	// an open breaker is probed on its own, not only by fans' payments
	probes := func(ctx context.Context) error {
		return retry.Every(ctx, max(cfg.ProviderBreakerOpen/3, 100*time.Millisecond), log, "payment provider probes",
			func(ctx context.Context) (int, error) { return 0, probeBreaker(ctx, breaker, sandbox.Status) })
	}
	ln, err := httpapi.Listen(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	return service.RunAll(ctx,
		d.Admin.Run,
		confirms,
		probes,
		func(ctx context.Context) error { return srv.AuditPublisher.Run(ctx, cfg.AuditSweepInterval) },
		func(ctx context.Context) error { return srv.canceller().Run(ctx, cfg.CancelSweepInterval) },
		func(ctx context.Context) error { return srv.markPublisher().Run(ctx, cfg.CancelSweepInterval) },
		func(ctx context.Context) error { return srv.allocationSweeper().Run(ctx, cfg.CancelSweepInterval) },
		func(ctx context.Context) error { return srv.phasePublisher().Run(ctx, cfg.CancelSweepInterval) },
		func(ctx context.Context) error { return srv.boxOfficeSweeper().Run(ctx, cfg.CancelSweepInterval) },
		func(ctx context.Context) error { return srv.eventFacts().Run(ctx, cfg.CancelSweepInterval) },
		func(ctx context.Context) error {
			return retry.Every(ctx, ScheduleInterval, log, "phase schedules", srv.applySchedules)
		},
		func(ctx context.Context) error {
			return retry.Every(ctx, admissionLogInterval, log, "admission log facts", srv.publishAdmissionLogs)
		},
		func(ctx context.Context) error {
			err := fastserver.Serve(ctx, httpSrv, ln, cfg.ShutdownTimeout)
			srv.closeReceipts()
			// the requests are answered: publish what the relay holds
			// before Kafka is closed (what it cannot, the sweep will)
			cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
			defer cancel()
			if cerr := relay.Close(cctx); cerr != nil {
				log.Warn("relay not drained at shutdown; the outbox sweep publishes the rest", zap.Error(cerr))
			}
			return err
		},
	)
}
