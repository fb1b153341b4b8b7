// Command notifier pushes booking news to browsers over WebSocket:
// GET /ws?event_id=…&token=<JWT> (or the token as a "bearer.<jwt>"
// subprotocol). It sends the user's current state on connect, delivers the
// notifications of the RabbitMQ notifications fanout (each instance binds
// its own exclusive queue and serves its own connections), broadcasts one
// position update per event per tick, and reports connected users as
// present so abandonment does not drop them. docs/notifier.md is the
// protocol.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice/pkg/amqpx"
	"github.com/boxoffice/boxoffice/pkg/auth"
	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/service"
	"github.com/boxoffice/boxoffice/services/notifier/internal/notifier"
	"go.uber.org/zap"
)

const name = "notifier"

// Config is the service's configuration (environment variables).
type Config struct {
	service.Common
	HTTPAddr  string `env:"HTTP_ADDR" default:":8082"`
	JWTSecret string `env:"JWT_SECRET" required:"true" secret:"true"`
	// PositionInterval is the position broadcast tick.
	PositionInterval time.Duration `env:"POSITION_INTERVAL" default:"2s"`
	// PresenceInterval is how often connected users are marked present;
	// keep it well below every event's abandonment timeout.
	PresenceInterval time.Duration `env:"PRESENCE_INTERVAL" default:"15s"`
	PingInterval     time.Duration `env:"PING_INTERVAL" default:"20s"`
	PingTimeout      time.Duration `env:"PING_TIMEOUT" default:"10s"`
	WriteTimeout     time.Duration `env:"WRITE_TIMEOUT" default:"10s"`
	// SendQueue is how many messages a connection may fall behind before
	// it is dropped as a slow client.
	SendQueue int `env:"SEND_QUEUE" default:"32"`
	// MaxConnections caps the instance's WebSocket connections (0: nine
	// tenths of the file limit); MaxPerUser caps one user's connections to
	// one event and MaxPerIP one client address's (negative: no cap).
	MaxConnections int      `env:"MAX_CONNECTIONS" default:"0"`
	MaxPerUser     int      `env:"MAX_CONNECTIONS_PER_USER" default:"5"`
	MaxPerIP       int      `env:"MAX_CONNECTIONS_PER_IP" default:"500"`
	AllowedOrigins []string `env:"ALLOWED_ORIGINS" default:"*"`
}

func main() { service.Main(name, run) }

func run(ctx context.Context, log *zap.Logger) error {
	cfg := Config{Common: service.Common{AdminAddr: service.DefaultAdminAddr(name)}}
	if err := service.Load(&cfg); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if cfg.PositionInterval <= 0 || cfg.PresenceInterval <= 0 || cfg.SendQueue <= 0 {
		return errors.New("config: POSITION_INTERVAL, PRESENCE_INTERVAL and SEND_QUEUE must be positive")
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = notifier.DefaultMaxConnections()
	}
	log.Info("config", service.Fields(cfg)...)

	authority, err := auth.New([]byte(cfg.JWTSecret))
	if err != nil {
		return fmt.Errorf("config: JWT_SECRET: %w", err)
	}
	admin := service.NewAdminFor(cfg.Common, log, nil)
	if err := admin.Listen(); err != nil {
		return err
	}
	rdb, err := service.NewRedis(cfg.Common)
	if err != nil {
		return err
	}
	defer rdb.Close()
	store := booking.New(rdb, booking.WithPrefix(cfg.RedisPrefix))
	if err := store.Load(ctx); err != nil {
		return err
	}
	admin.AddCheck("redis", service.RedisCheck(rdb))
	admin.AddCheck("rabbitmq", service.TCPCheck(service.AMQPAddrs(cfg.AMQPURL)...))

	srv := notifier.NewServer(notifier.Config{
		PositionInterval: cfg.PositionInterval, PresenceInterval: cfg.PresenceInterval,
		PingInterval: cfg.PingInterval, PingTimeout: cfg.PingTimeout, WriteTimeout: cfg.WriteTimeout,
		SendQueue: cfg.SendQueue, MaxConnections: cfg.MaxConnections, OriginPatterns: cfg.AllowedOrigins,
		MaxPerUser: cfg.MaxPerUser, MaxPerIP: cfg.MaxPerIP,
	}, store, func(tok string) (string, error) {
		id, err := authority.Verify(tok)
		return id.UserID, err
	}, notifier.NewMetrics(admin.Registry()), log)

	consumer := amqpx.NewConsumer(cfg.AMQPURL, append(amqpx.ConfigOptions(cfg.Common),
		amqpx.WithLogger(log), amqpx.WithMetrics(amqpx.NewMetrics(admin.Registry())))...)
	httpSrv := service.NewHTTPServer(cfg.HTTPAddr, srv.Handler())
	log.Info("listening", zap.String("http_addr", cfg.HTTPAddr))
	return service.RunAll(ctx,
		admin.Run,
		srv.Run,
		func(ctx context.Context) error {
			// One worker keeps a user's notifications in order. They are
			// best effort to whoever is connected now:
			// never retried, a malformed one is logged and dropped.
			return consumer.Consume(ctx, "", srv.HandleNotification, amqpx.ConsumeOptions{
				BindFanout: amqpx.NotificationsExchange, Workers: 1, Prefetch: 512,
				MaxRetries: -1, DrainTimeout: cfg.ShutdownTimeout})
		},
		func(ctx context.Context) error {
			// WebSocket connections are hijacked and not drained by
			// http.Server.Shutdown; srv.Run closes them with 1001 when ctx ends.
			return service.ServeHTTP(ctx, httpSrv, cfg.ShutdownTimeout)
		},
	)
}
