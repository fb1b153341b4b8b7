// Command popularity keeps the ranking of concerts by completed bookings
// (seed 003): a Kafka consumer group on booking_completed adds one to the
// concert's score in Redis per booking, counting each message id once
// (pkg/popularity). The gateway reads the ranking. It also runs the
// per-sale report consumer (pkg/report, consumer group REPORT_GROUP over
// every topic), read by GET /api/admin/events/{id}/report.
package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/popularity"
	"github.com/boxoffice/boxoffice/pkg/report"
	"github.com/boxoffice/boxoffice/pkg/service"
)

const name = "popularity"

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

func main() { service.Main(name, run) }

func run(ctx context.Context, log *zap.Logger) error {
	cfg := Config{Common: service.Common{AdminAddr: service.DefaultAdminAddr(name)}}
	if err := service.Load(&cfg); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	log.Info("config", service.Fields(cfg)...)

	admin := service.NewAdminFor(cfg.Common, log, nil)
	if err := admin.Listen(); err != nil {
		return err
	}
	rdb, err := service.NewRedis(cfg.Common)
	if err != nil {
		return err
	}
	defer rdb.Close()
	admin.AddCheck("redis", service.RedisCheck(rdb))
	admin.AddCheck("kafka", func(ctx context.Context) error {
		var last error
		for _, a := range cfg.KafkaBrokers {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", a)
			if err == nil {
				return conn.Close()
			}
			last = err
		}
		return last
	})

	c := popularity.NewConsumer(popularity.Config{Brokers: cfg.KafkaBrokers, GroupID: cfg.GroupID,
		Prefix: cfg.RedisPrefix, SeenTTL: cfg.SeenTTL, Kafka: events.ClientConfigFrom(cfg.Common)}, rdb, log)
	runs := []func(context.Context) error{admin.Run, c.Run}
	if cfg.ReportGroup != "off" {
		runs = append(runs, report.NewConsumer(report.Config{Brokers: cfg.KafkaBrokers, GroupID: cfg.ReportGroup,
			Prefix: cfg.RedisPrefix, SeenTTL: cfg.SeenTTL, Kafka: events.ClientConfigFrom(cfg.Common)}, rdb, log).Run)
	}
	return service.RunAll(ctx, runs...)
}
