// Command payment-webhook receives the payment provider's webhooks:
// POST /api/booking/payment/success and /failure. The signature in
// X-Boxoffice-Signature is verified over the raw body before anything else
// (401 and nothing changed when it is missing, wrong or outside the
// tolerance window). A success completes the booking (the seat is sold for
// good), publishes slot-released (reason payment_success), Kafka
// booking_completed and a booking_completed notification; a failure
// releases the hold and publishes slot-released (payment_failure), Kafka
// payment_failed and a payment_failed notification. It answers 2xx only
// after Redis is updated and every publish is confirmed; otherwise 5xx, so
// the provider retries. Duplicates are 2xx and change nothing (their
// idempotent events are published again, with the same ids). A success
// for a hold already released is never a sale: it is published as Kafka
// payment_late for a refund and answered 200 so the provider stops. The
// order and its facts are written to the ledger before they are
// published; a sweep on a tick publishes the facts of orders whose
// webhook never did (Kafka down for longer than the provider retried).
package main

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/platform"
	"github.com/boxoffice/boxoffice/pkg/service"
)

const name = "payment-webhook"

// defaultAdminAddr is the admin listener when ADMIN_ADDR is not set: on
// loopback only, since it has no authentication (see service.Common).
const defaultAdminAddr = "127.0.0.1:9102"

// Config is the service's configuration (environment variables).
type Config struct {
	service.Common
	HTTPAddr string `env:"HTTP_ADDR" default:":8081"`
	// WebhookSecret is the HMAC key shared with the payment provider.
	WebhookSecret string `env:"WEBHOOK_SECRET" required:"true" secret:"true"`
	// WebhookTolerance is how far a signature's timestamp may be from now.
	WebhookTolerance time.Duration `env:"WEBHOOK_TOLERANCE" default:"5m"`
	// DatabaseURL is the ledger's PostgreSQL (pkg/ledger).
	DatabaseURL string `env:"DATABASE_URL" default:"postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable" secret:"true"`
	// OrderFactSweepInterval is how often the facts of orders and failed
	// payments that no webhook got published (Kafka down for longer than
	// the provider retried) are published (ledger.OrderPublisher).
	OrderFactSweepInterval time.Duration `env:"ORDER_FACT_SWEEP_INTERVAL" default:"5s"`
	// OrderFactSweepAge is how long an order's (a failure's) facts are left to its
	// webhook and the provider's retries before the sweep publishes them.
	OrderFactSweepAge time.Duration `env:"ORDER_FACT_SWEEP_AGE" default:"30s"`
}

// Validate checks what Load cannot (service.LoadFrom calls it).
func (c Config) Validate() error {
	var errs []error
	if len(c.WebhookSecret) < 16 {
		errs = append(errs, errors.New("WEBHOOK_SECRET: must be at least 16 bytes"))
	}
	if c.WebhookTolerance <= 0 {
		errs = append(errs, errors.New("WEBHOOK_TOLERANCE: must be positive"))
	}
	if c.OrderFactSweepInterval <= 0 {
		errs = append(errs, errors.New("ORDER_FACT_SWEEP_INTERVAL: must be positive"))
	}
	if c.OrderFactSweepAge <= 0 {
		errs = append(errs, errors.New("ORDER_FACT_SWEEP_AGE: must be positive"))
	}
	return errors.Join(append(errs, c.Common.Validate())...)
}

// newConfig is the Config before loading: the defaults the service gives
// in code rather than in a tag (its own ADMIN_ADDR).
func newConfig() *Config { return &Config{Common: service.Common{AdminAddr: defaultAdminAddr}} }

func main() { service.Main(name, newConfig(), run) }

func run(ctx context.Context, cfg *Config, log *zap.Logger) error {
	d, err := platform.Dial(ctx, name, cfg.Common, log, platform.Ledger(cfg.DatabaseURL))
	if err != nil {
		return err
	}
	defer d.Close()
	httpapi.AdminErrors(d.Admin)
	wh := &Webhooks{
		Store: d.Store, Announcer: d.Announcer, Kafka: d.Kafka,
		Secret: []byte(cfg.WebhookSecret), Tolerance: cfg.WebhookTolerance,
		Log: log, Metrics: httpapi.NewMetrics(d.Admin.Registry()), Outcomes: NewOutcomes(d.Admin.Registry()),
		Ledger: d.Ledger, Now: d.Now,
	}
	// the facts of orders whose webhooks never got them published: every
	// replica sweeps, each takes rows the others do not hold
	facts := &ledger.OrderPublisher{Ledger: d.Ledger, Kafka: d.Kafka, Log: log, Age: cfg.OrderFactSweepAge,
		Metrics: ledger.NewOrderFactMetrics(d.Admin.Registry())}
	srv := service.NewHTTPServer(cfg.HTTPAddr, wh.Handler())
	ln, err := httpapi.Listen(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	return service.RunAll(ctx, d.Admin.Run, func(ctx context.Context) error {
		return service.Serve(ctx, srv, ln, cfg.ShutdownTimeout)
	}, func(ctx context.Context) error { return facts.Run(ctx, cfg.OrderFactSweepInterval) })
}
