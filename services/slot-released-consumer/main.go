// Command slot-released-consumer fills the booking rooms. It consumes
// slot-released-queue: on each message it promotes waiting users into the
// event's free capacity (pkg/admission.Promoter), schedules each admitted
// user's delayed timeout, notifies them and publishes user_promoted to
// Kafka, and acks only when all of it is confirmed. A safety-net tick
// promotes every event and re-announces stale outbox entries, so a lost
// message or a crashed instance never stalls a queue. Any number of
// instances may run at once. At the same interval the ledger's safety net
// (pkg/ledger.Restorer) rebuilds from PostgreSQL every event whose Redis
// state is gone and reconciles sold seats.
package main

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/platform"
	"github.com/boxoffice/boxoffice/pkg/service"
)

const name = "slot-released-consumer"

// defaultAdminAddr is the admin listener when ADMIN_ADDR is not set: on
// loopback only, since it has no authentication (see service.Common).
const defaultAdminAddr = "127.0.0.1:9105"

// Config is the service's configuration (environment variables).
type Config struct {
	service.Common
	// SafetyNetInterval is how often every event is promoted and its stale
	// outbox re-announced, whatever the messages did.
	SafetyNetInterval time.Duration `env:"SAFETY_NET_INTERVAL" default:"5s"`
	// ReconcileInterval is how often sold seats are compared between
	// PostgreSQL and Redis (and seats the ledger sold repaired in Redis):
	// a pass reads every sold seat of every event from both, so it runs
	// less often than the safety net's restore check.
	ReconcileInterval time.Duration `env:"RECONCILE_INTERVAL" default:"30s"`
	// OutboxSweepAge is how old an unannounced outbox entry must be before
	// the safety net announces it in place of the instance that wrote it.
	OutboxSweepAge time.Duration `env:"OUTBOX_SWEEP_AGE" default:"30s"`
	// ProviderOutageMax is how long a payment provider outage may stop an
	// event's hold clocks before a promotion restarts them (0: no limit).
	ProviderOutageMax time.Duration `env:"PROVIDER_OUTAGE_MAX" default:"30m"`
	// Workers is the number of slot-released messages handled at once.
	Workers int `env:"WORKERS" default:"4"`
	// MaxRetries is how often a failing message is retried before it is
	// dead-lettered.
	MaxRetries int `env:"MAX_RETRIES" default:"5"`
	// DatabaseURL is the ledger's PostgreSQL (pkg/ledger), the source of
	// rebuilds and reconciliation.
	DatabaseURL string `env:"DATABASE_URL" default:"postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable" secret:"true"`
}

// Validate checks what Load cannot (service.LoadFrom calls it).
func (c Config) Validate() error {
	var errs []error
	if c.SafetyNetInterval <= 0 {
		errs = append(errs, errors.New("SAFETY_NET_INTERVAL: must be positive"))
	}
	if c.ReconcileInterval <= 0 {
		errs = append(errs, errors.New("RECONCILE_INTERVAL: must be positive"))
	}
	if c.ProviderOutageMax < 0 {
		errs = append(errs, errors.New("PROVIDER_OUTAGE_MAX: must not be negative"))
	}
	if c.Workers <= 0 {
		errs = append(errs, errors.New("WORKERS: must be positive"))
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
	restorer := &ledger.Restorer{Ledger: d.Ledger, Store: d.Store, Kafka: d.Kafka, Log: log,
		Metrics: ledger.NewMetrics(d.Admin.Registry()), ReconcileEvery: cfg.ReconcileInterval}

	p := admission.NewPromoter(d.Store, d.Announcer, log, admission.WithSweepAge(cfg.OutboxSweepAge),
		admission.WithMaxOutage(cfg.ProviderOutageMax), admission.WithOutageLedger(d.Ledger))

	return service.RunAll(ctx,
		d.Admin.Run,
		func(ctx context.Context) error {
			return d.Consumer.Consume(ctx, amqpx.SlotReleasedQueue, p.HandleSlotReleased,
				amqpx.ConsumeOptions{Workers: cfg.Workers, MaxRetries: cfg.MaxRetries, DrainTimeout: cfg.ShutdownTimeout})
		},
		func(ctx context.Context) error { return p.RunSafetyNet(ctx, cfg.SafetyNetInterval) },
		func(ctx context.Context) error { return restorer.Run(ctx, cfg.SafetyNetInterval) },
	)
}
