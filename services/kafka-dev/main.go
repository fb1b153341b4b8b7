// Command kafka-dev is an embedded Kafka broker for development: franz-go's
// kfake, which speaks the real Kafka wire protocol, as a small binary that
// `make run` starts before the services. It listens on 127.0.0.1:9092 (env
// KAFKA_DEV_ADDR, or flag -port), creates every topic of package events at
// start, and stops on SIGINT or SIGTERM.
//
// It keeps all data in memory only: a restart loses every topic's messages
// and every consumer group's offsets. It is for development and tests;
// production and docker-compose use a real Kafka cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"github.com/boxoffice/boxoffice/pkg/events"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log, err := zap.NewProduction()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafka-dev: logger:", err)
		os.Exit(1)
	}
	defer log.Sync()
	if err := run(ctx, log, os.Args[1:], os.Getenv); err != nil {
		log.Error("kafka-dev stopped", zap.Error(err))
		os.Exit(1)
	}
}

// config is everything kafka-dev can be told.
type config struct {
	Port       int // on 127.0.0.1: kfake binds loopback only
	Partitions int // per topic
}

const defaultAddr = "127.0.0.1:9092"

// parseConfig reads KAFKA_DEV_ADDR (host:port, host must be loopback), then
// the flags, which win.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	addr := getenv("KAFKA_DEV_ADDR")
	if addr == "" {
		addr = defaultAddr
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return config{}, fmt.Errorf("KAFKA_DEV_ADDR %q: %w", addr, err)
	}
	if host != "127.0.0.1" && host != "localhost" && host != "" {
		return config{}, fmt.Errorf("KAFKA_DEV_ADDR %q: kfake listens on 127.0.0.1 only", addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return config{}, fmt.Errorf("KAFKA_DEV_ADDR %q: bad port", addr)
	}
	cfg := config{Port: port, Partitions: 3}
	fs := flag.NewFlagSet("kafka-dev", flag.ContinueOnError)
	fs.IntVar(&cfg.Port, "port", cfg.Port, "port to listen on, on 127.0.0.1 (default from KAFKA_DEV_ADDR, else 9092)")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of each topic")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if cfg.Port <= 0 || cfg.Port > 65535 {
		return config{}, fmt.Errorf("port %d out of range", cfg.Port)
	}
	if cfg.Partitions < 1 {
		return config{}, errors.New("partitions must be at least 1")
	}
	return cfg, nil
}

// run starts the broker and serves until ctx is cancelled.
func run(ctx context.Context, log *zap.Logger, args []string, getenv func(string) string) error {
	cfg, err := parseConfig(args, getenv)
	if err != nil {
		return err
	}
	log.Info("starting", zap.Int("port", cfg.Port), zap.Int("partitions", cfg.Partitions),
		zap.Strings("topics", events.AllTopics))
	c, err := kfake.NewCluster(
		kfake.Ports(cfg.Port), // one broker
		kfake.SeedTopics(int32(cfg.Partitions), events.AllTopics...),
		kfake.WithLogger(zapLogger{log.Named("kfake")}),
	)
	if err != nil {
		return fmt.Errorf("start kfake on port %d: %w", cfg.Port, err)
	}
	defer c.Close()
	log.Info("listening", zap.Strings("brokers", c.ListenAddrs()))
	<-ctx.Done()
	log.Info("stopping: data is in memory only and is discarded")
	return nil
}

// zapLogger passes kfake's warnings and errors to zap; its info and debug
// logs (every request) are dropped.
type zapLogger struct{ log *zap.Logger }

func (z zapLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	switch level {
	case kfake.LogLevelError:
		z.log.Error("kfake", zap.String("msg", fmt.Sprintf(format, args...)))
	case kfake.LogLevelWarn:
		z.log.Warn("kfake", zap.String("msg", fmt.Sprintf(format, args...)))
	}
}
