// Command payment-sandbox is a stand-in payment provider that behaves like
// a real one: the gateway creates a payment (POST /v1/payments, idempotent
// by payment_id, authenticated by a shared API key) and sends the user to
// its hosted checkout page (GET /pay/{id}) with pay and decline buttons.
// The outcome is recorded, the user is redirected to the return URL, and
// the signed webhook (X-Boxoffice-Signature) is delivered to the
// payment-webhook service in the background, retried with exponential
// backoff until it gets a 2xx (bounded).
//
// Hazard: payments and outstanding deliveries are kept in memory only; a
// restart forgets them (a real provider persists them). Development and
// tests only.
package main

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/service"
)

const name = "payment-sandbox"

// defaultAdminAddr is the admin listener when ADMIN_ADDR is not set: on
// loopback only, since it has no authentication (see service.Common).
const defaultAdminAddr = "127.0.0.1:9104"

// Config is the service's configuration (environment variables).
type Config struct {
	HTTPAddr  string `env:"HTTP_ADDR" default:":8083"`
	AdminAddr string `env:"ADMIN_ADDR" required:"true"`
	// PublicURL is where browsers reach this service (the checkout URLs).
	PublicURL string `env:"PUBLIC_URL" default:"http://127.0.0.1:8083"`
	// APIKey authenticates the gateway's POST /v1/payments.
	APIKey string `env:"SANDBOX_API_KEY" default:"sandbox-dev-key" secret:"true"`
	// WebhookURL is the payment-webhook service's base URL.
	WebhookURL    string `env:"WEBHOOK_URL" default:"http://127.0.0.1:8081"`
	WebhookSecret string `env:"WEBHOOK_SECRET" required:"true" secret:"true"`
	// Delivery retries: exponential from RetryMin to RetryMax, at most
	// RetryAttempts tries per webhook.
	RetryMin        time.Duration `env:"WEBHOOK_RETRY_MIN" default:"200ms"`
	RetryMax        time.Duration `env:"WEBHOOK_RETRY_MAX" default:"30s"`
	RetryAttempts   int           `env:"WEBHOOK_RETRY_ATTEMPTS" default:"20"`
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" default:"15s"`
}

// Validate checks what Load cannot (service.LoadFrom calls it).
func (c Config) Validate() error {
	var errs []error
	if c.RetryAttempts < 1 {
		errs = append(errs, errors.New("WEBHOOK_RETRY_ATTEMPTS: must be at least 1"))
	}
	if c.RetryMin <= 0 || c.RetryMax < c.RetryMin {
		errs = append(errs, errors.New("WEBHOOK_RETRY_MIN, WEBHOOK_RETRY_MAX: need 0 < WEBHOOK_RETRY_MIN <= WEBHOOK_RETRY_MAX"))
	}
	return errors.Join(errs...)
}

// newConfig is the Config before loading: the defaults the service gives
// in code rather than in a tag (its own ADMIN_ADDR).
func newConfig() *Config { return &Config{AdminAddr: defaultAdminAddr} }

func main() { service.Main(name, newConfig(), run) }

func run(ctx context.Context, cfg *Config, log *zap.Logger) error {
	admin := service.NewAdmin(cfg.AdminAddr, log, nil) // no pprof: a development sandbox
	httpapi.AdminErrors(admin)
	if err := admin.Listen(); err != nil {
		return err
	}
	sb := New(Options{
		APIKey: cfg.APIKey, PublicURL: cfg.PublicURL, WebhookURL: cfg.WebhookURL,
		Secret: []byte(cfg.WebhookSecret), RetryMin: cfg.RetryMin, RetryMax: cfg.RetryMax,
		RetryAttempts: cfg.RetryAttempts, Log: log, Metrics: httpapi.NewMetrics(admin.Registry()),
	})
	defer sb.Close()
	srv := service.NewHTTPServer(cfg.HTTPAddr, sb.Handler())
	ln, err := httpapi.Listen(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	return service.RunAll(ctx, admin.Run, func(ctx context.Context) error {
		return service.Serve(ctx, srv, ln, cfg.ShutdownTimeout)
	})
}
