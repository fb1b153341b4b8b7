// Command timeout-consumer ends the holds whose time is up. It consumes
// timeout-queue, where each admitted user's delayed timeout message arrives
// at the hold's deadline, and runs HandleTimeout (pkg/admission.
// TimeoutHandler): a released hold publishes slot-released (reason timeout)
// so the next user is promoted, an expired notification and Kafka
// booking_expired; a hold in payment gets its grace period by a new delayed
// message. Every publish is confirmed before the message is acked;
// duplicates and late messages change nothing.
package main

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/admission"
	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/platform"
	"github.com/boxoffice/boxoffice/pkg/service"
)

const name = "timeout-consumer"

// defaultAdminAddr is the admin listener when ADMIN_ADDR is not set: on
// loopback only, since it has no authentication (see service.Common).
const defaultAdminAddr = "127.0.0.1:9106"

// Config is the service's configuration (environment variables).
type Config struct {
	service.Common
	// Workers is the number of timeout messages handled at once.
	Workers int `env:"WORKERS" default:"8"`
	// MaxRetries is how often a failing message is retried before it is
	// dead-lettered.
	MaxRetries int `env:"MAX_RETRIES" default:"5"`
}

// Validate checks what Load cannot (service.LoadFrom calls it).
func (c Config) Validate() error {
	var errs []error
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
	d, err := platform.Dial(ctx, name, cfg.Common, log)
	if err != nil {
		return err
	}
	defer d.Close()

	h := admission.NewTimeoutHandler(d.Store, d.Announcer, log)

	return service.RunAll(ctx,
		d.Admin.Run,
		func(ctx context.Context) error {
			return d.Consumer.Consume(ctx, amqpx.TimeoutQueue, h.Handle,
				amqpx.ConsumeOptions{Workers: cfg.Workers, MaxRetries: cfg.MaxRetries, DrainTimeout: cfg.ShutdownTimeout})
		},
	)
}
