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
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/platform"
	"github.com/boxoffice/boxoffice/pkg/service"
	"github.com/boxoffice/boxoffice/services/notifier/internal/notifier"
	"go.uber.org/zap"
)

const name = "notifier"

// defaultAdminAddr is the admin listener when ADMIN_ADDR is not set: on
// loopback only, since it has no authentication (see service.Common).
const defaultAdminAddr = "127.0.0.1:9103"

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

// Validate checks what Load cannot (service.LoadFrom calls it).
func (c Config) Validate() error {
	var errs []error
	if c.PositionInterval <= 0 || c.PresenceInterval <= 0 || c.SendQueue <= 0 {
		errs = append(errs, errors.New("POSITION_INTERVAL, PRESENCE_INTERVAL, SEND_QUEUE: must be positive"))
	}
	return errors.Join(append(errs, c.Common.Validate())...)
}

// newConfig is the Config before loading: the defaults the service gives
// in code rather than in a tag (its own ADMIN_ADDR).
func newConfig() *Config { return &Config{Common: service.Common{AdminAddr: defaultAdminAddr}} }

func main() { service.Main(name, newConfig(), run) }

func run(ctx context.Context, cfg *Config, log *zap.Logger) error {
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = notifier.DefaultMaxConnections()
		log.Info("connection cap from the file limit", zap.Int("max_connections", cfg.MaxConnections))
	}

	authority, err := auth.New([]byte(cfg.JWTSecret))
	if err != nil {
		return fmt.Errorf("config: JWT_SECRET: %w", err)
	}
	// Reads bookings and consumes notifications; publishes nothing.
	d, err := platform.Dial(ctx, name, cfg.Common, log, platform.ReadOnly(platform.Store, platform.RabbitMQ))
	if err != nil {
		return err
	}
	defer d.Close()
	httpapi.AdminErrors(d.Admin)

	srv := notifier.NewServer(notifier.Config{
		PositionInterval: cfg.PositionInterval, PresenceInterval: cfg.PresenceInterval,
		PingInterval: cfg.PingInterval, PingTimeout: cfg.PingTimeout, WriteTimeout: cfg.WriteTimeout,
		SendQueue: cfg.SendQueue, MaxConnections: cfg.MaxConnections, OriginPatterns: cfg.AllowedOrigins,
		MaxPerUser: cfg.MaxPerUser, MaxPerIP: cfg.MaxPerIP,
	}, d.Store, func(tok string) (string, error) {
		id, err := authority.Verify(tok)
		return id.UserID, err
	}, notifier.NewMetrics(d.Admin.Registry()), log)

	httpSrv := service.NewHTTPServer(cfg.HTTPAddr, srv.Handler())
	ln, err := httpapi.Listen(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	log.Info("listening", zap.String("http_addr", cfg.HTTPAddr))
	return service.RunAll(ctx,
		d.Admin.Run,
		srv.Run,
		func(ctx context.Context) error {
			// One worker keeps a user's notifications in order. They are
			// best effort to whoever is connected now:
			// never retried, a malformed one is logged and dropped.
			return d.Consumer.Consume(ctx, "", srv.HandleNotification, amqpx.ConsumeOptions{
				BindFanout: amqpx.NotificationsExchange, Workers: 1, Prefetch: 512,
				MaxRetries: -1, DrainTimeout: cfg.ShutdownTimeout})
		},
		func(ctx context.Context) error {
			// WebSocket connections are hijacked and not drained by
			// http.Server.Shutdown; srv.Run closes them with 1001 when ctx ends.
			return service.Serve(ctx, httpSrv, ln, cfg.ShutdownTimeout)
		},
	)
}
