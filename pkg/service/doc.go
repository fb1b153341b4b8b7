// Package service is the process around a boxoffice service: its
// configuration, filled from environment variables by
// github.com/caarlos0/env ([Main], [LoadConfig], [Load], [Common]), checked by each
// Config's Validate and logged with secrets masked ([Fields]); a zap logger
// ([NewLogger]); a Redis client for one node or a cluster ([NewRedis]); the
// admin listener with /metrics, /healthz and /readyz ([NewAdmin],
// [TCPCheck]); net/http servers with the project's limits
// ([NewHTTPServer]); and the skeleton ([Main], [RunAll], [Serve]) that
// turns SIGINT and SIGTERM into a cancelled context and a graceful, bounded
// shutdown. Request ids live in pkg/requestid, HTTP metrics in pkg/httpapi,
// and the wiring of brokers and stores in pkg/platform.
//
// A service's main is thin:
//
//	func main() {
//		// the default admin port; Main loads the rest, runs cfg.Validate, logs cfg
//		service.Main("gateway", &Config{Common: service.Common{AdminAddr: "127.0.0.1:9101"}}, run)
//	}
//
//	func run(ctx context.Context, cfg *Config, log *zap.Logger) error {
//		...
//		ln, err := httpapi.Listen(cfg.HTTPAddr) // bound before /readyz can answer
//		if err != nil {
//			return err
//		}
//		return service.RunAll(ctx, admin.Run, func(ctx context.Context) error {
//			return service.Serve(ctx, srv, ln, cfg.ShutdownTimeout)
//		})
//	}
package service
