// Command popularity keeps the ranking of concerts by completed bookings:
// a Kafka consumer group on booking_completed adds one to the
// concert's score in Redis per booking, counting each message id once
// (pkg/popularity). The gateway reads the ranking. It also runs the
// per-sale report consumer (pkg/report, consumer group REPORT_GROUP over
// every topic), read by GET /api/admin/events/{id}/report.
package main

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/platform"
	"github.com/boxoffice/boxoffice/pkg/popularity"
	"github.com/boxoffice/boxoffice/pkg/report"
	"github.com/boxoffice/boxoffice/pkg/service"
)

const name = "popularity"

// defaultAdminAddr is the admin listener when ADMIN_ADDR is not set: on
// loopback only, since it has no authentication (see service.Common).
const defaultAdminAddr = "127.0.0.1:9107"

// Config is the service's configuration (environment variables).
type Config struct {
	service.Common
	// GroupID is the Kafka consumer group; instances sharing it split the
	// partitions of booking_completed.
	GroupID string `env:"POPULARITY_GROUP" default:"popularity"`
	// SeenTTL is how long a counted message id is remembered for dedupe.
	SeenTTL time.Duration `env:"POPULARITY_SEEN_TTL" default:"168h"`
	// ReportGroup is the report consumer's group (every topic); "off"
	// disables it.
	ReportGroup string `env:"REPORT_GROUP" default:"report"`
}

// Validate checks what Load cannot (service.LoadFrom calls it).
func (c Config) Validate() error {
	var errs []error
	if c.GroupID == "" || c.ReportGroup == "" {
		errs = append(errs, errors.New("POPULARITY_GROUP, REPORT_GROUP: must not be empty"))
	}
	if c.SeenTTL <= 0 {
		errs = append(errs, errors.New("POPULARITY_SEEN_TTL: must be positive"))
	}
	return errors.Join(append(errs, c.Common.Validate())...)
}

// newConfig is the Config before loading: the defaults the service gives
// in code rather than in a tag (its own ADMIN_ADDR).
func newConfig() *Config { return &Config{Common: service.Common{AdminAddr: defaultAdminAddr}} }

func main() { service.Main(name, newConfig(), run) }

func run(ctx context.Context, cfg *Config, log *zap.Logger) error {
	// Counts into Redis from Kafka consumer groups; publishes nothing.
	d, err := platform.Dial(ctx, name, cfg.Common, log, platform.ReadOnly(platform.Kafka))
	if err != nil {
		return err
	}
	defer d.Close()

	c := popularity.NewConsumer(popularity.Config{Brokers: cfg.KafkaBrokers, GroupID: cfg.GroupID,
		Prefix: cfg.RedisPrefix, SeenTTL: cfg.SeenTTL, Kafka: d.KafkaClient}, d.Redis, log)
	runs := []func(context.Context) error{d.Admin.Run, c.Run}
	if cfg.ReportGroup != "off" {
		runs = append(runs, report.NewConsumer(report.Config{Brokers: cfg.KafkaBrokers, GroupID: cfg.ReportGroup,
			Prefix: cfg.RedisPrefix, SeenTTL: cfg.SeenTTL, Kafka: d.KafkaClient}, d.Redis, log).Run)
	}
	return service.RunAll(ctx, runs...)
}
